package eviction

import (
	"context"
	"time"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// While budgets hold domains back, the rollout looks again every
// readmitEvery whether they may start. A decision reads every pod (the
// room's simulation); what can lift a budget's hold between the wake-ups
// of the domains in flight is narrower: a group it counts healthy again,
// or the budget itself changed. budgetWatch tells that from the budgets'
// own groups, so that a decision is taken again only when it can differ.

// fullLookEvery is the longest the rollout goes, while budgets hold
// domains back, without a whole decision, whatever the budgets' watch
// says (a new group of a workload, say, counts only there).
const fullLookEvery = time.Minute

// budgetWatch is what the budgets that held domains back counted at the
// last decision.
type budgetWatch struct {
	at      time.Time
	budgets []watchedBudget
}

type watchedBudget struct {
	ref health.BudgetRef
	// generation, expected and healthy are the budget's as the decision
	// read it.
	generation        int64
	expected, healthy int32
	// down are its groups down then.
	down []wantedGroup
}

// watchHolds is the watch of the budgets that hold the domains of holds
// back, as a counts them; nil when none does, or a budget counts pods of
// no group (whose state the watch does not read). Holds for room or by
// the limit change only with the domains in flight, which wake the
// rollout themselves.
func (a *admission) watchHolds(holds []*BlockInfo, now time.Time) *budgetWatch {
	w := &budgetWatch{at: now}
	seen := map[health.BudgetRef]bool{}
	for _, h := range holds {
		if h.Reason != BlockBudget || seen[h.BudgetRef] {
			continue
		}
		seen[h.BudgetRef] = true
		bc := a.budgets[h.BudgetRef]
		if bc == nil {
			return nil
		}
		wb := watchedBudget{ref: h.BudgetRef, generation: bc.pdb.Generation, expected: bc.pdb.Status.ExpectedPods, healthy: bc.pdb.Status.CurrentHealthy}
		for u, down := range bc.units {
			if u.group == (topology.GroupID{}) {
				return nil
			}
			if down {
				wb.down = append(wb.down, wantedGroup{id: u.group})
			}
		}
		w.budgets = append(w.budgets, wb)
	}
	if len(w.budgets) == 0 {
		return nil
	}
	return w
}

// quiet reports whether a decision now would hold back what w's decision
// held back by budgets: each budget as it was, and every group of it that
// was down still down (a group down since changes no count: it belongs to
// a domain in flight, counted already, or would make the budget hold
// more). memo keeps the groups' pods between the checks.
func (w *budgetWatch) quiet(v *view, groupers []topology.Grouper, now time.Time, memo *podcache.Memo) bool {
	if w == nil || now.Sub(w.at) >= fullLookEvery {
		return false
	}
	for _, b := range w.budgets {
		pdb, ok := v.PDB(b.ref.Namespace, b.ref.PDB)
		if !ok || pdb.Generation != b.generation || pdb.Status.ExpectedPods != b.expected || pdb.Status.CurrentHealthy != b.healthy {
			return false
		}
		for _, st := range v.judgeGroups(b.down, groupers, memo) {
			if st.Healthy {
				return false
			}
		}
	}
	return true
}

// stillHeld reports whether the budgets that held domains back at the
// last decision still do (budgetWatch.quiet), so that the rollout need
// not decide again yet.
func (r *rollout) stillHeld(ctx context.Context) bool {
	if r.watch == nil {
		return false
	}
	pgs, _ := r.v.PodGroups(ctx)
	groupers := groupersFor(r.d.s, &Snapshot{PodGroups: pgs})
	if r.watchMemo == nil {
		r.watchMemo = podcache.NewMemo()
	}
	quiet := r.watch.quiet(r.v, groupers, r.d.s.Clock.Now(), r.watchMemo)
	r.watchMemo.Turn()
	return quiet
}
