package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/udrain/udrain/eviction"
)

func comparison(run int, terminate time.Duration, u, k Side) *Comparison {
	c := &Comparison{Run: run, Shape: Shape{UDs: 3, PerUD: 5, Workloads: 1, Size: 8, GPUsPerPod: 4, TerminateDelay: terminate},
		Block: 30 * time.Second, UpgradeStep: 2 * time.Second, Udrain: u, Kubectl: k}
	u.Tool, k.Tool = "udrain", "kubectl drain"
	c.Udrain, c.Kubectl = u, k
	if k.RequestsPerEvictedPod > 0 {
		c.RequestRatio = u.RequestsPerEvictedPod / k.RequestsPerEvictedPod
	}
	return c
}

// fleetRun is a fleet result of the given mode with the figures issue 22
// compares.
func fleetRun(mode FleetMode, ordinary int, sf Safety, pending int, ratio float64) *FleetResult {
	order := []string{"ud20", "ud0", "ud1"}
	if mode == FleetOld {
		order = []string{"ud0", "ud1", "ud20"}
	}
	fl := &FleetResult{Shape: FullFleet(), Mode: mode, UpgradeStep: 2 * time.Second, GroupPodsEvicted: 2000, OrdinaryPodsEvicted: ordinary,
		EvictionsPerOrdinaryPod: perOrdinaryPod(ordinary, FullFleet()), GroupPodsOnPending: pending, DomainOrder: order, SpareDomains: []string{"ud20"},
		Udrain: Side{Tool: "udrain", Wall: 20 * time.Minute, RequestsPerEvictedPod: 1.2, EvictedPods: 2000 + ordinary,
			Audit: &AuditCheck{AuditTotal: 16000, Agrees: true}, Safety: sf, Memory: &Memory{PeakHeapAlloc: 100 << 20, MaxRSS: 200 << 20},
			Breakdown: &Breakdown{Wall: 20 * time.Minute, Bound: time.Duration(float64(20*time.Minute) / ratio), Ratio: ratio, BoundObserved: 19 * time.Minute, RatioObserved: 1.05}},
	}
	if mode != FleetOld {
		fl.InFlight = &InFlight{Most: 1, Mean: 1, MostClosed: 1, MeanClosed: 0.7}
	}
	if pending > 0 {
		fl.PendingExamples = []string{"ns/llm-0-0 on n1 (ud1) at 10:00:31.000"}
	}
	return fl
}

