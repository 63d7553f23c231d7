package eviction

import (
	"context"

	"github.com/udrain/udrain/topology"
)

// Audit checks the placement contract over every domain of the cluster
// (topology.Audit), then the LeaderWorkerSets' own specs, whether or not
// their pods exist yet (topology.AuditLeaderWorkerSets;
// topology.FindingLWSUnread when they cannot be listed): what "udrain
// audit" reports, with the report's label, domains and counts of groups
// and PodDisruptionBudgets. Nothing is touched. Where the groups a rollout
// evicts could go is PlanRollout's (its Destinations and its
// topology.FindingDisruptedAgain, FindingNoRoom and FindingParallelLimited
// findings); report.NewAuditReport puts the two together.
func (d *Drainer) Audit(ctx context.Context) (topology.Report, error) {
	s, err := d.Snapshot(ctx)
	if err != nil {
		return topology.Report{}, err
	}
	layout, err := topology.BuildLayout(s.Nodes, d.s.layoutOptions())
	if err != nil {
		return topology.Report{}, err
	}
	pdbs := topology.NewPDBIndex(s.PDBs)
	rep := topology.Audit(topology.AuditInput{Layout: layout, Groups: topology.FindGroups(s.Pods, groupersFor(d.s, s)...), PDBs: s.PDBs, PDBIndex: pdbs, Pods: s.Pods})
	rep.Findings = append(rep.Findings, d.auditLeaderWorkerSets(ctx, layout, pdbs)...)
	return rep, nil
}
