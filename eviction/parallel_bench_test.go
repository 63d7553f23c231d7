package eviction

import (
	"fmt"
	"maps"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

// parallelFleet is the fleet of issue 35's measure: 20 domains of 100
// 8-GPU nodes and a spare domain of 100, 250 LeaderWorkerSet groups of 8
// one-GPU pods (13 workloads, of 20 groups, one a domain, but the last of
// 10), each workload under a budget over its leaders allowing 4 down, and
// 9 ordinary pods a node (18,000) of one Deployment.
func parallelFleet() (*Snapshot, []string) {
	const domains, perDomain, groups, size = 20, 100, 250, 8
	snap, order := gpuFleetNodes(domains, 1, perDomain)
	order[domains] = "spare"
	relabelDomain(snap, "spare-0", "spare")
	one := resource.MustParse("1")
	for g := range groups {
		w, i := g/domains, g%domains
		lws := fmt.Sprintf("llm%d", w)
		for m := range size {
			p := kube.LWSPod(lws, i, m, size, kube.OnNode(fleetNode(i, (w*size+m)%perDomain)))
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": one}}}}
			snap.Pods = append(snap.Pods, p)
		}
		if i == 0 {
			mu := intstr.FromInt32(4)
			pdb := kube.LeaderPDB(lws, min(domains, groups-g), 4)
			pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = nil, &mu
			snap.PDBs = append(snap.PDBs, *pdb)
		}
	}
	cpu := resource.MustParse("100m")
	// A Deployment's pods carry its template's labels and annotations
	// (kubectl rollout restart's, here), each pod a copy of its own.
	webLabels := map[string]string{"app": "web", "pod-template-hash": "5d8f6c7b9"}
	webAnnotations := map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-12-01T08:00:00Z"}
	for d := range domains {
		for i := range perDomain {
			for k := range 9 {
				p := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: fmt.Sprintf("web-%d-%d-%d", d, i, k), UID: types.UID(fmt.Sprintf("web-%d-%d-%d", d, i, k)),
					Labels: maps.Clone(webLabels), Annotations: maps.Clone(webAnnotations), OwnerReferences: ownedBy("ReplicaSet", "web")}, Spec: corev1.PodSpec{NodeName: fleetNode(d, i),
					Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}}}}}})
				snap.Pods = append(snap.Pods, p)
			}
		}
	}
	return snap, order
}

// gpuFleetNodes is a fleet's nodes: domains ud-0 … of perDomain 8-GPU
// nodes (n-<domain>-<i>), then spares spare-0 … as large, in that order.
func gpuFleetNodes(domains, spares, perDomain int) (*Snapshot, []string) {
	snap := &Snapshot{}
	var order []string
	for d := range domains + spares {
		name := fmt.Sprintf("ud-%d", d)
		if d >= domains {
			name = fmt.Sprintf("spare-%d", d-domains)
		}
		order = append(order, name)
		for i := range perDomain {
			n := testNode(fleetNode(d, i), name)
			n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("110")}
			snap.Nodes = append(snap.Nodes, *n)
		}
	}
	return snap, order
}

// fleetNode names node i of domain d of gpuFleetNodes.
func fleetNode(d, i int) string { return fmt.Sprintf("n-%d-%d", d, i) }

// relabelDomain moves the nodes of domain from to domain to.
func relabelDomain(snap *Snapshot, from, to string) {
	for i := range snap.Nodes {
		if snap.Nodes[i].Labels[topology.DefaultDomainLabel] == from {
			snap.Nodes[i].Labels[topology.DefaultDomainLabel] = to
		}
	}
}

// BenchmarkParallelDecision is the decision a rollout with parallel
// domains makes whenever a domain in flight begins its recovery or ends:
// over the fleet of parallelFleet (2,100 nodes, 20,000 pods), with two
// domains in flight and the spare and three domains upgraded, which of the
// 15 pending domains start.
//
//	go test -run '^$' -bench BenchmarkParallelDecision -benchmem ./eviction/
func BenchmarkParallelDecision(b *testing.B) {
	snap, order := parallelFleet()
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
	if err != nil {
		b.Fatal(err)
	}
	upgraded := map[string]bool{"spare": true, "ud-0": true, "ud-1": true, "ud-2": true}
	// The flights' demands, taken when they started.
	in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: order, upgraded: upgraded, steering: SteerPreferUpgraded, known: newRequestCache()}
	first := newAdmission(in, snap.PDBs, nil)
	flying := []*demand{first.demandOn("ud-3"), first.demandOn("ud-4")}
	b.ResetTimer()
	var started int
	for b.Loop() {
		a := newAdmission(in, snap.PDBs, nil)
		a.sim.noRoom = true
		var flights []*flight
		for _, d := range flying {
			f := &flight{demand: d}
			a.fly(f)
			flights = append(flights, f)
		}
		a.reserve(flights)
		var pending []*demand
		for _, name := range order[5 : len(order)-1] {
			pending = append(pending, a.demandOn(name))
		}
		admitted, _ := a.next(pending, flights, 0, false)
		in.known.turn()
		started = len(admitted)
	}
	b.ReportMetric(float64(started), "started")
	if started != 2 {
		b.Errorf("%d domains started beside two in flight, want 2: every domain holds a group of every workload, whose budget allows 4 down", started)
	}
}

