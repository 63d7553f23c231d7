package report_test

import (
	"testing"
	"time"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// TestFormatEvent pins the grammar of a progress line (docs/CLI.md).
func TestFormatEvent(t *testing.T) {
	at := time.Date(2026, 7, 1, 10, 1, 30, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    eviction.Event
		want string
	}{
		{"rollout", eviction.Event{Time: at, Type: eviction.EventRolloutStarted, Message: "rollout x over 2 domain(s)"},
			`2026-07-01T10:01:30Z RolloutStarted msg="rollout x over 2 domain(s)"`},
		{"node", eviction.Event{Time: at, Type: eviction.EventCordoned, Domain: "ud-1", Node: "gpu-1",
			Progress: eviction.PodCounts{Phase1Total: 1, Phase2Total: 2}, Message: "cordoned"},
			`2026-07-01T10:01:30Z Cordoned domain=ud-1 node=gpu-1 phase1=0/1 phase2=0/2 gone=0 msg="cordoned"`},
		{"pod", eviction.Event{Time: at, Type: eviction.EventEvicted, Domain: "ud-1", Stage: eviction.StagePhase2, Pod: &topology.PodRef{Namespace: "web", Name: "web-1", UID: "u1", Node: "cpu-1"}, Node: "cpu-1",
			Progress: eviction.PodCounts{Phase1Total: 1, Phase1Evicted: 1, Phase2Total: 2, Phase2Evicted: 1, Gone: 1}},
			`2026-07-01T10:01:30Z Evicted domain=ud-1 phase=2 pod=web/web-1 node=cpu-1 phase1=1/1 phase2=1/2 gone=1`},
		{"blocked", eviction.Event{Time: at, Type: eviction.EventBlocked, Domain: "ud-2", Stage: eviction.StagePhase1, Pod: &topology.PodRef{Namespace: "inference", Name: "llama-1"},
			Block:    &eviction.BlockInfo{BudgetRef: health.BudgetRef{Namespace: "inference", PDB: "llama-leaders"}, BudgetCounts: health.BudgetCounts{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}},
			Progress: eviction.PodCounts{Phase1Total: 1, Phase2Total: 1}, Message: `budget "spent"`},
			`2026-07-01T10:01:30Z Blocked domain=ud-2 phase=1 pod=inference/llama-1 pdb=inference/llama-leaders allowed=0 healthy=1 desired=1 expected=2 phase1=0/1 phase2=0/1 gone=0 msg="budget \"spent\""`},
		{"local time is shown in UTC", eviction.Event{Time: at.In(time.FixedZone("CEST", 2*3600)), Type: eviction.EventDrained, Domain: "ud-1"},
			`2026-07-01T10:01:30Z Drained domain=ud-1`},
		{"dry run", eviction.Event{Time: at, Type: eviction.EventCordoned, DryRun: "server", Domain: "ud-1", Node: "gpu-1", Message: "would be cordoned (server dry run)"},
			`2026-07-01T10:01:30Z Cordoned dryRun=server domain=ud-1 node=gpu-1 msg="would be cordoned (server dry run)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := report.FormatEvent(tc.e, time.RFC3339); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
