package readiness

import (
	"errors"
	"fmt"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/netclass"
)

// The aggregation rules live here as small pure functions, for the in-pod
// endpoint of this package and for callers that check members their own
// way ([CheckFunc]). Network failures are classified as package bootstrap
// classifies them (internal/netclass).

// Class says how one check result counts toward a member's verdict.
type Class int

const (
	// Passed means the check succeeded.
	Passed Class = iota
	// SoftFailure means the member was reachable but unhealthy or slow (a
	// non-2xx answer, a timeout, a reset): it may recover, so it counts
	// toward the failure threshold.
	SoftFailure
	// HardFailure means the member is gone: its name does not resolve, it
	// refuses connections, or a caller said so with [Gone]. It counts as
	// down at once, whatever the failure threshold.
	HardFailure
)

// String returns the name of the class.
func (c Class) String() string {
	switch c {
	case Passed:
		return "passed"
	case SoftFailure:
		return "soft failure"
	case HardFailure:
		return "hard failure"
	default:
		return fmt.Sprintf("Class(%d)", int(c))
	}
}

// ClassOf returns the class of a check's result: [Passed] for nil,
// [HardFailure] for a name that does not resolve (DNS "no such host"), a
// refused connection, a [*GoneError] or a *udrain.ConfigError (a check that
// can never succeed), and [SoftFailure] for everything else, timeouts included. A
// temporary DNS failure is soft: it says nothing about the member.
func ClassOf(err error) Class {
	if err == nil {
		return Passed
	}
	var gone *GoneError
	var config *udrain.ConfigError
	switch c := netclass.Of(err); {
	case errors.As(err, &gone), errors.As(err, &config):
		return HardFailure
	case c == netclass.DNSNotFound, c == netclass.ConnectionRefused:
		return HardFailure
	default:
		return SoftFailure
	}
}

// GoneError marks a member as gone (evicted, deleted, unreachable for good),
// so that [ClassOf] counts it as a [HardFailure].
type GoneError struct {
	// Err says how the member is known to be gone.
	Err error
}

// Gone wraps err so that the member counts as down at once. A [CheckFunc]
// returns it when it knows the member will not come back by itself (an
// evicted or deleted pod). Gone(nil) returns nil.
func Gone(err error) error {
	if err == nil {
		return nil
	}
	return &GoneError{Err: err}
}

// Error describes the problem.
func (e *GoneError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *GoneError) Unwrap() error { return e.Err }

// ErrNotCheckedYet is the verdict of a member that no check has finished for:
// not knowing is not ready.
var ErrNotCheckedYet = errors.New("not checked yet")

// MemberState is what the rules remember about one member between checks.
// The zero value is a member that has not been checked yet.
type MemberState struct {
	// Checks counts the finished checks.
	Checks int
	// ConsecutiveFailures counts the failures since the last passed check.
	ConsecutiveFailures int
	// LastClass is the class of the last check.
	LastClass Class
	// LastErr is the error of the last check, nil if it passed.
	LastErr error
}

// Observe returns the state after one more check that returned err,
// classified with [ClassOf]. It does not change s.
func (s MemberState) Observe(err error) MemberState {
	s.Checks++
	s.LastErr = err
	s.LastClass = ClassOf(err)
	if s.LastClass == Passed {
		s.ConsecutiveFailures = 0
	} else {
		s.ConsecutiveFailures++
	}
	return s
}

// Verdict returns nil if the member counts as healthy, else why not:
// [ErrNotCheckedYet] before the first check, or a [*DownError] after a hard
// failure or after failureThreshold consecutive soft failures. A threshold
// below 1 counts as 1 (the first failure counts). Soft failures below the
// threshold are tolerated: the member still counts as healthy.
func (s MemberState) Verdict(failureThreshold int) error {
	failureThreshold = max(failureThreshold, 1)
	switch {
	case s.Checks == 0:
		return ErrNotCheckedYet
	case s.LastClass == Passed:
		return nil
	case s.LastClass == HardFailure, s.ConsecutiveFailures >= failureThreshold:
		return &DownError{Class: s.LastClass, Failures: s.ConsecutiveFailures, Threshold: failureThreshold, Err: s.LastErr}
	default:
		return nil
	}
}

// DownError is the verdict of a member that counts as down.
type DownError struct {
	// Class is the class of the last check.
	Class Class
	// Failures is the number of consecutive failed checks.
	Failures int
	// Threshold is the failure threshold that applied.
	Threshold int
	// Err is the error of the last check.
	Err error
}

// Error returns the last check's error, prefixed with the count of
// consecutive failures only when a threshold above 1 was passed, so that with
// the default threshold the text is the check's own (as the kube-apiserver
// shows it on a per-check path).
func (e *DownError) Error() string {
	if e.Class == SoftFailure && e.Threshold > 1 {
		return fmt.Sprintf("%d consecutive failures: %v", e.Failures, e.Err)
	}
	return e.Err.Error()
}

// Unwrap returns the last check's error.
func (e *DownError) Unwrap() error { return e.Err }

// GroupReady reports whether a group whose members have these verdicts (see
// [MemberState.Verdict]) is ready: it has at least one member and every
// verdict is nil. An empty group is not ready: nothing shows it healthy.
func GroupReady(verdicts []error) bool {
	if len(verdicts) == 0 {
		return false
	}
	for _, v := range verdicts {
		if v != nil {
			return false
		}
	}
	return true
}
