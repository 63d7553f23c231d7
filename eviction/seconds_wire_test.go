package eviction

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// TestResultDurationsOnTheWire checks that every result type with a
// duration writes it under its wire name, in seconds, last in the object
// (where the hand-spliced JSON of udrain 0.1 put them, an order the CLI's
// golden files pin), and reads it back.
func TestResultDurationsOnTheWire(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(90 * time.Second)
	g := topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "ns", Name: "llm"}
	block := BlockInfo{Reason: BlockRefused, BudgetRef: health.BudgetRef{Namespace: "ns", PDB: "leaders"}, Since: t0, Pods: []topology.PodRef{{Namespace: "ns", Name: "llm-0"}},
		Until: t0.Add(1500 * time.Millisecond), Duration: udrain.Seconds(1500 * time.Millisecond)}
	down := GroupDowntime{Group: g, From: "ud-1", To: "ud-2", Evicted: t0, Healthy: &t1, Downtime: udrain.Seconds(90 * time.Second)}
	drain := Result{ID: "r1", Domain: "ud-1", Pods: PodCounts{Phase1Total: 1, Phase1Evicted: 1}, Phase1Duration: udrain.Seconds(time.Second),
		Blocks: []BlockInfo{block}, Completed: true, Started: t0, Duration: udrain.Seconds(90 * time.Minute)}
	for _, tc := range []struct {
		v any
		// seconds are the wire names of its durations, in order, with
		// their values.
		seconds [][2]string
	}{
		{block, [][2]string{{"durationSeconds", "1.5"}}},
		{drain, [][2]string{{"durationSeconds", "5400"}}},
		{RolloutDomain{Domain: "ud-1", State: StateDone, Drain: &drain, Groups: []GroupDowntime{down},
			Upgrade: udrain.Seconds(1500 * time.Millisecond), Recovery: udrain.Seconds(90 * time.Minute), Duration: udrain.Seconds(time.Nanosecond)},
			[][2]string{{"upgradeSeconds", "1.5"}, {"recoverySeconds", "5400"}, {"durationSeconds", "0.000000001"}}},
		{RolloutResult{ID: "r1", Domains: []RolloutDomain{{Domain: "ud-1", State: StateDone, Duration: udrain.Seconds(time.Second)}}, Completed: true,
			Started: t0, Duration: udrain.Seconds(3 * time.Minute)}, [][2]string{{"durationSeconds", "180"}}},
		{down, [][2]string{{"downtimeSeconds", "90"}}},
	} {
		typ := reflect.TypeOf(tc.v)
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", typ.Name(), err)
		}
		keys, values := topLevel(t, b)
		if len(keys) < len(tc.seconds) {
			t.Fatalf("%s: %s has fewer keys than %v", typ.Name(), b, tc.seconds)
		}
		var got [][2]string
		for i := len(keys) - len(tc.seconds); i < len(keys); i++ {
			got = append(got, [2]string{keys[i], string(values[keys[i]])})
		}
		if diff := cmp.Diff(tc.seconds, got); diff != "" {
			t.Errorf("%s: the last keys of %s (-want +got):\n%s", typ.Name(), b, diff)
		}
		back := reflect.New(typ)
		if err := json.Unmarshal(b, back.Interface()); err != nil {
			t.Fatalf("%s: %v", typ.Name(), err)
		}
		if diff := cmp.Diff(tc.v, back.Elem().Interface()); diff != "" {
			t.Errorf("%s: round trip of %s (-want +got):\n%s", typ.Name(), b, diff)
		}
	}
}

// checkWire checks that v's JSON is want, and that it reads back as v.
func checkWire[T any](t *testing.T, v T, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// topLevel returns the keys of the JSON object b in order, and their raw
// values.
func topLevel(t *testing.T, b []byte) ([]string, map[string]json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not an object: %v %v", b, tok, err)
	}
	var keys []string
	values := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		values[k] = v
	}
	return keys, values
}

