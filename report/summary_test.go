package report_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

var summaryT0 = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

// record is the record of a block of budget pdb that lasted d.
func record(pdb string, d time.Duration) eviction.BlockInfo {
	return eviction.BlockInfo{Reason: eviction.BlockRefused, BudgetRef: health.BudgetRef{Namespace: "ns", PDB: pdb}, Since: summaryT0, Until: summaryT0.Add(d), Duration: udrain.Seconds(d)}
}

func TestSummarizeRolloutLongestBlock(t *testing.T) {
	tests := []struct {
		name    string
		domains []eviction.RolloutDomain
		want    *eviction.BlockInfo
	}{
		{"nothing drained", []eviction.RolloutDomain{{Domain: "a", State: eviction.StateSkipped}}, nil},
		{"no block", []eviction.RolloutDomain{{Domain: "a", Drain: &eviction.Result{}}}, nil},
		{"a block of no time counts", []eviction.RolloutDomain{{Domain: "a", Drain: &eviction.Result{Blocks: []eviction.BlockInfo{record("p", 0)}}}}, new(record("p", 0))},
		{"longest over domains, first of equals", []eviction.RolloutDomain{
			{Domain: "a", Drain: &eviction.Result{Blocks: []eviction.BlockInfo{record("p", time.Second), record("q", 3*time.Second)}}},
			{Domain: "b", Drain: &eviction.Result{Blocks: []eviction.BlockInfo{record("r", 3*time.Second)}}},
		}, new(record("q", 3*time.Second))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := report.SummarizeRollout(&eviction.RolloutResult{Domains: tt.domains}).LongestBlock
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("longest block (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarize: the counts of a drain and of a rollout (a group disrupted
// in two domains counts once, and once again; a skipped domain is not
// done), with the longest downtime and block.
func TestSummarize(t *testing.T) {
	g := func(name string) topology.GroupID {
		return topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "ns", Name: name}
	}
	t1 := summaryT0.Add(time.Minute)
	short := eviction.GroupDowntime{Group: g("a"), From: "ud-1", To: "ud-1", Evicted: summaryT0, Healthy: &t1, Downtime: udrain.Seconds(time.Minute)}
	long := eviction.GroupDowntime{Group: g("b"), From: "ud-2", To: "ud-1", Evicted: summaryT0, Downtime: udrain.Seconds(2 * time.Minute)}
	drain1 := &eviction.Result{Domain: "ud-1", Pods: eviction.PodCounts{Phase1Evicted: 1, Phase2Evicted: 3}, GroupsDisrupted: []topology.GroupID{g("a"), g("b")},
		Blocks: []eviction.BlockInfo{record("p", time.Second)}, Completed: true, Duration: udrain.Seconds(time.Minute)}
	drain2 := &eviction.Result{Domain: "ud-2", Pods: eviction.PodCounts{Phase1Evicted: 1, Phase2Evicted: 2}, GroupsDisrupted: []topology.GroupID{g("b")}, Duration: udrain.Seconds(time.Minute)}
	if diff := cmp.Diff(report.Summary{DomainsDone: 1, DomainsTotal: 1, Phase1Evicted: 1, Phase2Evicted: 3, GroupsDisrupted: 2, LongestBlock: new(record("p", time.Second)),
		Duration: udrain.Seconds(time.Minute)}, report.SummarizeDrain(drain1)); diff != "" {
		t.Errorf("drain (-want +got):\n%s", diff)
	}
	if got := report.SummarizeDrain(drain2); got.DomainsDone != 0 || got.DomainsTotal != 1 {
		t.Errorf("a drain not completed: %d of %d done, want 0 of 1", got.DomainsDone, got.DomainsTotal)
	}
	res := &eviction.RolloutResult{Domains: []eviction.RolloutDomain{
		{Domain: "ud-0", State: eviction.StateSkipped},
		{Domain: "ud-1", State: eviction.StateDone, Drain: drain1, Groups: []eviction.GroupDowntime{short}},
		{Domain: "ud-2", State: eviction.StateFailed, Drain: drain2, Groups: []eviction.GroupDowntime{long}},
		{Domain: "ud-3", State: eviction.StatePending},
	}, Duration: udrain.Seconds(5 * time.Minute)}
	want := report.Summary{DomainsDone: 1, DomainsSkipped: 1, DomainsTotal: 4, Phase1Evicted: 2, Phase2Evicted: 5, GroupsDisrupted: 2, GroupsDisruptedAgain: 1,
		LongestDowntime: &long, LongestBlock: new(record("p", time.Second)), Duration: udrain.Seconds(5 * time.Minute)}
	if diff := cmp.Diff(want, report.SummarizeRollout(res)); diff != "" {
		t.Errorf("rollout (-want +got):\n%s", diff)
	}
}

// TestSummaryJSON pins a Summary's JSON, as eviction.Summary wrote it in
// the drain and rollout documents: its duration last, its longest block a
// block's record.
func TestSummaryJSON(t *testing.T) {
	t1 := summaryT0.Add(90 * time.Second)
	down := eviction.GroupDowntime{Group: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "ns", Name: "llm"}, From: "ud-1", To: "ud-2",
		Evicted: summaryT0, Healthy: &t1, Downtime: udrain.Seconds(90 * time.Second)}
	block := record("leaders", 1500*time.Millisecond)
	block.Pods = []topology.PodRef{{Namespace: "ns", Name: "llm-0"}}
	s := report.Summary{DomainsDone: 1, DomainsTotal: 1, Phase1Evicted: 1, LongestDowntime: &down, LongestBlock: &block, Duration: udrain.Seconds(2 * time.Second)}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	downJSON, err := json.Marshal(down)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"domainsDone":1,"domainsSkipped":0,"domainsTotal":1,"phase1Evicted":1,"phase2Evicted":0,"groupsDisrupted":0,` +
		`"longestDowntime":` + string(downJSON) + `,` +
		`"longestBlock":{"namespace":"ns","pdb":"leaders","since":"2026-07-01T10:00:00Z","pods":[{"namespace":"ns","name":"llm-0"}],"durationSeconds":1.5},` +
		`"durationSeconds":2}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	var back report.Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
