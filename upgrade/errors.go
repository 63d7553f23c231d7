package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// TimeoutError reports a step whose Timeout passed before every node of
// the domain was done.
type TimeoutError struct {
	Domain string
	// Pending are the nodes not yet done, sorted.
	Pending []string
	// Awaited is what the step waited for on each node: "Job complete",
	// "label example.com/done=1.37", ...
	Awaited string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("domain %s: %d node(s) not done (%s) within %s: %s", e.Domain, len(e.Pending), e.Awaited, e.Timeout, strings.Join(e.Pending, ", "))
}

// Unwrap returns context.DeadlineExceeded, as every timeout of the module.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// withTimeout derives from ctx the context of a step's timeout d:
// context.WithTimeout, or, timed on a clock of the caller's (a fake one in
// tests), a context cancelled with context.DeadlineExceeded as its cause
// once d has passed on it.
func withTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if _, real := clk.(clock.RealClock); clk == nil || real {
		return context.WithTimeout(ctx, d)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := clk.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel(context.DeadlineExceeded)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// waitError turns the error of a wait under ctx, derived from parent with
// the step's timeout (withTimeout), into what the step returns: parent's
// own error when the caller cancelled (so errors.Is finds
// context.Canceled), timeout when the step's timeout passed, err
// otherwise.
func waitError(parent, ctx context.Context, err error, timeout *TimeoutError) error {
	if cerr := parent.Err(); cerr != nil {
		return fmt.Errorf("domain %s: waiting for %s on %s: %w", timeout.Domain, timeout.Awaited, strings.Join(timeout.Pending, ", "), cerr)
	}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return timeout
	}
	return fmt.Errorf("domain %s: waiting for %s on %s: %w", timeout.Domain, timeout.Awaited, strings.Join(timeout.Pending, ", "), err)
}
