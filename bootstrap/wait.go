package bootstrap

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/udrain/udrain"
)

// Result describes a successful wait.
type Result struct {
	// Target is the target URL with credentials redacted.
	Target string
	// Attempts is the number of attempts made, the successful one included.
	Attempts int
	// Elapsed is the time from the start of WaitForServer until the server
	// answered.
	Elapsed time.Duration
	// StatusCode is the HTTP status of the successful attempt (0 for tcp).
	StatusCode int
	// RemoteAddr is the address that answered, e.g. the Service's cluster IP
	// and port.
	RemoteAddr string
}

// Attempt describes one attempt, for Options.OnAttempt.
type Attempt struct {
	// Number counts attempts from 1.
	Number int
	// Elapsed is the time from the start of WaitForServer until this
	// attempt ended.
	Elapsed time.Duration
	// Class is ClassNone for the successful attempt, else why it failed.
	Class FailureClass
	// StatusCode is the HTTP status, if the attempt got one.
	StatusCode int
	// Err is the attempt's error with credentials redacted; nil on success.
	Err error
	// NextDelay is how long WaitForServer waits before the next attempt;
	// zero after a success or when it gives up.
	NextDelay time.Duration
}

// WaitForServer returns once target answers, or a *WaitError once the
// context ends, Options.Timeout passes or Options.MaxAttempts attempts have
// failed. Errors about the target or the options are *udrain.ConfigError
// and are returned before any attempt.
//
// The target is an http://, https:// or tcp:// URL. An HTTP target is ready
// when a GET answers with an accepted status (2xx unless Options.StatusCodes
// says otherwise) and a body that passes Options.CheckBody; a TCP target is
// ready when a connection completes. The first attempt is made at once; after
// a failure the next waits for a delay from Options.Backoff.
//
// It logs through the logger in ctx (logr.NewContext, klog.NewContext), and
// not at all without one: the first failure, every change of
// failure class (or HTTP status), every Options.LogEvery attempts while it
// keeps failing, and one line on success. Credentials in the target (user
// info, token-like query values) and header values never appear in logs,
// errors or results.
//
// HTTP requests honour HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the
// environment, as curl does: in a cluster with a proxy, list ".svc" (or the
// cluster domain) in NO_PROXY.
func WaitForServer(ctx context.Context, target string, opts Options) (*Result, error) {
	t, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	s, err := opts.settings(t)
	if err != nil {
		return nil, err
	}
	p, release := newProbe(t, s)
	defer release()
	w := &waiter{target: t, settings: s, probe: p, logger: logr.FromContextOrDiscard(ctx).WithValues("target", t.redacted)}
	return w.run(ctx)
}

// waiter holds the state of one WaitForServer call.
type waiter struct {
	target   *target
	settings *settings
	probe    probe
	logger   logr.Logger

	start time.Time
	// The last completed failure, for the WaitError.
	lastClass  FailureClass
	lastStatus int
	lastErr    error
}

func (w *waiter) run(ctx context.Context) (*Result, error) {
	s := w.settings
	w.start = s.clock.Now()
	deadline, hasDeadline := ctx.Deadline()
	if s.timeout > 0 {
		if d := w.start.Add(s.timeout); !hasDeadline || d.Before(deadline) {
			deadline, hasDeadline = d, true
		}
	}
	// A copy: Step mutates it.
	backoff := s.backoff

	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, w.fail(attempt-1, err)
		}
		attemptTimeout := s.attemptTimeout
		if hasDeadline {
			remaining := deadline.Sub(s.clock.Now())
			if remaining <= 0 {
				return nil, w.fail(attempt-1, context.DeadlineExceeded)
			}
			attemptTimeout = min(attemptTimeout, remaining)
		}
		attemptCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
		out := w.probe(attemptCtx)
		cancel()
		elapsed := s.clock.Since(w.start)

		if out.err == nil {
			return w.succeed(attempt, elapsed, out), nil
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			// Interrupted by the caller: says nothing about the server.
			return nil, w.fail(attempt, ctx.Err())
		}
		if w.lastClass != "" && attemptTimeout < s.attemptTimeout && !s.clock.Now().Before(deadline) &&
			Classify(out.err) == ClassTimeout {
			// The overall deadline cut this attempt short: its timeout
			// says nothing about the server, so the last completed
			// failure (a 503, a refusal) stays the reason given.
			return nil, w.fail(attempt, context.DeadlineExceeded)
		}
		prevClass, prevStatus := w.lastClass, w.lastStatus
		w.lastClass = Classify(out.err)
		w.lastStatus = out.statusCode
		w.lastErr = s.secrets.Error(out.err)

		var next time.Duration
		var stop error
		switch {
		case s.maxAttempts > 0 && attempt >= s.maxAttempts:
			stop = ErrAttemptsExhausted
		case ctx.Err() != nil:
			stop = ctx.Err()
		default:
			next = backoff.Step()
			if hasDeadline {
				next, stop = w.untilLastAttempt(next, deadline)
			}
		}

		changed := attempt == 1 || w.lastClass != prevClass || w.lastStatus != prevStatus
		w.reportFailure(attempt, elapsed, next, changed)
		if stop != nil {
			return nil, w.fail(attempt, stop)
		}

		timer := s.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, w.fail(attempt, ctx.Err())
		case <-timer.C():
		}
	}
}

