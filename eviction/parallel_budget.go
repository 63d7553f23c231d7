package eviction

import (
	"cmp"
	"fmt"
	"slices"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// How the parallelism counts a PodDisruptionBudget: from its spec, over
// the groups (or pods of no group) udrain sees it select.

// budgetAllows returns how many of expected units (groups, or pods of no
// group) spec lets be down at once, with the rule in words, as the
// disruption controller scales it (percentages rounded up) but over the
// units udrain sees, not the scale of the pods' controllers.
func budgetAllows(spec policyv1.PodDisruptionBudgetSpec, expected int) (int, string) {
	switch {
	case spec.MaxUnavailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, expected, true)
		if err != nil {
			return 0, fmt.Sprintf("maxUnavailable %s (not a number or percentage)", spec.MaxUnavailable)
		}
		if spec.MaxUnavailable.Type == intstr.String {
			return max(v, 0), fmt.Sprintf("maxUnavailable %s of %d", spec.MaxUnavailable.StrVal, expected)
		}
		return max(v, 0), fmt.Sprintf("maxUnavailable %d", v)
	case spec.MinAvailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, expected, true)
		if err != nil {
			return 0, fmt.Sprintf("minAvailable %s (not a number or percentage)", spec.MinAvailable)
		}
		return max(expected-v, 0), fmt.Sprintf("minAvailable %s of %d", spec.MinAvailable, expected)
	}
	return 0, "neither minAvailable nor maxUnavailable"
}

// unit is what a budget counts for parallelism: a group, or a pod of no
// group.
type unit struct {
	group topology.GroupID
	pod   types.NamespacedName
}

func (u unit) String() string {
	if u.group != (topology.GroupID{}) {
		return "group " + u.group.String()
	}
	return "pod " + u.pod.String()
}

// budgetCount is a budget as the parallelism counts it now.
type budgetCount struct {
	pdb *policyv1.PodDisruptionBudget
	// units are the units it selects a pod of, true for those down now.
	units map[unit]bool
	// pods counts the pods it selects.
	pods int
}

// onePerUnit says the budget selects one pod per unit (a budget over
// leaders): its status counts units.
func (b *budgetCount) onePerUnit() bool { return b.pods == len(b.units) }

// budgetHold returns why d cannot start beside flights by a budget's
// spec, or nil. A unit counts as down when it is down now, or belongs to
// a flight (but to one recovering, only while it is not healthy again or
// not seen).
func (a *admission) budgetHold(d *demand, flights []*flight) *BlockInfo {
	refs := make([]health.BudgetRef, 0, len(d.units))
	for ref := range d.units {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(x, y health.BudgetRef) int { return cmp.Compare(x.String(), y.String()) })
	for _, ref := range refs {
		bc := a.budgets[ref]
		if bc == nil {
			continue // deleted, or it selects nothing any more
		}
		used := map[unit]bool{}
		for u, down := range bc.units {
			if down {
				used[u] = true
			}
		}
		unseen := 0
		for _, f := range flights {
			for _, u := range f.demand.units[ref] {
				down, seen := bc.units[u]
				switch {
				case !seen:
					if !used[u] {
						unseen++
					}
					used[u] = true
				case !f.recovering || down:
					used[u] = true
				}
			}
		}
		expected := len(bc.units) + unseen
		downNow := len(used)
		if bc.onePerUnit() {
			expected = max(expected, int(bc.pdb.Status.ExpectedPods))
			downNow = max(downNow, int(bc.pdb.Status.ExpectedPods-bc.pdb.Status.CurrentHealthy))
		}
		allowed, rule := budgetAllows(bc.pdb.Spec, expected)
		need := 0
		for _, u := range d.units[ref] {
			if !used[u] {
				need++
			}
		}
		if need == 0 || downNow+need <= allowed {
			continue
		}
		r := ref
		h := &BlockInfo{Domain: d.domain, Reason: BlockBudget, BudgetRef: r, Rule: rule, Allowed: allowed, Down: downNow, Needed: need, InFlight: flightNames(flights)}
		h.Message = fmt.Sprintf("PodDisruptionBudget %s allows %d down (%s); %d down now or in the domains in flight, and %s would add %d", ref, allowed, rule, downNow, d.domain, need)
		return h
	}
	return nil
}
