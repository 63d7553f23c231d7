package report

import (
	"errors"
	"time"

	"github.com/udrain/udrain/bootstrap"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// The documents of the library's results, as udrain prints them. Their
// Error, where they have one, is left nil: its exit code is the program's
// (ReasonOf gives the reason).

// DurationSeconds is d in seconds, to the millisecond: the form of the
// documents' float64 fields that end in "Seconds"
// (HealthReport.WaitedSeconds, WaitServerResult.ElapsedSeconds).
func DurationSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// NewAuditReport is the AuditReport of an audit (eviction.Drainer.Audit):
// its findings, counted by severity, and why the rollout was not simulated
// when it was not.
func NewAuditReport(a *eviction.AuditResult) AuditReport {
	r := topology.Report{Findings: a.Findings}
	doc := AuditReport{TypeMeta: NewTypeMeta(KindAuditReport), LabelKey: a.LabelKey, Domains: a.Domains, Groups: a.Groups, PDBs: a.PDBs,
		Errors: len(r.Errors()), Warnings: len(r.Warnings()), Findings: a.Findings, Rollout: a.Rollout}
	if a.RolloutErr != nil {
		doc.RolloutProblem = a.RolloutErr.Error()
	}
	return doc
}

// NewWaitServerResult is the WaitServerResult of bootstrap.WaitForServer's
// result and error: what res says when the server answered, else what the
// *bootstrap.WaitError in err's chain says, with the advice for its class
// of failure, the setting it names named by name (FailureClass.Advice).
func NewWaitServerResult(res *bootstrap.Result, err error, name func(setting string) string) WaitServerResult {
	r := WaitServerResult{TypeMeta: NewTypeMeta(KindWaitServerResult)}
	if res != nil {
		r.Target, r.Reachable, r.Attempts, r.ElapsedSeconds = res.Target, true, res.Attempts, DurationSeconds(res.Elapsed)
		r.StatusCode, r.RemoteAddr = res.StatusCode, res.RemoteAddr
	}
	if we, ok := errors.AsType[*bootstrap.WaitError](err); ok {
		r.Target, r.Attempts, r.ElapsedSeconds, r.StatusCode = we.Target, we.Attempts, DurationSeconds(we.Elapsed), we.StatusCode
		r.FailureClass, r.Hint = string(we.Class), we.Class.Advice(name)
	}
	return r
}
