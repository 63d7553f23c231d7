package readiness_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/readiness"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want readiness.Class
	}{
		{"nil passes", nil, readiness.Passed},
		{"plain error is soft", errors.New("boom"), readiness.SoftFailure},
		{"timeout is soft", fmt.Errorf("get: %w", context.DeadlineExceeded), readiness.SoftFailure},
		{"HTTP status is soft", &readiness.HTTPStatusError{StatusCode: 503, Status: "503 Service Unavailable"}, readiness.SoftFailure},
		{"reset is soft", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, readiness.SoftFailure},
		{"DNS not found is hard", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, readiness.HardFailure},
		{"temporary DNS failure is soft", &net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}, readiness.SoftFailure},
		{"refused is hard", refused, readiness.HardFailure},
		{"wrapped refused is hard", fmt.Errorf("get: %w", refused), readiness.HardFailure},
		{"gone is hard", readiness.Gone(errors.New("pod evicted")), readiness.HardFailure},
		{"wrapped gone is hard", fmt.Errorf("member: %w", readiness.Gone(errors.New("pod deleted"))), readiness.HardFailure},
		{"config error is hard", &udrain.ConfigError{Field: "URL", Problem: "bad"}, readiness.HardFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readiness.ClassOf(tt.err); got != tt.want {
				t.Errorf("ClassOf(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestGoneNil(t *testing.T) {
	if err := readiness.Gone(nil); err != nil {
		t.Errorf("Gone(nil) = %v, want nil", err)
	}
}

// verdictSummary is what a caller of MemberState.Verdict can tell apart.
type verdictSummary struct {
	Healthy    bool
	NotChecked bool
	Failures   int
	Class      readiness.Class
	Text       string
}

func summarize(err error) verdictSummary {
	var down *readiness.DownError
	switch {
	case err == nil:
		return verdictSummary{Healthy: true}
	case errors.Is(err, readiness.ErrNotCheckedYet):
		return verdictSummary{NotChecked: true, Text: err.Error()}
	case errors.As(err, &down):
		return verdictSummary{Failures: down.Failures, Class: down.Class, Text: err.Error()}
	default:
		return verdictSummary{Text: "unexpected verdict type: " + err.Error()}
	}
}

func TestVerdict(t *testing.T) {
	soft := errors.New("503")
	hard := readiness.Gone(errors.New("evicted"))
	tests := []struct {
		name      string
		threshold int
		checks    []error
		want      verdictSummary
	}{
		{"not checked yet is not ready", 1, nil, verdictSummary{NotChecked: true, Text: "not checked yet"}},
		{"pass", 1, []error{nil}, verdictSummary{Healthy: true}},
		{"first soft failure counts at threshold 1", 1, []error{soft}, verdictSummary{Failures: 1, Class: readiness.SoftFailure, Text: "503"}},
		{"threshold 0 acts as 1", 0, []error{soft}, verdictSummary{Failures: 1, Class: readiness.SoftFailure, Text: "503"}},
		{"soft failures below threshold are tolerated", 3, []error{nil, soft, soft}, verdictSummary{Healthy: true}},
		{"soft failures at threshold count", 3, []error{soft, soft, soft}, verdictSummary{Failures: 3, Class: readiness.SoftFailure, Text: "3 consecutive failures: 503"}},
		{"a pass resets the count", 3, []error{soft, soft, nil, soft, soft}, verdictSummary{Healthy: true}},
		{"hard failure is down at once", 3, []error{hard}, verdictSummary{Failures: 1, Class: readiness.HardFailure, Text: "evicted"}},
		{"hard after soft is down", 5, []error{soft, hard}, verdictSummary{Failures: 2, Class: readiness.HardFailure, Text: "evicted"}},
		{"soft after hard is tolerated again", 3, []error{hard, soft}, verdictSummary{Healthy: true}},
		{"recovers after hard", 1, []error{hard, nil}, verdictSummary{Healthy: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s readiness.MemberState
			for _, err := range tt.checks {
				s = s.Observe(err)
			}
			if diff := cmp.Diff(tt.want, summarize(s.Verdict(tt.threshold))); diff != "" {
				t.Errorf("verdict after %v (-want +got):\n%s", tt.checks, diff)
			}
			if s.Checks != len(tt.checks) {
				t.Errorf("Checks = %d, want %d", s.Checks, len(tt.checks))
			}
		})
	}
}

func TestObserveDoesNotChangeReceiver(t *testing.T) {
	var s readiness.MemberState
	next := s.Observe(errors.New("x"))
	if diff := cmp.Diff(readiness.MemberState{}, s); diff != "" {
		t.Errorf("receiver changed (-want +got):\n%s", diff)
	}
	if next.ConsecutiveFailures != 1 {
		t.Errorf("ConsecutiveFailures = %d, want 1", next.ConsecutiveFailures)
	}
}

func TestGroupReady(t *testing.T) {
	down := &readiness.DownError{Class: readiness.SoftFailure, Failures: 1, Threshold: 1, Err: errors.New("x")}
	tests := []struct {
		name     string
		verdicts []error
		want     bool
	}{
		{"empty group is not ready", nil, false},
		{"all healthy", []error{nil, nil, nil}, true},
		{"one down", []error{nil, down, nil}, false},
		{"one not checked yet", []error{nil, readiness.ErrNotCheckedYet}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readiness.GroupReady(tt.verdicts); got != tt.want {
				t.Errorf("GroupReady(%v) = %v, want %v", tt.verdicts, got, tt.want)
			}
		})
	}
}
