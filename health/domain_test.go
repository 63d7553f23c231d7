package health_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

func TestDomainStatusUnhealthy(t *testing.T) {
	ok := health.GroupStatus{ID: topology.GroupID{Namespace: "ns", Name: "vllm-0"}, Healthy: true}
	down := health.GroupStatus{ID: topology.GroupID{Namespace: "ns", Name: "vllm-1"}, Reason: health.ReasonMemberMissing}
	caughtUp := health.BudgetStatus{Namespace: "ns", Name: "leaders", Healthy: true}
	stale := health.BudgetStatus{Namespace: "ns", Name: "workers", Message: "not caught up"}
	for _, tc := range []struct {
		name string
		in   health.DomainStatus
		want health.DomainStatus
	}{
		{"healthy", health.DomainStatus{Domain: "ud-1", Healthy: true, Groups: []health.GroupStatus{ok}, Budgets: []health.BudgetStatus{caughtUp}},
			health.DomainStatus{Domain: "ud-1", Healthy: true}},
		{"a group and a budget down", health.DomainStatus{Domain: "ud-2", Groups: []health.GroupStatus{ok, down}, Budgets: []health.BudgetStatus{stale, caughtUp}},
			health.DomainStatus{Domain: "ud-2", Groups: []health.GroupStatus{down}, Budgets: []health.BudgetStatus{stale}}},
		{"empty", health.DomainStatus{Domain: "ud-3", Healthy: true}, health.DomainStatus{Domain: "ud-3", Healthy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.Unhealthy()); diff != "" {
				t.Errorf("Unhealthy() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDomainJSON pins the wire form of DomainStatus and Report (their own
// keys; GroupStatus's and BudgetStatus's are their own tests'), which the
// CLI's documents carry (docs/CLI.md: health.DomainStatus, health.Report).
func TestDomainJSON(t *testing.T) {
	group := health.GroupStatus{ID: topology.GroupID{Namespace: "ns", Name: "vllm-0"}, Workload: "lws", Reason: health.ReasonMemberMissing}
	budget := health.BudgetStatus{Namespace: "ns", Name: "leaders", Healthy: true}
	g, b := marshal(t, group), marshal(t, budget)
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"a domain, zero", health.DomainStatus{}, `{"domain":"","healthy":false}`},
		{"a domain", health.DomainStatus{Domain: "ud-1", Healthy: true, Groups: []health.GroupStatus{group}, Budgets: []health.BudgetStatus{budget}},
			`{"domain":"ud-1","healthy":true,"groups":[` + g + `],"budgets":[` + b + `]}`},
		{"a report, zero", health.Report{}, `{"healthy":false,"domains":null}`},
		{"a report", health.Report{Healthy: true, Domains: []health.DomainStatus{{Domain: "ud-1", Healthy: true}}},
			`{"healthy":true,"domains":[{"domain":"ud-1","healthy":true}]}`},
		{"a report, unscheduled", health.Report{Domains: []health.DomainStatus{}, Unscheduled: []health.GroupStatus{group}},
			`{"healthy":false,"domains":[],"unscheduled":[` + g + `]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, marshal(t, tc.in)); diff != "" {
				t.Errorf("json.Marshal (-want +got):\n%s", diff)
			}
		})
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
