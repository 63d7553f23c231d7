package eviction

import (
	"context"

	"github.com/udrain/udrain/topology"
)

// AuditResult is the placement contract checked over every domain, and where
// the groups a rollout over every domain evicts could go: what "udrain
// audit" reports.
type AuditResult struct {
	// LabelKey is the node label the domains come from; Domains are the
	// domains audited, in natural order.
	LabelKey string
	Domains  []string
	// Groups counts the groups found, PDBs the PodDisruptionBudgets.
	Groups, PDBs int
	// Findings are the contract's findings over every domain
	// (topology.Audit), then those of the LeaderWorkerSets' own specs
	// (topology.AuditLeaderWorkerSets; topology.FindingLWSUnread when they cannot
	// be listed), then the simulated rollout's topology.FindingDisruptedAgain and
	// topology.FindingNoRoom.
	Findings []topology.Finding
	// Rollout is the rollout simulated over every domain (PlanRollout);
	// nil when it could not be planned, and RolloutErr says why (a domain
	// held by a rollout in progress, say).
	Rollout    *RolloutPlan
	RolloutErr error
}

// Err returns a *topology.ContractError with the findings of severity
// Error, or nil.
func (a *AuditResult) Err() error { return topology.Report{Findings: a.Findings}.Err() }

// Audit checks the placement contract over every domain of the cluster
// and simulates Rollout(ctx, opts) over every domain, without a lock, a
// taint, a cordon or an eviction, to add where the groups it evicts could
// go. Options that cannot work are a *udrain.ConfigError before any
// request; a rollout that cannot be planned is AuditResult.RolloutErr, not an
// error.
func (d *Drainer) Audit(ctx context.Context, opts RolloutOptions) (*AuditResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s, err := d.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	layout, err := topology.BuildLayout(s.Nodes, d.s.layoutOptions())
	if err != nil {
		return nil, err
	}
	groups := topology.FindGroups(s.Pods, groupersFor(d.s, s)...)
	pdbs := topology.NewPDBIndex(s.PDBs)
	a := &AuditResult{LabelKey: layout.LabelKey, Domains: layout.Names(), Groups: len(groups), PDBs: len(s.PDBs),
		Findings: topology.Audit(topology.AuditInput{Layout: layout, Groups: groups, PDBs: s.PDBs, PDBIndex: pdbs, Pods: s.Pods}).Findings}
	// The LeaderWorkerSets' own specs (one list of them), whether or not
	// their pods exist yet.
	a.Findings = append(a.Findings, d.auditLeaderWorkerSets(ctx, layout, pdbs)...)
	if a.Rollout, err = d.PlanRollout(ctx, opts); a.Rollout == nil {
		a.RolloutErr = err
		return a, nil
	}
	// Its contract findings are the audit's, over its domains.
	for _, f := range a.Rollout.Findings {
		if f.Code == topology.FindingDisruptedAgain || f.Code == topology.FindingNoRoom || f.Code == topology.FindingParallelLimited {
			a.Findings = append(a.Findings, f)
		}
	}
	return a, nil
}