// TestResultJSON pins Result's JSON: its counts and phase durations as an
// object per phase, its dry run's pods as outcomes with their Stage as a
// phase number and RequestGone as AlreadyGone, as udrain 0.1's
// PhaseResult, Phase and DryRunOutcome wrote them; and reads it back.
func TestResultJSON(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	pod := topology.PodRef{Namespace: "ns", Name: "llm-0"}
	for _, tc := range []struct {
		name string
		r    Result
		want string
	}{
		{"counts per phase", Result{ID: "r1", Domain: "ud-1",
			Pods:           PodCounts{Phase1Total: 2, Phase1Evicted: 1, Phase1AlreadyGone: 1, Phase2Total: 3, Phase2Evicted: 1, Phase2AlreadyGone: 1, Phase2AlreadyTerminating: 1},
			Phase1Duration: udrain.Seconds(1500 * time.Millisecond), Phase2Duration: udrain.Seconds(2 * time.Second), Completed: true, Started: t0, Duration: udrain.Seconds(4 * time.Second)},
			`{"id":"r1","domain":"ud-1",` +
				`"phase1":{"pods":2,"evicted":1,"alreadyGone":1,"alreadyTerminating":0,"durationSeconds":1.5},` +
				`"phase2":{"pods":3,"evicted":1,"alreadyGone":1,"alreadyTerminating":1,"durationSeconds":2},` +
				`"completed":true,"started":"2026-07-01T10:00:00Z","durationSeconds":4}`},
		{"dry run", Result{ID: "r1", Domain: "ud-1", DryRun: "server", Pods: PodCounts{Phase1Total: 1, Phase2Total: 1},
			DryRunPods: []PlannedPod{{PodRef: pod, Stage: StagePhase1, DryRun: WouldEvict, DryRunMessage: "would evict"}, {PodRef: pod, Stage: StagePhase2, DryRun: RequestGone, DryRunMessage: "already gone"}},
			Completed:  true, Started: t0},
			`{"id":"r1","domain":"ud-1","dryRun":"server",` +
				`"phase1":{"pods":1,"evicted":0,"alreadyGone":0,"alreadyTerminating":0,"durationSeconds":0},` +
				`"phase2":{"pods":1,"evicted":0,"alreadyGone":0,"alreadyTerminating":0,"durationSeconds":0},` +
				`"dryRunOutcomes":[{"pod":{"namespace":"ns","name":"llm-0"},"phase":1,"verdict":"WouldEvict","message":"would evict"},` +
				`{"pod":{"namespace":"ns","name":"llm-0"},"phase":2,"verdict":"AlreadyGone","message":"already gone"}],` +
				`"completed":true,"started":"2026-07-01T10:00:00Z","durationSeconds":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWire(t, tc.r, tc.want)
		})
	}
	var r Result
	if err := json.Unmarshal([]byte(`{"dryRunOutcomes":[{"pod":{"namespace":"ns","name":"llm-0"},"phase":3,"verdict":"WouldEvict","message":""}]}`), &r); err == nil {
		t.Errorf("phase 3 read as %+v, want an error", r.DryRunPods)
	}
}

// TestBlockInfoJSON pins BlockInfo's three forms on the wire: a refusal
// that lasts with its counts and no duration or reason (as in an event or
// a dry run's outcome), a block's record (Until set) as udrain 0.1's
// BlockRecord wrote it, its end carried by the duration, and a hold as
// udrain 0.1's Hold wrote it; and reads each back.
func TestBlockInfoJSON(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	ref := health.BudgetRef{Namespace: "ns", PDB: "leaders"}
	pods := []topology.PodRef{{Namespace: "ns", Name: "llm-0"}}
	for _, tc := range []struct {
		name string
		b    BlockInfo
		want string
	}{
		{"lasting", BlockInfo{Reason: BlockRefused, BudgetRef: ref, BudgetCounts: health.BudgetCounts{CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3}, Since: t0, Pods: pods, Message: "would violate",
			Unhealthy: []health.BudgetPod{{Pod: topology.PodRef{Namespace: "ns", Name: "llm-1"}, Node: "gpu-7", NodeNotReady: true}}},
			`{"namespace":"ns","pdb":"leaders","disruptionsAllowed":0,"currentHealthy":2,"desiredHealthy":2,"expectedPods":3,"since":"2026-07-01T10:00:00Z",` +
				`"pods":[{"namespace":"ns","name":"llm-0"}],"message":"would violate","unhealthy":[{"pod":{"namespace":"ns","name":"llm-1"},"node":"gpu-7","nodeNotReady":true}]}`},
		{"record", BlockInfo{Reason: BlockRefused, BudgetRef: ref, Since: t0, Pods: pods, Until: t0.Add(90 * time.Second), Duration: udrain.Seconds(90 * time.Second)},
			`{"namespace":"ns","pdb":"leaders","since":"2026-07-01T10:00:00Z","pods":[{"namespace":"ns","name":"llm-0"}],"durationSeconds":90}`},
		{"record of no time", BlockInfo{Reason: BlockRefused, BudgetRef: ref, Since: t0, Until: t0},
			`{"namespace":"ns","pdb":"leaders","since":"2026-07-01T10:00:00Z","durationSeconds":0}`},
		// A hold as udrain 0.1's Hold wrote it (the budget an object).
		{"hold by a budget", BlockInfo{Reason: BlockBudget, Domain: "ud-3", BudgetRef: ref, Rule: "maxUnavailable 2", Allowed: 2, Down: 2, Needed: 1, InFlight: []string{"ud-1", "ud-2"},
			Message: "PodDisruptionBudget ns/leaders allows 2 down"},
			`{"domain":"ud-3","reason":"Budget","budget":{"namespace":"ns","pdb":"leaders"},"rule":"maxUnavailable 2","allowed":2,"down":2,"needed":1,` +
				`"inFlight":["ud-1","ud-2"],"message":"PodDisruptionBudget ns/leaders allows 2 down"}`},
		{"hold by room", BlockInfo{Reason: BlockRoom, Domain: "ud-3", Group: &topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "ns", Name: "llm-0"}, To: "ud-4",
			InFlight: []string{"ud-1"}, Message: "no room"},
			`{"domain":"ud-3","reason":"Room","group":{"kind":"LeaderWorkerSet","namespace":"ns","name":"llm-0"},"to":"ud-4","inFlight":["ud-1"],"message":"no room"}`},
		{"hold by the limit", BlockInfo{Reason: BlockLimit, Domain: "ud-3", Allowed: 2, Message: "2 domains in flight"},
			`{"domain":"ud-3","reason":"Limit","allowed":2,"message":"2 domains in flight"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWire(t, tc.b, tc.want)
		})
	}
}

