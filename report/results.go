package report

import (
	"errors"
	"slices"
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

// NewAuditReport is the AuditReport of an audit: the contract over every
// domain (eviction.Drainer.Audit's report: its label, domains, counts and
// findings), then where the groups of a rollout over every domain could go
// (plan, from PlanRollout: its Destinations, and its FindingDisruptedAgain,
// FindingNoRoom and FindingParallelLimited findings, its contract findings
// being the audit's already), the findings counted by severity. A plan
// that could not be made (nil) is planErr, the document's RolloutProblem.
func NewAuditReport(audit topology.Report, plan *eviction.RolloutPlan, planErr error) AuditReport {
	doc := AuditReport{TypeMeta: NewTypeMeta(KindAuditReport), LabelKey: audit.LabelKey, Domains: audit.Domains, Groups: audit.Groups, PDBs: audit.PDBs,
		Findings: slices.Clone(audit.Findings), Rollout: auditedRollout(plan)}
	if plan == nil && planErr != nil {
		doc.RolloutProblem = planErr.Error()
	}
	if plan != nil {
		for _, f := range plan.Findings {
			if f.Code == topology.FindingDisruptedAgain || f.Code == topology.FindingNoRoom || f.Code == topology.FindingParallelLimited {
				doc.Findings = append(doc.Findings, f)
			}
		}
	}
	r := topology.Report{Findings: doc.Findings}
	doc.Errors, doc.Warnings = len(r.Errors()), len(r.Warnings())
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

// auditedRollout is plan as an audit reports it: its schedule, findings
// and destinations, without each domain's drain plan and health (an audit
// is about the contract; "udrain plan" and "udrain health" show those).
func auditedRollout(plan *eviction.RolloutPlan) *eviction.RolloutPlan {
	if plan == nil {
		return nil
	}
	p := *plan
	p.Domains = slices.Clone(plan.Domains)
	for i := range p.Domains {
		p.Domains[i].Plan, p.Domains[i].Health = nil, nil
	}
	return &p
}
