package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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

// waitError turns the error of a wait under ctx, derived from parent with
// the step's timeout, into what the step returns: parent's own error when
// the caller cancelled (so errors.Is finds context.Canceled), timeout when
// the step's timeout passed, err otherwise.
func waitError(parent, ctx context.Context, err error, timeout *TimeoutError) error {
	if cerr := parent.Err(); cerr != nil {
		return fmt.Errorf("domain %s: waiting for %s on %s: %w", timeout.Domain, timeout.Awaited, strings.Join(timeout.Pending, ", "), cerr)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeout
	}
	return fmt.Errorf("domain %s: waiting for %s on %s: %w", timeout.Domain, timeout.Awaited, strings.Join(timeout.Pending, ", "), err)
}