// BenchmarkFleetRolloutStart is the first look of a rollout over the
// fleet of parallelFleet (2,100 nodes, 20,000 pods) held in udrain's own
// slim cache: PlanRollout runs what Rollout does before its first domain
// (snapshot, audit, order, the destination plan and, with parallel
// domains, its schedule). peak-MiB is the highest Go heap seen while it
// runs (sampled every millisecond, as the fleet harness samples its
// drainer's), base-MiB the live heap before it: the cache and the fleet.
//
//	go test -run '^$' -bench BenchmarkFleetRolloutStart -benchtime 3x ./eviction/
func BenchmarkFleetRolloutStart(b *testing.B) {
	for _, tc := range []struct {
		name     string
		parallel int
	}{{"serial", 0}, {"parallel=auto", ParallelAuto}} {
		b.Run(tc.name, func(b *testing.B) {
			snap, order := parallelFleet()
			in := fleetInformers(b, snap, fleetCaches[1].transform())
			snap = nil
			d := fleetDrainer(b, in)
			base := testkit.LiveHeap()
			var peak uint64
			for b.Loop() {
				runtime.GC()
				stop := samplePeakHeap(&peak)
				plan, err := d.PlanRollout(b.Context(), RolloutOptions{Domains: order, Order: OrderSpareFirst, Parallel: tc.parallel})
				stop()
				if err != nil {
					b.Fatal(err)
				}
				if len(plan.Domains) != len(order) {
					b.Fatalf("plan of %d domains, want %d", len(plan.Domains), len(order))
				}
			}
			b.ReportMetric(float64(base)/(1<<20), "base-MiB")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}

// samplePeakHeap records in peak the highest heap allocated until the
// returned function is called.
func samplePeakHeap(peak *uint64) func() {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			*peak = max(*peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// BenchmarkFleetRolloutStatus is the rollout's status over the fleet of
// parallelFleet (2,100 nodes, 20,000 pods) held in udrain's own slim
// cache, part-way: the spare and three domains upgraded, two in flight
// (cordoned, draining), fifteen pending. A rollout with parallel domains reads it
// as each domain ends, and `udrain rollout status` at each refresh.
// peak-MiB is the highest Go heap seen while it runs, base-MiB the live
// heap before it (the cache and the fleet).
//
//	go test -run '^$' -bench BenchmarkFleetRolloutStatus -benchmem -benchtime 3x ./eviction/
func BenchmarkFleetRolloutStatus(b *testing.B) {
	d, order := partWayFleet(b)
	base := testkit.LiveHeap()
	var peak uint64
	var st *RolloutStatus
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		stop := samplePeakHeap(&peak)
		var err error
		st, err = d.RolloutStatus(b.Context(), RolloutOptions{ID: partWayID, Domains: order, NoLock: true})
		stop()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(base)/(1<<20), "base-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	states := map[DomainState]int{}
	for _, p := range st.Domains {
		states[p.State]++
	}
	if want := map[DomainState]int{StateDone: 4, StateDraining: 2, StatePending: 15}; !cmp.Equal(states, want) {
		b.Errorf("domains by state %v, want %v", states, want)
	}
}

// BenchmarkFleetAdmit is the decision of a rollout with parallel domains
// (rollout.admit) as it runs, over the fleet of parallelFleet (2,100
// nodes, 20,000 pods) held in udrain's own slim cache, part-way as in
// BenchmarkFleetRolloutStatus: its look at the cluster (every pod, for
// the room simulation) and the admission over it, which of the 15
// pending domains start beside the two in flight. The rollout runs it
// whenever a domain in flight begins its recovery or ends, and every
// readmitEvery while a budget holds a domain back. peak-MiB is the
// highest Go heap seen while it runs, base-MiB the live heap before it.
//
//	go test -run '^$' -bench BenchmarkFleetAdmit -benchmem -benchtime 3x ./eviction/
func BenchmarkFleetAdmit(b *testing.B) {
	r, pending, flying := partWayRollout(b)
	base := testkit.LiveHeap()
	var peak uint64
	var starts []start
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		stop := samplePeakHeap(&peak)
		starts, _ = r.admit(b.Context(), pending, flying)
		stop()
	}
	b.ReportMetric(float64(base)/(1<<20), "base-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(len(starts)), "started")
	if len(starts) != 2 {
		b.Errorf("%d domains started beside two in flight, want 2: every domain holds a group of every workload, whose budget allows 4 down", len(starts))
	}
}

// partWayID is the rollout ID of partWayFleet.
const partWayID = "fleet"

// partWayFleet is a Drainer over parallelFleet in udrain's own slim
// cache, its rollout (partWayID) part-way: the spare and three domains
// upgraded, two in flight (cordoned), fifteen pending; with the fleet's
// domains in order.
func partWayFleet(b *testing.B) (*Drainer, []string) {
	snap, order := parallelFleet()
	const id = partWayID
	at := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		switch n.Labels[topology.DefaultDomainLabel] {
		case "spare", "ud-0", "ud-1", "ud-2":
			n.Annotations[udrain.UpgradedByAnnotation] = id
			n.Annotations[udrain.UpgradedAtAnnotation] = at.Format(time.RFC3339Nano)
			at = at.Add(time.Second)
		case "ud-3", "ud-4":
			n.Annotations[udrain.CordonedByAnnotation] = id
			n.Spec.Unschedulable = true
		}
	}
	in := fleetInformers(b, snap, fleetCaches[1].transform())
	return fleetDrainer(b, in), order
}

// BenchmarkFleetDomainEnd is two whole-cluster looks of one process at
// once, over the fleet of BenchmarkFleetAdmit: the running rollout's
// admission (its look at every pod and the room simulation) and
// RolloutStatus (every pending domain's plan), read by the same
// process meanwhile (a controller that runs the rollout and serves its
// status; the rollout itself takes its own looks one at a time). Pods
// materialized by one look are read by the other while it holds them
// (podcache: a slim pod keeps its pod weakly). peak-MiB is the highest
// Go heap seen while they run, base-MiB the live heap before.
//
//	go test -run '^$' -bench BenchmarkFleetDomainEnd -benchmem -benchtime 3x ./eviction/
func BenchmarkFleetDomainEnd(b *testing.B) {
	r, pending, flying := partWayRollout(b)
	d, order := r.d, r.domains
	base := testkit.LiveHeap()
	var peak uint64
	var starts []start
	var st *RolloutStatus
	var stErr error
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		stop := samplePeakHeap(&peak)
		var wg sync.WaitGroup
		wg.Go(func() {
			st, stErr = d.RolloutStatus(b.Context(), RolloutOptions{ID: partWayID, Domains: order, NoLock: true})
		})
		starts, _ = r.admit(b.Context(), pending, flying)
		wg.Wait()
		stop()
		if stErr != nil {
			b.Fatal(stErr)
		}
	}
	b.ReportMetric(float64(base)/(1<<20), "base-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	if len(starts) != 2 {
		b.Errorf("%d domains started beside two in flight, want 2", len(starts))
	}
	if n := len(st.Domains); n != len(order) {
		b.Errorf("status of %d domains, want %d", n, len(order))
	}
}

// partWayRollout is the rollout of partWayFleet with parallel domains, as
// it runs: its view started (stopped at the end of b), the two domains in
// flight with their demands taken as they started, and the indices (in
// its order) of the fifteen pending.
func partWayRollout(b *testing.B) (r *rollout, pending []int, flying []*domainRun) {
	d, order := partWayFleet(b)
	v, err := d.startView(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(v.Stop)
	r = &rollout{d: d, opts: RolloutOptions{ID: partWayID, Parallel: ParallelAuto}, id: partWayID, logger: logr.Discard(), v: v, domains: order}
	snap, err := v.snapshot(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
	if err != nil {
		b.Fatal(err)
	}
	first, _, _ := r.admission(snap, layout, nil)
	for _, name := range []string{"ud-3", "ud-4"} {
		flying = append(flying, &domainRun{r: r, out: &RolloutDomain{Domain: name}, demand: first.demandOn(name)})
	}
	pending = []int{}
	for i, name := range order {
		if !slices.Contains([]string{"spare", "ud-0", "ud-1", "ud-2", "ud-3", "ud-4"}, name) {
			pending = append(pending, i)
		}
	}
	return r, pending, flying
}

// BenchmarkFleetHeldCheck is what a rollout held back by budgets does
// every readmitEvery instead of a decision (BenchmarkFleetAdmit) while
// those budgets' groups stay as they were: over the fleet of
// BenchmarkFleetAdmit with four domains in flight (the budgets' four
// groups of each workload counted down), the check of the budget that
// holds the others back (rollout.stillHeld). The fleet is still: no group
// is down, the flights' groups count by being in flight, so the check
// reads the budget alone; in a rollout it also reads the groups that were
// down (at most the budget's groups, not every pod).
//
//	go test -run '^$' -bench 'BenchmarkFleet(Admit|HeldCheck)$' -benchmem -benchtime 3x ./eviction/
func BenchmarkFleetHeldCheck(b *testing.B) {
	r, pending, flying := partWayRollout(b)
	starts, _ := r.admit(b.Context(), pending, flying)
	for _, st := range starts {
		flying = append(flying, &domainRun{r: r, out: &RolloutDomain{Domain: r.domains[st.idx]}, demand: st.demand})
		pending = slices.DeleteFunc(pending, func(i int) bool { return i == st.idx })
	}
	if starts, held := r.admit(b.Context(), pending, flying); len(starts) != 0 || !held || r.watch == nil {
		b.Fatalf("beside four domains in flight: %d started, held %v, watch %v; want none started, held by the budgets, watched", len(starts), held, r.watch != nil)
	}
	var quiet bool
	b.ReportAllocs()
	for b.Loop() {
		quiet = r.stillHeld(b.Context())
	}
	b.ReportMetric(float64(len(r.watch.budgets)), "budgets")
	if !quiet {
		b.Error("the check says the budgets changed; nothing did")
	}
}
