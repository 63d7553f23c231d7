package health

import (
	"strings"

	"github.com/udrain/udrain/topology"
)

// Blocker is a PodDisruptionBudget that would refuse, right now, the
// evictions a drain's plan charges to it (eviction's Plan.Blockers: its
// phase 1, the pods budgets select).
type Blocker struct {
	BudgetRef
	// Needed is how many disruptions the plan charges to it.
	Needed int `json:"needed"`
	// The budget's status when the plan was made.
	BudgetCounts
}

// BudgetPod is a pod a budget selects and does not count healthy: why the
// budget allows no disruption (eviction's BlockInfo.Unhealthy).
type BudgetPod struct {
	Pod  topology.PodRef `json:"pod"`
	Node string          `json:"node,omitempty"`
	// NodeNotReady: its node's Ready condition is not True (the node is
	// offline, unreachable, or gone).
	NodeNotReady bool `json:"nodeNotReady,omitempty"`
	// Terminating: the pod is being deleted (by an eviction, or by the
	// node lifecycle controller after its node went NotReady).
	Terminating bool `json:"terminating,omitempty"`
	// Down are, for a pod of a group (a leader the budget selects), the
	// group's other members that are not healthy: why the leader is not
	// (its readiness follows its group's). eviction keeps at most 10.
	Down []BudgetPod `json:"down,omitempty"`
}

func (p BudgetPod) String() string {
	s := p.Pod.String()
	if p.Node != "" {
		s += " on node " + p.Node
		if p.NodeNotReady {
			s += " (NotReady)"
		}
	} else {
		s += " (not scheduled)"
	}
	if p.Terminating {
		s += ", terminating"
	}
	if len(p.Down) > 0 {
		parts := make([]string, len(p.Down))
		for i, d := range p.Down {
			parts[i] = d.String()
		}
		s += " (its group's members down: " + strings.Join(parts, ", ") + ")"
	}
	return s
}
