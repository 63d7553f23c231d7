package eviction

import (
	"context"

	"github.com/udrain/udrain/topology"
)

// ClusterAudit is the placement contract's audit over every domain, with
// where a rollout's evicted groups could go.
type ClusterAudit struct {
	// Layout is the cluster's domains.
	Layout *topology.Layout
	// Groups counts the groups found; PDBs the PodDisruptionBudgets.
	Groups, PDBs int
	// Report holds the contract's findings (topology.Audit) followed by
	// the simulated rollout's FindingDisruptedAgain and FindingNoRoom.
	// Report.Err is non-nil when a finding is of severity Error.
	Report topology.Report
	// Rollout is the rollout simulated over every domain (PlanRollout):
	// its order and each group's destination. It is nil when the rollout
	// could not be simulated (a domain held by a rollout in progress,
	// say); RolloutErr then says why.
	Rollout    *RolloutPlan
	RolloutErr error
}

// Audit checks the placement contract over every domain of a snapshot
// (topology.Audit) and simulates a rollout with opts (PlanRollout), adding
// its DisruptedAgain and NoRoom findings to the contract's. It returns an
// error only when the cluster cannot be read or its domains cannot be
// built (nodes without the domain label under topology.UnlabeledError);
// a contract violation is in the report, not an error. It changes nothing.
func (r *Reader) Audit(ctx context.Context, opts RolloutOptions) (*ClusterAudit, error) {
	s, err := r.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	layout, err := topology.BuildLayout(s.Nodes, r.d.s.layoutOptions())
	if err != nil {
		return nil, err
	}
	groups := topology.FindGroups(s.Pods, topology.Groupers(s.PodGroups)...)
	a := &ClusterAudit{Layout: layout, Groups: len(groups), PDBs: len(s.PDBs),
		Report: topology.Audit(topology.AuditInput{Layout: layout, Groups: groups, PDBs: s.PDBs, Pods: s.Pods})}
	plan, err := r.PlanRollout(ctx, opts)
	if plan == nil {
		a.RolloutErr = err
		return a, nil
	}
	a.Rollout = plan
	for _, f := range plan.Findings {
		if f.Code == FindingDisruptedAgain || f.Code == FindingNoRoom {
			a.Report.Findings = append(a.Report.Findings, f)
		}
	}
	return a, nil
}
