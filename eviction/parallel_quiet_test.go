package eviction

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// TestBudgetWatch: parallelCluster's budget allows one group down and
// group llm-0 (ud-1) is down (its worker gone), so the decision holds
// ud-3 and ud-4 back by the budget (ud-2 starts: nothing is in flight). The watch of that decision says a new
// decision would hold them back too until llm-0 is whole again or the
// budget changes, and never for longer than fullLookEvery.
func TestBudgetWatch(t *testing.T) {
	type change func(ctx context.Context, fc *fakeCluster)
	deletePod := func(name string) change {
		return func(ctx context.Context, fc *fakeCluster) {
			if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				fc.t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change change
		// seen is true once the view shows the change.
		seen  func(v *view) bool
		later time.Duration
		want  bool
	}{
		{name: "nothing changed", want: true},
		{name: "the group down is whole again", change: func(ctx context.Context, fc *fakeCluster) {
			p := withGPUs(lwsPod(0, 1, 2, "node-1-1", fc.nextUID("g0-w1")), 4)
			if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				fc.t.Fatal(err)
			}
		}, seen: func(v *view) bool { return len(v.PodObjectsIn(testNS)) == 8 }, want: false},
		{name: "another group down", change: deletePod("llm-2-1"), seen: func(v *view) bool { return len(v.PodObjectsIn(testNS)) == 6 }, want: true},
		// As many down as before, but the one the decision counted is
		// back: a domain in flight would have taken the other down, and
		// counts it already.
		{name: "the group down whole again, another down", change: func(ctx context.Context, fc *fakeCluster) {
			deletePod("llm-2-1")(ctx, fc)
			p := withGPUs(lwsPod(0, 1, 2, "node-1-1", fc.nextUID("g0-w1")), 4)
			if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				fc.t.Fatal(err)
			}
		}, seen: func(v *view) bool {
			_, still := v.Pod(testNS, "llm-2-1")
			_, back := v.Pod(testNS, "llm-0-1")
			return !still && back
		}, want: false},
		{name: "the budget's status changed", change: func(ctx context.Context, fc *fakeCluster) { fc.setBudget(ctx, 1, 4) },
			seen: func(v *view) bool { p, ok := v.PDB(testNS, "llm-leaders"); return ok && p.Status.CurrentHealthy == 4 }, want: false},
		{name: "the budget deleted", change: func(ctx context.Context, fc *fakeCluster) {
			if err := fc.client.PolicyV1().PodDisruptionBudgets(testNS).Delete(ctx, "llm-leaders", metav1.DeleteOptions{}); err != nil {
				fc.t.Fatal(err)
			}
		}, seen: func(v *view) bool { _, ok := v.PDB(testNS, "llm-leaders"); return !ok }, want: false},
		{name: "a whole decision is due", later: fullLookEvery, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, parallelCluster(1)...)
			if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, "llm-0-1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			fc.setBudget(ctx, 0, 3)
			d, v := viewOf(ctx, fc, Options{})
			if !v.WaitFor(ctx, 5*time.Second, func() bool { return len(v.PodObjectsIn(testNS)) == 7 }) {
				t.Fatal("the view never showed llm-0-1 gone")
			}
			snap, err := v.snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			names := []string{"ud-1", "ud-2", "ud-3", "ud-4"}
			r := &rollout{d: d, opts: RolloutOptions{ID: "r", Parallel: ParallelAuto}, id: "r", logger: logr.Discard(), v: v, domains: names}
			a, flights, _ := r.admission(snap, layout, nil)
			var demands []*demand
			for _, name := range names[1:] {
				demands = append(demands, a.demandOn(name))
			}
			_, holds := a.next(demands, flights, 0, false)
			var held []string
			for _, h := range holds {
				held = append(held, fmt.Sprintf("%s by %s %s", h.Domain, h.Reason, h.BudgetRef))
			}
			ref := health.BudgetRef{Namespace: testNS, PDB: "llm-leaders"}
			// With nothing in flight, the first domain starts whatever
			// the budget says (admission.next).
			want := []string{"ud-3 by Budget " + ref.String(), "ud-4 by Budget " + ref.String()}
			if diff := cmp.Diff(want, held); diff != "" {
				t.Fatalf("holds (-want +got):\n%s", diff)
			}
			now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
			w := a.watchHolds(holds, now)
			if w == nil || len(w.budgets) != 1 || len(w.budgets[0].down) != 1 || w.budgets[0].down[0].id.Name != "llm-0" {
				t.Fatalf("watch %+v, want the budget with llm-0 down", w)
			}
			if tc.change != nil {
				tc.change(ctx, fc)
				if !v.WaitFor(ctx, 5*time.Second, func() bool { return tc.seen(v) }) {
					t.Fatal("the view never showed the change")
				}
			}
			groupers := groupersFor(d.s, &Snapshot{})
			if got := w.quiet(v, groupers, now.Add(tc.later), podcache.NewMemo()); got != tc.want {
				t.Errorf("quiet = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWatchHolds: only budgets that count groups are watched; holds for
// room or by the limit change with the domains in flight alone.
func TestWatchHolds(t *testing.T) {
	ref := health.BudgetRef{Namespace: testNS, PDB: "llm-leaders"}
	pdb := leaderPDB(2)
	group := func(i int) unit {
		return unit{group: topology.GroupID{Namespace: testNS, Name: fmt.Sprintf("llm-%d", i)}}
	}
	for _, tc := range []struct {
		name  string
		units map[unit]bool
		holds []*BlockInfo
		// wantDown is how many groups down are watched; -1: no watch.
		wantDown int
	}{
		{name: "a budget over groups", units: map[unit]bool{group(0): true, group(1): false, group(2): true},
			holds: []*BlockInfo{{Domain: "ud-2", Reason: BlockBudget, BudgetRef: ref}, {Domain: "ud-3", Reason: BlockBudget, BudgetRef: ref}}, wantDown: 2},
		{name: "room and limit only", units: map[unit]bool{group(0): true},
			holds: []*BlockInfo{{Domain: "ud-2", Reason: BlockRoom}, {Domain: "ud-3", Reason: BlockLimit}}, wantDown: -1},
		{name: "a budget over pods of no group", units: map[unit]bool{{pod: types.NamespacedName{Namespace: testNS, Name: "web-1"}}: true},
			holds: []*BlockInfo{{Domain: "ud-2", Reason: BlockBudget, BudgetRef: ref}}, wantDown: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission{budgets: map[health.BudgetRef]*budgetCount{ref: {pdb: pdb, units: tc.units, pods: len(tc.units)}}}
			w := a.watchHolds(tc.holds, time.Now())
			switch {
			case tc.wantDown < 0 && w != nil:
				t.Errorf("watch %+v, want none", w)
			case tc.wantDown >= 0 && (w == nil || len(w.budgets) != 1):
				t.Fatalf("watch %+v, want one budget", w)
			case tc.wantDown >= 0 && len(w.budgets[0].down) != tc.wantDown:
				t.Errorf("watched %d groups down, want %d", len(w.budgets[0].down), tc.wantDown)
			}
		})
	}
}