func TestWriteMarkdown(t *testing.T) {
	parallel := fleetRun(FleetParallel, 14000, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 0.5)
	parallel.Udrain.Wall = 8 * time.Minute
	parallel.RolloutLoad = &Load{Wall: 8 * time.Minute, CPUs: 2, CPU: map[string]time.Duration{"kube-apiserver": 10 * time.Minute, "kube-scheduler": 4 * time.Minute}}
	parallel.InFlight = &InFlight{Most: 4, Mean: 2.5, MostClosed: 3, MeanClosed: 2, Held: map[eviction.BlockReason]int{eviction.BlockRoom: 12, eviction.BlockBudget: 3},
		HeldExamples: []string{"ud3: room for llm-0/1"}}
	once := Safety{Groups: 3, Disruptions: 3, DisruptedOnce: 3}
	twice := Safety{Groups: 3, Disruptions: 4, DisruptedOnce: 2, DisruptedMore: 1, MaxDisruptions: 2, MinMargin: -1, MinMarginRaw: -1}
	req := Requests{{Request: Request{Verb: "create", Resource: "pods/eviction"}, Count: 10, TooMany: 2}, {Request: Request{Verb: "watch", Resource: "pods"}, Count: 1},
		{Request: Request{Verb: "create", Resource: "pods/eviction", DryRun: true}, Count: 1}}
	agrees := func(dev float64) *AuditCheck {
		return &AuditCheck{AuditTotal: 50, Deviation: dev, Agrees: dev <= AuditTolerance}
	}
	breakdown := func(ratio float64) *Breakdown {
		return &Breakdown{Wall: 30 * time.Second, Bound: time.Duration(float64(30*time.Second) / ratio), Ratio: ratio, BoundObserved: 29 * time.Second, RatioObserved: 30.0 / 29,
			Domains: []DomainTimes{{Domain: "ud0", Groups: 1, GroupsReady: -1}}}
	}
	for _, tc := range []struct {
		name string
		res  Results
		want []string // lines that must appear
		not  []string
	}{
		{
			name: "goals met",
			res: Results{
				APICost: []*Comparison{
					comparison(1, 3*time.Second, Side{Requests: req, RequestsPerEvictedPod: 1, Safety: once, Audit: agrees(0.02), Unblocked: 90 * time.Millisecond, UnblockedAfterBudget: 50 * time.Millisecond},
						Side{RequestsPerEvictedPod: 10, Safety: twice, Audit: agrees(0), UnblockedAfterBudget: 4 * time.Second}),
					comparison(2, 3*time.Second, Side{Requests: req, RequestsPerEvictedPod: 1.5, Safety: once, Audit: agrees(0), UnblockedAfterBudget: 80 * time.Millisecond},
						Side{RequestsPerEvictedPod: 10, Safety: twice, Audit: agrees(0.01), UnblockedAfterBudget: 2 * time.Second}),
				},
				Rollout: []*Comparison{comparison(1, 3*time.Second, Side{Wall: 30 * time.Second, Safety: once, Breakdown: breakdown(1.1)},
					Side{Wall: 90 * time.Second, Safety: twice, Err: "node n: global timeout reached"})},
			},
			want: []string{
				"| API requests per evicted pod, drain of one domain (8 pods) with a 30.0s PDB block, pods terminating in 3.0s | 1.25 [1.00–1.50] | 10.00 | 0.12 [0.10–0.15] | ≤ 0.25 | yes |",
				"| API cost runs: harness's request count against the audit log (worst deviation; runs within 5%) | 2.0%; 2 of 2 | 1.0%; 2 of 2 |  | ≤ 5% | yes |",
				"| API cost runs: blocked leader evicted after its PDB allowed a disruption (p50 / p95 / max over 2) | 50ms / 80ms / 80ms | 2.0s / 4.0s / 4.0s |  | p95 ≤ 100ms | yes |",
				"| rollout: harness's request count against the audit log (worst deviation; runs within 5%) | no audit log | no audit log |  | ≤ 5% | not checked |",
				"| create pods/eviction (dry run) | 1 | – |",
				"| rollout time over its lower bound (configured termination delay) | 1.10 |  |  | ≤ 1.25 | yes |",
				"| rollout wall time (s) | 30.0 | 90.0 (1 of 1 did not finish) |  |  |  |",
				"| rollout: every group disrupted exactly once (most disruptions of one group) | yes (0) | no (2) |  | each group once | yes |",
				"| rollout: fewest healthy groups − PDB minAvailable | +0 | -1 |  | ≥ 0 | yes |",
				"| create pods/eviction | 10 (2 × 429) | – |",
				"| ud0 | 1 | 0 | 0 | 0 (0) | 0 (0) | 0 | 0 | not seen | 0 | 0 | 0 (0) |",
			},
			not: []string{"**no**"},
		},
		{
			name: "goals missed, by termination delay",
			res: Results{
				APICost: []*Comparison{
					comparison(1, 0, Side{RequestsPerEvictedPod: 3, Safety: once, UnblockedAfterBudget: 150 * time.Millisecond}, Side{RequestsPerEvictedPod: 7, Safety: twice}),
					comparison(1, 3*time.Second, Side{RequestsPerEvictedPod: 3, Safety: once, UnblockedAfterBudget: 40 * time.Millisecond}, Side{RequestsPerEvictedPod: 9, Safety: twice}),
					comparison(1, 10*time.Second, Side{RequestsPerEvictedPod: 3, Safety: once, Audit: agrees(0.06), UnblockedAfterBudget: 30 * time.Millisecond}, Side{RequestsPerEvictedPod: 20, Safety: twice}),
				},
				Rollout: []*Comparison{comparison(1, 3*time.Second, Side{Wall: 30 * time.Second, Safety: twice, Breakdown: breakdown(1.5)}, Side{Safety: once})},
			},
			want: []string{
				"| API requests per evicted pod, drain of one domain (8 pods) with a 30.0s PDB block, pods terminating in 0 | 3.00 | 7.00 | 0.43 | ≤ 0.40 | **no** |",
				"| API requests per evicted pod, drain of one domain (8 pods) with a 30.0s PDB block, pods terminating in 3.0s | 3.00 | 9.00 | 0.33 | ≤ 0.25 | **no** |",
				"| API requests per evicted pod, drain of one domain (8 pods) with a 30.0s PDB block, pods terminating in 10.0s | 3.00 | 20.00 | 0.15 | ≤ 0.20 | **flagged: the count disagrees with the audit log** |",
				"| API cost runs: harness's request count against the audit log (worst deviation; runs within 5%) | 6.0%; 0 of 1 | no audit log |  | ≤ 5% | **no** |",
				"| API cost runs: blocked leader evicted after its PDB allowed a disruption (p50 / p95 / max over 3) | 40ms / 150ms / 150ms | not seen |  | p95 ≤ 100ms | **no** |",
				"| rollout time over its lower bound (configured termination delay) | 1.50 |  |  | ≤ 1.25 | **no** |",
				"| rollout time over its lower bound (termination as the recording saw it) | 1.03 |  |  | ≤ 1.25 | yes |",
				"| rollout: every group disrupted exactly once (most disruptions of one group) | no (2) | yes (0) |  | each group once | **no** |",
				"| rollout: fewest healthy groups − PDB minAvailable | -1 | +0 |  | ≥ 0 | **no** |",
			},
		},
		{
			name: "fleet",
			res: Results{Fleet: &FleetResult{Shape: FullFleet(), UpgradeStep: 2 * time.Second, GroupPodsEvicted: 2000, OrdinaryPodsEvicted: 14000,
				Udrain: Side{Tool: "udrain", Wall: 20 * time.Minute, RequestsPerEvictedPod: 2.5, EvictedPods: 16000, WatchBytes: 300 << 20,
					Requests:  Requests{{Request: Request{Verb: "create", Resource: "pods/eviction"}, Count: 16000}},
					Audit:     &AuditCheck{AuditTotal: 16000, Agrees: true},
					Safety:    Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250},
					Memory:    &Memory{PeakHeapAlloc: 100 << 20, MaxRSS: 400 << 20},
					Breakdown: &Breakdown{Wall: 20 * time.Minute, Bound: 18 * time.Minute, Ratio: 1.11, BoundObserved: 19 * time.Minute, RatioObserved: 1.05}},
				RolloutLoad: &Load{Wall: 10 * time.Second, CPUs: 2, MachineBusy: 0.95, CPU: map[string]time.Duration{"kube-apiserver": 8 * time.Second}, PeakRSS: map[string]int64{"kube-apiserver": 2 << 30}},
			}},
			want: []string{
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s)): completes, each group once, never below minAvailable, leaders first | yes in 1200.0s | not run |  | same guarantees | yes |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s)): rollout time over its lower bound (configured termination / as observed) | 1.11 / 1.05 |  |  | ≤ 1.25 | yes |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s)): drainer peak Go heap | 100.0 MiB |  |  | ≤ 150.0 MiB | yes |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s)): drainer peak RSS | 400.0 MiB |  |  | ≤ 300.0 MiB | **no** |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s)): API requests per evicted pod (group and ordinary pods; audit log) | 2.50 (16000 / 16000; audit 16000 (0.0% apart)) |  |  | ≤ 1.5 | **no** |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s)): bytes received from watches by the drainer | 300.0 MiB |  |  | reported |  |",
				"| evictions accepted: group pods / ordinary pods (audit log, by namespace) | 2000 / 14000 |",
				"| kube-apiserver | 8.0s | 0.80 | 2048.0 MiB |",
			},
		},
		{
			name: "fleet, old and new side by side",
			res: Results{
				FleetOld: fleetRun(FleetOld, 21000, Safety{Groups: 250, Disruptions: 263, DisruptedOnce: 237, DisruptedMore: 13, MaxDisruptions: 2}, 104, 1.6),
				Fleet:    fleetRun(FleetNew, 14350, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 1.2),
			},
			want: []string{
				"| figure | old (old behaviour) | new (udrain's default) |",
				"| evictions per ordinary pod (ordinary evictions, audit log / Deployment pods) | 1.50 (21000 / 14000) | 1.02 (14350 / 14000) |",
				"| groups disrupted more than once (pod recording) | 13 of 250 | 0 of 250 |",
				"| group pods started on a domain not upgraded yet (pod recording) | 104 | 0 |",
				"| rollout; lower bound; ratio (termination observed) | 1200.0s; 750.0s; 1.60 (1.05) | 1200.0s; 1000.0s; 1.20 (1.05) |",
				"| domain order | ud0, ud1, ud20 | ud20, ud0, ud1 |",
				"### old: the old behaviour: no steering taint (Steering Off), the domains in natural order (Order Given), the spare last",
				"### new: udrain's default: one domain at a time, pending domains tainted by udrain's default steering, the domains that evict nothing first (Order SpareFirst)",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s); old behaviour): groups disrupted more than once (the harness's pod recording) | 13 |  |  |  |  |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s); udrain's default): groups disrupted more than once (the harness's pod recording) | 0 |  |  | 0 | yes |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s); udrain's default): evictions per ordinary pod (audit log / Deployment pods) | 1.02 (14350 / 14000) |  |  | ≤ 1.05 | yes |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s); udrain's default): rollout time over its lower bound (configured termination / as observed) | 1.20 / 1.05 |  |  | ≤ 1.25 | yes |",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s); old behaviour): completes, each group once, never below minAvailable, leaders first | no in 1200.0s | not run |  |  |  |",
				"| group pods started on a domain the rollout had not reached (pod recording) | 104 (ns/llm-0-0 on n1 (ud1) at 10:00:31.000) |",
			},
			not: []string{"**no**"},
		},
		{
			name: "fleet, three modes side by side, strict last",
			res: Results{
				FleetStrict: fleetRun(FleetStrict, 14000, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 1.3),
				FleetOld:    fleetRun(FleetOld, 21000, Safety{Groups: 250, Disruptions: 263, DisruptedOnce: 237, DisruptedMore: 13, MaxDisruptions: 2}, 104, 1.6),
				Fleet:       fleetRun(FleetNew, 14350, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 1.2),
			},
			want: []string{
				"| figure | old (old behaviour) | new (udrain's default) | strict (strict steering) |",
				"| evictions per ordinary pod (ordinary evictions, audit log / Deployment pods) | 1.50 (21000 / 14000) | 1.02 (14350 / 14000) | 1.00 (14000 / 14000) |",
				"### strict: udrain's strict steering: pending domains tainted NoSchedule (Steering Strict), the domains that evict nothing first (Order SpareFirst)",
				"| fleet (2000 nodes, 20 domains, 250 groups of 8, 18000 ordinary pods, 1 spare domain(s); strict steering): rollout time over its lower bound (configured termination / as observed) | 1.30 / 1.05 |  |  | ≤ 1.25 | **no** |",
			},
		},
		{
			name: "fleet, the default on a scheduler that scores every node, beside the default",
			res: Results{
				FleetScoreAll: fleetRun(FleetNewScoreAll, 14000, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 1.2),
				Fleet:         fleetRun(FleetNew, 14350, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 1.2),
			},
			want: []string{
				"| figure | new (udrain's default) | new-score-all (udrain's default, the scheduler scoring every node) |",
				"| evictions per ordinary pod (ordinary evictions, audit log / Deployment pods) | 1.02 (14350 / 14000) | 1.00 (14000 / 14000) |",
				"### new-score-all: udrain's default (its default Steering, Order SpareFirst) with kube-scheduler scoring every feasible node (percentageOfNodesToScore: 100) instead of its adaptive sample",
			},
		},
		{
			name: "fleet, one domain at a time and parallel domains side by side",
			res: Results{
				FleetParallel: parallel,
				Fleet:         fleetRun(FleetNew, 14000, Safety{Groups: 250, Disruptions: 250, DisruptedOnce: 250}, 0, 1.2),
			},
			want: []string{
				"| figure | new (udrain's default) | parallel (udrain's default, parallel domains) |",
				"| rollout wall time; against the first column's | 1200.0s; 1.00 | 480.0s; 0.40 |",
				"| domains in flight at once: most / mean; cordoned (draining or upgrading) at once: most / mean | 1 / 1.00; 1 / 0.70 | 4 / 2.50; 3 / 2.00 |",
				"| domains held back (DomainHeld events by reason) | none | Budget 3, Room 12 |",
				"| drainer peak heap / RSS during the rollout | 100.0 MiB / 200.0 MiB | 100.0 MiB / 200.0 MiB |",
				"| fleet: rollout wall time with parallel domains against one at a time (480.0s against 1200.0s, same report) | 0.40 |  |  | ≤ 0.35 | **no** |",
				"| fleet: the least wall time the CPU work of the rollout with parallel domains allows on this machine (420.0s: CPU time of the processes metered over 2 CPUs), against one at a time | 0.35 |  |  | reported |  |",
				"| the least wall time the rollout's CPU work allows on this machine (the metered processes' CPU time / CPUs); against the first column's wall; the rollout over it | – | 420.0s; 0.35; 1.14 |",
				"| domains held back (DomainHeld events) | Budget 3, Room 12 (ud3: room for llm-0/1) |",
			},
		},
		{
			name: "scale, Go benchmarks, outage, errors",
			res: Results{
				Errors: []string{"api run 1: boom"},
				Scale: &ScaleResult{Shape: Shape{UDs: 10, PerUD: 50, Workloads: 10, Size: 8, GPUsPerPod: 4}, Udrain: Side{Tool: "udrain", Wall: 5 * time.Minute,
					Safety: Safety{Groups: 100, Disruptions: 100, DisruptedOnce: 100, Glitches: 2, MinMarginRaw: -1}, RequestsPerEvictedPod: 2.9,
					Memory: &Memory{PeakHeapAlloc: 30 << 20, MaxRSS: 100 << 20, UserCPU: 10 * time.Second, SystemCPU: 2 * time.Second}}},
				GoBench:         []GoBenchmark{{Package: "github.com/udrain/udrain/gpu", Name: "BenchmarkSummarize", Procs: 2, Iterations: 20, Metrics: []Metric{{73631996, "ns/op"}, {7363, "ns/node"}}}},
				BootstrapOutage: json.RawMessage(`{"outage_s":30,"clients_per_kind":20,"command":"go run ./hack/bench/bootstrap-outage -outage 30s -clients 20","notice_ratio_loop_over_helper":4.2,"requests_ratio_helper_over_loop":1.5,"helper":{"notice_median_ms":600,"requests_during_outage_mean":9},"sleep_loop":{"notice_median_ms":2500,"requests_during_outage_mean":6}}`),
			},
			want: []string{
				"**Failed:** api run 1: boom",
				"| scale (500 nodes, 10 domains, 100 groups of 8): completes, each group once, never below minAvailable | yes in 300.0s | not run |  | same guarantees | yes |",
				"| scale (500 nodes, 10 domains, 100 groups of 8): drainer peak heap / peak RSS / CPU | 30.0 MiB / 100.0 MiB / 12.0s |  |  |  |  |",
				"| fewest healthy − minAvailable (worst workload) | +0 (-1 with glitches) |",
				"| gpu | BenchmarkSummarize | 73631996 | – | – | 7363 ns/node |",
				"| bootstrap.WaitForServer | 600 ms | 9.0 |",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteMarkdown(&b, &tc.res); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			lines := map[string]bool{}
			for _, l := range strings.Split(out, "\n") {
				lines[l] = true
			}
			for _, w := range tc.want {
				if !lines[w] {
					t.Errorf("missing line\n%s\nin:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("unexpected %q in:\n%s", n, out)
				}
			}
		})
	}
}