// untilLastAttempt clips the backoff's delay to the deadline. The backoff
// spaces the attempts; it is no reason to give up early: when its delay
// would reach past the last moment an attempt can still be answered (the
// deadline less the first delay, or less the attempt timeout if shorter),
// the next attempt starts at that moment instead. Once that moment has
// passed, no attempt could be answered: it says so now (DeadlineExceeded)
// rather than sleep until the deadline.
func (w *waiter) untilLastAttempt(next time.Duration, deadline time.Time) (time.Duration, error) {
	s := w.settings
	last := deadline.Add(-min(s.backoff.Duration, s.attemptTimeout))
	now := s.clock.Now()
	switch {
	case !now.Add(next).After(last):
		return next, nil
	case now.Before(last):
		return last.Sub(now), nil
	}
	return 0, context.DeadlineExceeded
}

func (w *waiter) succeed(attempt int, elapsed time.Duration, out outcome) *Result {
	r := &Result{
		Target:     w.target.redacted,
		Attempts:   attempt,
		Elapsed:    elapsed,
		StatusCode: out.statusCode,
		RemoteAddr: out.remoteAddr,
	}
	if f := w.settings.onAttempt; f != nil {
		f(Attempt{Number: attempt, Elapsed: elapsed, StatusCode: out.statusCode})
	}
	kv := []any{"attempts", attempt, "elapsed", elapsed.Round(time.Millisecond), "remoteAddr", out.remoteAddr}
	if out.statusCode != 0 {
		kv = append(kv, "statusCode", out.statusCode)
	}
	w.logger.Info("Server is reachable", kv...)
	return r
}

// reportFailure calls OnAttempt and logs the failure if it is the first, a
// change of class or status, or a periodic one.
func (w *waiter) reportFailure(attempt int, elapsed, next time.Duration, changed bool) {
	s := w.settings
	if f := s.onAttempt; f != nil {
		f(Attempt{Number: attempt, Elapsed: elapsed, Class: w.lastClass, StatusCode: w.lastStatus, Err: w.lastErr, NextDelay: next})
	}
	periodic := s.logEvery > 0 && attempt%s.logEvery == 0
	if !changed && !periodic {
		return
	}
	kv := []any{"attempt", attempt, "class", w.lastClass}
	if w.lastStatus != 0 {
		kv = append(kv, "statusCode", w.lastStatus)
	}
	kv = append(kv, "err", w.lastErr.Error(), "elapsed", elapsed.Round(time.Millisecond))
	if next > 0 {
		kv = append(kv, "nextDelay", next.Round(time.Millisecond))
	}
	if changed {
		kv = append(kv, "hint", w.lastClass.Hint())
		if setting := w.lastClass.Setting(); setting != "" {
			kv = append(kv, udrain.SettingKey, setting)
		}
		w.logger.Info("Server not reachable yet", kv...)
		return
	}
	w.logger.Info("Still waiting for server", kv...)
}

func (w *waiter) fail(attempts int, cause error) *WaitError {
	return &WaitError{
		Target:     w.target.redacted,
		Class:      w.lastClass,
		StatusCode: w.lastStatus,
		Attempts:   attempts,
		Elapsed:    w.settings.clock.Since(w.start),
		Last:       w.lastErr,
		Cause:      cause,
	}
}
