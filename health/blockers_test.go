package health

import (
	"testing"

	"github.com/udrain/udrain/topology"
)

func TestBudgetPodString(t *testing.T) {
	pod := func(name string) topology.PodRef { return topology.PodRef{Namespace: "ns", Name: name} }
	for _, tc := range []struct {
		p    BudgetPod
		want string
	}{
		{BudgetPod{Pod: pod("a")}, "ns/a (not scheduled)"},
		{BudgetPod{Pod: pod("a"), Node: "n1"}, "ns/a on node n1"},
		{BudgetPod{Pod: pod("a"), Node: "n1", NodeNotReady: true, Terminating: true}, "ns/a on node n1 (NotReady), terminating"},
		{BudgetPod{Pod: pod("leader"), Node: "n1", Down: []BudgetPod{{Pod: pod("w1"), Node: "n2", NodeNotReady: true}, {Pod: pod("w2")}}},
			"ns/leader on node n1 (its group's members down: ns/w1 on node n2 (NotReady), ns/w2 (not scheduled))"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.p, got, tc.want)
		}
	}
}
