package eviction

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/internal/clusterview"
	"github.com/udrain/udrain/kubeclient"
)

// A view with informers of its own (the CLI's case, or a Drainer given no
// Options.Informers) lists and watches for the time of one call, and tells
// an API server that cannot be reached from one that is slow to list.

// ownView lists and watches the cluster (the pods and budgets of
// Options.Namespace only, when set) for the time of the call.
func (d *Drainer) ownView(parent context.Context) (*view, error) {
	w, err := d.startOwnView(parent)
	if err != nil {
		return nil, err
	}
	return w.wait()
}

// ownStart is a view of the Drainer's own informers being listed: what
// its wait learns of the server meanwhile.
type ownStart struct {
	d           *Drainer
	parent      context.Context
	logger      klog.Logger
	v           *view
	starting    *clusterview.Starting
	probed      chan error
	probing     bool
	answered    bool // the probe got an answer
	unreachable error
	lastListErr error
}

// startOwnView makes the view's informers (nodes, pods, PDBs; pods in
// udrain's slim cache when it may) and starts them.
func (d *Drainer) startOwnView(parent context.Context) (*ownStart, error) {
	v := &view{d: d}
	starting, err := clusterview.StartOwn(parent, d.viewConfig(v))
	if err != nil {
		return nil, err
	}
	v.View = starting.View
	return &ownStart{d: d, parent: parent, logger: klog.FromContext(parent), v: v, starting: starting, probed: make(chan error, 1)}, nil
}

// wait waits until the view's informers listed the cluster, and tells a
// server that cannot be reached, or refuses, from one slow to list.
//
// A list that fails on the network is retried by client-go for a long
// time without a word: GETs of /version, without retries, tell an API
// server that cannot be reached (or answers only 5xx or 429) from one that
// is slow to list a large cluster. They start when a list fails or after
// probeAfter without the lists done (a server that answers them costs no
// probe), and stop at the first answer. Lists that still fail after
// ConnectTimeout (a server that answers /version but fails every list
// with a 5xx or 429) end the wait too, with their last error: the
// reflectors would retry them forever.
func (w *ownStart) wait() (*view, error) {
	probeTimer := time.NewTimer(probeDelay(w.d.s.ConnectTimeout))
	defer probeTimer.Stop()
	connectTimer := time.NewTimer(w.d.s.ConnectTimeout)
	defer connectTimer.Stop()
	for {
		select {
		case <-probeTimer.C:
			w.startProbe()
		case ok := <-w.starting.Synced():
			if !ok {
				return w.notSynced()
			}
			nodes, pods, pdbs := w.v.Sizes()
			w.logger.V(4).Info("Listed the cluster", "nodes", nodes, "pods", pods,
				"podDisruptionBudgets", pdbs, "took", time.Since(w.starting.Started()))
			return w.v, nil
		case err := <-w.starting.Problems():
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				go w.v.Stop()
				return nil, &PermissionError{Reason: ReasonForbidden, Err: err}
			}
			w.lastListErr = err
			w.startProbe()
		case err := <-w.probed:
			if err != nil && w.parent.Err() == nil {
				return w.fail(err)
			}
			w.unreachable, w.answered = err, err == nil
		case <-connectTimer.C:
			if w.lastListErr != nil && w.parent.Err() == nil {
				if problem, _ := kubeclient.ServerProblemOf(w.lastListErr); problem != "" {
					return w.fail(w.lastListErr)
				}
			}
		}
	}
}

func (w *ownStart) startProbe() {
	if !w.probing {
		w.probing = true
		go func() {
			w.probed <- w.d.probeUntil(w.starting.Context(), w.starting.Started().Add(w.d.s.ConnectTimeout))
		}()
	}
}

// fail ends the wait for a server that cannot be reached.
func (w *ownStart) fail(err error) (*view, error) {
	go w.v.Stop() // a list in flight may take a while to notice
	if ue := unreachableError(w.d.server(), err, time.Since(w.starting.Started())); ue != nil {
		return nil, ue
	}
	return nil, &RetryError{Reason: ReasonUnreachable, Server: w.d.server(), Problem: kubeclient.ServerUnreachable, Waited: time.Since(w.starting.Started()).Round(time.Millisecond), Err: err}
}

