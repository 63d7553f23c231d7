package report_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/bootstrap"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func TestDurationSeconds(t *testing.T) {
	for d, want := range map[time.Duration]float64{
		0:                          0,
		1500 * time.Millisecond:    1.5,
		1234567 * time.Microsecond: 1.235,
		400 * time.Microsecond:     0,
		90 * time.Minute:           5400,
	} {
		if got := report.DurationSeconds(d); got != want {
			t.Errorf("DurationSeconds(%s) = %v, want %v", d, got, want)
		}
	}
}

func TestNewAuditReport(t *testing.T) {
	findings := []topology.Finding{
		{Code: topology.FindingPack, Severity: udrain.SeverityError, Message: "spans"},
		{Code: topology.FindingProtectedWorker, Severity: udrain.SeverityWarning, Message: "worker"},
	}
	again := topology.Finding{Code: topology.FindingDisruptedAgain, Severity: udrain.SeverityWarning, Message: "again"}
	noRoom := topology.Finding{Code: topology.FindingNoRoom, Severity: udrain.SeverityError, Message: "no room"}
	limited := topology.Finding{Code: topology.FindingParallelLimited, Severity: udrain.SeverityWarning, Message: "limited"}
	plan := &eviction.RolloutPlan{}
	// The plan's contract findings are the audit's over its domains: not
	// counted twice.
	destinations := &eviction.RolloutPlan{Findings: []topology.Finding{findings[0], again, noRoom, limited}}
	meta := report.NewTypeMeta(report.KindAuditReport)
	for name, tc := range map[string]struct {
		audit   topology.Report
		plan    *eviction.RolloutPlan
		planErr error
		want    report.AuditReport
	}{
		"clean": {topology.Report{LabelKey: "ud", Domains: []string{"ud-1", "ud-2"}, Groups: 3, PDBs: 2}, plan, nil,
			report.AuditReport{TypeMeta: meta, LabelKey: "ud", Domains: []string{"ud-1", "ud-2"}, Groups: 3, PDBs: 2, Rollout: plan}},
		"findings counted by severity": {topology.Report{LabelKey: "ud", Findings: findings}, plan, nil,
			report.AuditReport{TypeMeta: meta, LabelKey: "ud", Errors: 1, Warnings: 1, Findings: findings, Rollout: plan}},
		"the rollout's destination findings after the contract's": {topology.Report{LabelKey: "ud", Findings: findings}, destinations, nil,
			report.AuditReport{TypeMeta: meta, LabelKey: "ud", Errors: 2, Warnings: 3, Findings: []topology.Finding{findings[0], findings[1], again, noRoom, limited}, Rollout: destinations}},
		"no rollout simulated": {topology.Report{LabelKey: "ud", Findings: findings}, nil, errors.New("ud-1 is held"),
			report.AuditReport{TypeMeta: meta, LabelKey: "ud", Errors: 1, Warnings: 1, Findings: findings, RolloutProblem: "ud-1 is held"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, report.NewAuditReport(tc.audit, tc.plan, tc.planErr)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewWaitServerResult(t *testing.T) {
	flags := func(setting string) string {
		return map[string]string{"bootstrap.Options.StatusCodes": "--status"}[setting]
	}
	waitErr := &bootstrap.WaitError{Target: "http://api:8080/healthz", Class: bootstrap.ClassHTTPStatus, StatusCode: 503, Attempts: 7,
		Elapsed: 12345 * time.Millisecond, Cause: context.DeadlineExceeded}
	for name, tc := range map[string]struct {
		res  *bootstrap.Result
		err  error
		name func(string) string
		want report.WaitServerResult
	}{
		"reachable": {res: &bootstrap.Result{Target: "tcp://redis:6379", Attempts: 2, Elapsed: 1500 * time.Millisecond, RemoteAddr: "10.0.0.7:6379"},
			want: report.WaitServerResult{TypeMeta: report.NewTypeMeta(report.KindWaitServerResult), Target: "tcp://redis:6379", Reachable: true, Attempts: 2,
				ElapsedSeconds: 1.5, RemoteAddr: "10.0.0.7:6379"}},
		"not reachable, the setting named": {err: fmt.Errorf("waiting: %w", waitErr), name: flags,
			want: report.WaitServerResult{TypeMeta: report.NewTypeMeta(report.KindWaitServerResult), Target: "http://api:8080/healthz", Attempts: 7,
				ElapsedSeconds: 12.345, StatusCode: 503, FailureClass: "HTTPStatus",
				Hint: "the server answers but is not ready yet; if this status means ready, accept it (--status)"}},
		"the Go name without a namer": {err: waitErr,
			want: report.WaitServerResult{TypeMeta: report.NewTypeMeta(report.KindWaitServerResult), Target: "http://api:8080/healthz", Attempts: 7,
				ElapsedSeconds: 12.345, StatusCode: 503, FailureClass: "HTTPStatus",
				Hint: "the server answers but is not ready yet; if this status means ready, accept it (bootstrap.Options.StatusCodes)"}},
		"another error": {err: errors.New("bad URL"),
			want: report.WaitServerResult{TypeMeta: report.NewTypeMeta(report.KindWaitServerResult)}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, report.NewWaitServerResult(tc.res, tc.err, tc.name)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
