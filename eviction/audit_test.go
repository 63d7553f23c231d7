package eviction

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/udrain/udrain/topology"
)

// Reader.Audit: the contract's findings, then the simulated rollout's
// destination findings; a rollout that cannot be simulated is said, not
// an error; nothing is written.
func TestReaderAudit(t *testing.T) {
	cluster := func(pdb bool) []runtime.Object {
		objs := []any{destNode(1, 1, 6), destNode(2, 1, 8), destNode(3, 1, 8),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")}
		if pdb {
			objs = append(objs, leaderPDB(2))
		}
		return objects(objs...)
	}
	given := RolloutOptions{Order: OrderGiven, Domains: []string{"ud-1", "ud-2", "ud-3"}}
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		opts       RolloutOptions
		wantCodes  []topology.FindingCode
		wantErr    bool // Report.Err
		wantPlan   bool
		wantGroups int
		wantPDBs   int
	}{
		{"a group that can only go to a pending domain", cluster(true), given, []topology.FindingCode{FindingDisruptedAgain}, false, true, 2, 1},
		{"spare first: every group has a place", cluster(true), RolloutOptions{}, nil, false, true, 2, 1},
		{"leaders without a budget: the contract's error", cluster(false), RolloutOptions{},
			[]topology.FindingCode{topology.FindingUnprotectedLeader, topology.FindingUnprotectedLeader}, true, true, 2, 0},
		{"a rollout that cannot be planned", cluster(true), RolloutOptions{Domains: []string{"ud-9"}}, nil, false, false, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, tc.objs...)
			r, err := NewReader(fc.client, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := r.Audit(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var codes []topology.FindingCode
			for _, f := range a.Report.Findings {
				codes = append(codes, f.Code)
			}
			if diff := cmp.Diff(tc.wantCodes, codes); diff != "" {
				t.Errorf("finding codes (-want +got):\n%s", diff)
			}
			if (a.Report.Err() != nil) != tc.wantErr {
				t.Errorf("Report.Err() = %v, want an error: %v", a.Report.Err(), tc.wantErr)
			}
			if (a.Rollout != nil) != tc.wantPlan || (a.RolloutErr != nil) == tc.wantPlan {
				t.Errorf("rollout plan %v, problem %v; want a plan: %v", a.Rollout != nil, a.RolloutErr, tc.wantPlan)
			}
			if a.Groups != tc.wantGroups || a.PDBs != tc.wantPDBs || len(a.Layout.Names()) != 3 {
				t.Errorf("%d groups, %d PDBs, domains %v; want %d, %d and 3 domains", a.Groups, a.PDBs, a.Layout.Names(), tc.wantGroups, tc.wantPDBs)
			}
			if m := fc.mutations(); len(m) != 0 {
				t.Errorf("the audit changed the cluster: %v", m)
			}
		})
	}
}