func TestBlockInfoString(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	ref := health.BudgetRef{Namespace: "ns", PDB: "leaders"}
	for _, tc := range []struct {
		b    BlockInfo
		want string
	}{
		{BlockInfo{BudgetRef: ref, BudgetCounts: health.BudgetCounts{CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3}, Since: t0,
			Unhealthy: []health.BudgetPod{{Pod: topology.PodRef{Namespace: "ns", Name: "llm-1"}, Node: "gpu-7", NodeNotReady: true}}},
			"PodDisruptionBudget ns/leaders allows 0 disruption(s): 2 healthy, 2 needed, 3 expected; not healthy: ns/llm-1 on node gpu-7 (NotReady)"},
		{BlockInfo{BudgetRef: ref, Since: t0, Pods: []topology.PodRef{{Namespace: "ns", Name: "llm-0"}, {Namespace: "ns", Name: "llm-2"}}, Until: t0.Add(90 * time.Second), Duration: udrain.Seconds(90 * time.Second)},
			"PodDisruptionBudget ns/leaders refused evictions for 1m30s (2 pod(s) waited)"},
		{BlockInfo{Reason: BlockLimit, Domain: "ud-3", Allowed: 2, Message: "2 domains in flight (the limit)"}, "2 domains in flight (the limit)"},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestRolloutDomainJSON pins a RolloutDomain's JSON in each of its uses:
// a plan's, a status's and a result's domain carry only their own fields.
func TestRolloutDomainJSON(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	hold := &BlockInfo{Domain: "ud-3", Reason: BlockLimit, Allowed: 2, InFlight: []string{"ud-1", "ud-2"}, Message: "2 domains in flight"}
	for _, tc := range []struct {
		name string
		d    RolloutDomain
		want string
	}{
		{"a plan's, upgraded already", RolloutDomain{Domain: "ud-1", State: StateSkipped}, `{"domain":"ud-1","state":"Skipped"}`},
		{"a plan's, scheduled", RolloutDomain{Domain: "ud-3", State: StatePending, After: "ud-1", With: []string{"ud-2"}, HeldBy: hold},
			`{"domain":"ud-3","state":"Pending","after":"ud-1","with":["ud-2"],` +
				`"heldBy":{"domain":"ud-3","reason":"Limit","allowed":2,"inFlight":["ud-1","ud-2"],"message":"2 domains in flight"}}`},
		{"a status's", RolloutDomain{Domain: "ud-1", State: StateDone, Since: &t0, Nodes: 3, Upgraded: 3},
			`{"domain":"ud-1","state":"Done","since":"2026-07-01T10:00:00Z","nodes":3,"upgraded":3}`},
		{"a status's, pending", RolloutDomain{Domain: "ud-2", State: StatePending, Nodes: 2, Pods: 4},
			`{"domain":"ud-2","state":"Pending","nodes":2,"pods":4}`},
		{"a result's, not reached", RolloutDomain{Domain: "ud-2", State: StatePending}, `{"domain":"ud-2","state":"Pending"}`},
		{"a result's, done", RolloutDomain{Domain: "ud-1", State: StateDone, After: "ud-9", Health: &health.DomainStatus{Domain: "ud-1", Healthy: true},
			Upgrade: udrain.Seconds(time.Second), Recovery: udrain.Seconds(2 * time.Second), Duration: udrain.Seconds(4 * time.Second)},
			`{"domain":"ud-1","state":"Done","after":"ud-9","health":{"domain":"ud-1","healthy":true},"upgradeSeconds":1,"recoverySeconds":2,"durationSeconds":4}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWire(t, tc.d, tc.want)
		})
	}
}

// TestPlannedPodJSON pins the JSON of a plan's pods: those it skips or
// refuses carry their reason, as udrain 0.1's PodReason wrote them; those
// it evicts carry none (the key is left out), as before.
func TestPlannedPodJSON(t *testing.T) {
	group := topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "ns", Name: "llm-0"}
	for _, tc := range []struct {
		name string
		pods []PlannedPod
		want string
	}{
		{"skipped and refused", []PlannedPod{
			{PodRef: topology.PodRef{Namespace: "kube-system", Name: "agent-a", UID: "u1", Node: "n1"}, Reason: "ignoring DaemonSet-managed Pods"},
			{PodRef: topology.PodRef{Namespace: "ns", Name: "debug", UID: "u2", Node: "n2"}, Reason: "cannot delete Pods that declare no controller (use --force to override)"},
		}, `[{"namespace":"kube-system","name":"agent-a","uid":"u1","node":"n1","reason":"ignoring DaemonSet-managed Pods"},` +
			`{"namespace":"ns","name":"debug","uid":"u2","node":"n2","reason":"cannot delete Pods that declare no controller (use --force to override)"}]`},
		{"evicted", []PlannedPod{
			{PodRef: topology.PodRef{Namespace: "ns", Name: "llm-0", UID: "u3", Node: "n1"}, PDBs: []string{"llm"}, Group: &group, Leader: true},
			{PodRef: topology.PodRef{Namespace: "ns", Name: "cache", UID: "u4", Node: "n1"}, Warning: "deleting Pods with local storage"},
		}, `[{"namespace":"ns","name":"llm-0","uid":"u3","node":"n1","pdbs":["llm"],"group":{"kind":"LeaderWorkerSet","namespace":"ns","name":"llm-0"},"leader":true},` +
			`{"namespace":"ns","name":"cache","uid":"u4","node":"n1","warning":"deleting Pods with local storage"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWire(t, tc.pods, tc.want)
		})
	}
}
