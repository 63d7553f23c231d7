package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/udrain/udrain"
)

// ErrAttemptsExhausted is the WaitError.Cause when Options.MaxAttempts
// attempts have failed.
var ErrAttemptsExhausted = errors.New("attempts exhausted")

// optionErrorf returns a *udrain.ConfigError about the Options field
// called field.
func optionErrorf(field, format string, args ...any) error {
	return &udrain.ConfigError{Field: "bootstrap.Options." + field, Problem: fmt.Sprintf(format, args...)}
}

// WaitError is returned by WaitForServer when the server did not become
// reachable. Use errors.As to get it; errors.Is sees both why the wait stopped
// (Cause) and the last attempt's error (Last), so
// errors.Is(err, context.DeadlineExceeded) and errors.As(err, **net.DNSError)
// both work. No field holds credentials from the target or the headers.
type WaitError struct {
	// Target is the target URL with credentials redacted.
	Target string
	// Class is the class of the last attempt that completed; ClassNone if the
	// wait ended before any attempt completed.
	Class FailureClass
	// StatusCode is the HTTP status of the last completed attempt, if it got
	// one (always set for ClassHTTPStatus).
	StatusCode int
	// Attempts is the number of attempts started, including one interrupted
	// by cancellation.
	Attempts int
	// Elapsed is the time from the start of WaitForServer until it gave up.
	Elapsed time.Duration
	// Last is the error of the last completed attempt, with credentials
	// redacted; nil if none completed.
	Last error
	// Cause says why waiting stopped: context.Canceled,
	// context.DeadlineExceeded (the context's deadline or Options.Timeout; also
	// when the next attempt could not start before it), or
	// ErrAttemptsExhausted.
	Cause error
}

// Error says what was waited for, why waiting stopped, how long it took, the
// last failure and a hint on what to check.
func (e *WaitError) Error() string {
	return e.Describe(nil)
}

// Describe is Error with the setting its hint names (FailureClass.Setting)
// named by name, e.g. a command line's flag; nil keeps the Go name.
func (e *WaitError) Describe(name func(setting string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %s not reachable: %s after %d %s in %s", e.Target, e.stopReason(), e.Attempts, plural(e.Attempts, "attempt", "attempts"), e.Elapsed.Round(time.Millisecond))
	if e.Class == ClassNone {
		b.WriteString("; no attempt completed")
		return b.String()
	}
	fmt.Fprintf(&b, "; last failure %s", e.Class)
	if e.Last != nil {
		fmt.Fprintf(&b, ": %v", e.Last)
	}
	if h := e.Class.Advice(name); h != "" {
		fmt.Fprintf(&b, " (%s)", h)
	}
	return b.String()
}

func (e *WaitError) stopReason() string {
	switch {
	case errors.Is(e.Cause, ErrAttemptsExhausted):
		return "gave up"
	case errors.Is(e.Cause, context.DeadlineExceeded):
		return "deadline reached"
	case errors.Is(e.Cause, context.Canceled):
		return "canceled"
	case e.Cause != nil:
		return e.Cause.Error()
	default:
		return "stopped"
	}
}

// Unwrap returns Cause and Last, for errors.Is and errors.As.
func (e *WaitError) Unwrap() []error {
	var errs []error
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	if e.Last != nil {
		errs = append(errs, e.Last)
	}
	return errs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