// notSynced ends the wait when the caller's context ended first: a
// deadline that ends the wait for a server that cannot be reached says
// so; a cancel is a cancel.
func (w *ownStart) notSynced() (*view, error) {
	go w.v.Stop()
	if errors.Is(w.parent.Err(), context.DeadlineExceeded) {
		for _, err := range []error{w.unreachable, w.lastListErr} {
			if ue := unreachableError(w.d.server(), err, time.Since(w.starting.Started())); ue != nil {
				return nil, ue
			}
		}
		if w.probing && !w.answered {
			// Neither the lists nor the probe got an answer.
			return nil, &RetryError{Reason: ReasonUnreachable, Server: w.d.server(), Problem: kubeclient.ServerNoAnswer, Waited: time.Since(w.starting.Started()).Round(time.Millisecond), Err: w.parent.Err()}
		}
	}
	return nil, w.parent.Err()
}

// probeAfter is how long a view waits for its lists before it probes the
// API server (if no list failed before), at most: see probeDelay.
const probeAfter = time.Second

// probeDelay is how long a view waits for its lists before it probes the
// API server: probeAfter, or an eighth of a shorter connect timeout, so
// that the probe has most of it to get its answer. With a fixed second of
// a 2 s ConnectTimeout, a loaded machine (the race detector on one CPU,
// eleven calls at once) did not see a 429's answer to the probe within the
// second left, and the server was said not to answer at all.
func probeDelay(connect time.Duration) time.Duration {
	return min(probeAfter, connect/8)
}

// probeUntil asks the API server for its version, once a second, until it
// answers (nil), the deadline passes or ctx ends (the last error).
func (d *Drainer) probeUntil(ctx context.Context, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		err := d.probe(ctx)
		if err == nil || ctx.Err() != nil || !time.Now().Add(time.Second).Before(deadline) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("The API server does not answer; retrying", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// probe asks the API server for its version: nil when it answers, even
// with an error status that says nothing of its health (401, 403, 404);
// the error when it cannot be reached, does not answer within
// ConnectTimeout (or ctx's deadline), or answers 5xx or 429 (it is up,
// but does not serve).
func (d *Drainer) probe(ctx context.Context) error {
	rc := d.client.Discovery().RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() {
		return nil // a fake clientset: nothing to reach
	}
	ctx, cancel := context.WithTimeout(ctx, d.s.ConnectTimeout)
	defer cancel()
	err := rc.Get().AbsPath("/version").MaxRetries(0).Do(ctx).Error()
	if problem, _ := kubeclient.ServerProblemOf(err); problem == "" {
		return nil
	}
	return err
}

// server returns scheme://host of the API server the Drainer's client
// talks to, or "" (a fake clientset).
func (d *Drainer) server() string {
	rc := d.client.Discovery().RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() {
		return ""
	}
	u := rc.Get().URL()
	if u == nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// bounded runs a request of the Drainer's own (not through a view) within
// ConnectTimeout, and reports an API server that does not serve it as an
// *RetryError (ReasonUnreachable). client-go retries a 429 or 503 with Retry-After by
// itself until the request's context ends, which hides the answer: the
// request gets three quarters of the time, and when it runs out, one
// request that is not retried (probe) says, in the last quarter, whether
// the server throttles or fails rather than not answering.
func (d *Drainer) bounded(ctx context.Context, request func(context.Context) error) error {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, d.s.ConnectTimeout*3/4)
	err := request(rctx)
	cancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	if left := d.s.ConnectTimeout - time.Since(start); errors.Is(err, context.DeadlineExceeded) && left > 0 {
		pctx, cancel := context.WithTimeout(ctx, left)
		if perr := d.probe(pctx); perr != nil {
			if p, _ := kubeclient.ServerProblemOf(perr); p != kubeclient.ServerNoAnswer {
				err = perr
			}
		}
		cancel()
	}
	if ue := unreachableError(d.server(), err, time.Since(start)); ue != nil {
		return ue
	}
	return err
}

// serverOf returns scheme://host of the URL a client-go error names, if
// it names one.
func serverOf(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}
