package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// parallelStep is the upgrade step of the parallel-domain tests: long
// enough that the step, not the testbed's eviction rate, dominates a
// domain's time, as a reboot does in a real fleet.
const parallelStep = 10 * time.Second

// reservedTaint keeps the spare pool empty until the groups are placed:
// then it is taken off, as a buffer pool is opened.
const reservedTaint = "udrain.dev/testbed-reserved"

// parallelBed is a real LeaderWorkerSet of four groups of four 4-GPU pods
// over four domains of two 8-GPU nodes (one group fills a domain; the
// scheduler places the leaders, spread, and each group's workers follow
// their leader), with the budget over the leaders allowing
// maxUnavailable groups down, and a spare domain of four nodes, room for
// two groups, outside the rollout: capacity at the new version, as a
// surge pool is.
type parallelBed struct {
	s       *scenario
	domains []string // the rollout's, in order
	spare   string
	cordons *cordonRecorder
	// inPlace: the rollouts run with RolloutOptions.InPlace.
	inPlace bool
}

func deployParallel(t *testing.T, maxUnavailable int32) *parallelBed {
	t.Helper()
	return deployParallelSpare(t, maxUnavailable, 4, fixture.PlaceSpread)
}

// deployParallelSpare is deployParallel with a spare domain of
// spareNodes nodes (2: room for one group; 4 at most) and the groups'
// placement.
func deployParallelSpare(t *testing.T, maxUnavailable int32, spareNodes int, placement fixture.Placement) *parallelBed {
	t.Helper()
	ctx := t.Context()
	if _, err := bed.LWS(ctx); err != nil {
		t.Fatal(err)
	}
	tt := bed.ForTest(t)
	gpu := fixture.H100()
	s := &scenario{tt: tt, nodes: fixture.Nodes{Pool: tt.Name, UDs: 5, PerUD: 4, GPU: &gpu}}
	built, err := s.nodes.Build()
	if err != nil {
		t.Fatal(err)
	}
	pb := &parallelBed{s: s, spare: s.nodes.UD(4)}
	for d := range 4 {
		pb.domains = append(pb.domains, s.nodes.UD(d))
	}
	keep := map[string]bool{} // two nodes a domain, but the spare's four
	for d := range 5 {
		for i := range 4 {
			keep[s.nodes.Name(d, i)] = d == 4 && i < spareNodes || i < 2
		}
	}
	for _, n := range built {
		if !keep[n.Name] {
			continue
		}
		if n.Labels[fixture.UpgradeDomainLabel] == pb.spare {
			n.Spec.Taints = []corev1.Taint{{Key: reservedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}
		if _, err := tt.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The leaders' spread counts only the domains whose nodes take pods
	// (nodeTaintsPolicy Honor): wait for the node lifecycle controller
	// to take its not-ready taint off, or two leaders may share a domain
	// with room for one group.
	if err := fixture.WaitSchedulable(ctx, tt.Client, s.nodes.Selector(), 8+spareNodes); err != nil {
		t.Fatal(err)
	}
	mu := intstr.FromInt32(maxUnavailable)
	w := fixture.LeaderWorkerSet{Namespace: tt.Name, Name: "llm", Pool: tt.Name, Replicas: 4, Size: 4, GPUsPerPod: 4,
		Placement: placement, Budget: &fixture.LeaderBudget{MaxUnavailable: &mu},
		ReadyDelay: 2 * time.Second, TerminateDelay: time.Second, GracePeriodSeconds: 5}
	s.real = &w
	s.gate = startGateController(t, tt.Client, gate.Options{Namespace: tt.Name})
	s.record(t, w.Selector())
	if s.dyn, err = dynamic.NewForConfig(tt.Config); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, tt.Client, s.dyn); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := w.WaitGroupsReady(wctx, tt.Client, w.Replicas); err != nil {
		t.Fatal(err)
	}
	s.recorded(t)
	domainOf, err := w.Domains(ctx, tt.Client)
	if err != nil {
		t.Fatal(err)
	}
	for g, d := range domainOf {
		if d == pb.spare {
			t.Fatalf("group %d placed on the reserved spare domain %s", g, d)
		}
	}
	// The spare opens.
	for i := range spareNodes {
		n, err := tt.Client.CoreV1().Nodes().Get(ctx, s.nodes.Name(4, i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == reservedTaint })
		if _, err := tt.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nl, err := tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	s.nodeList = nl.Items
	pb.cordons = recordCordons(t, s, pb.domains)
	t.Logf("%s: groups in %v; spare %s", w, domainOf, pb.spare)
	return pb
}

// run rolls the four domains with parallel (0: one at a time) and checks
// what every rollout promises, on the independent pod recording: each
// group disrupted once, never more down than the budget allows, leaders
// first in each domain, no group pod started on a domain before the
// rollout reached it; and that no eviction met a spent budget: the
// rollout held the domains back before their cordon. It returns the
// rollout's wall time, the events and the most domains cordoned at once.
func (pb *parallelBed) run(t *testing.T, id string, parallel int, allowed int) (time.Duration, *eventLog, *eviction.RolloutResult) {
	t.Helper()
	s := pb.s
	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	start := time.Now()
	res, err := d.Rollout(t.Context(), eviction.RolloutOptions{
		ID: id, Domains: pb.domains, Order: eviction.OrderGiven, Parallel: parallel, InPlace: pb.inPlace, RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, parallelStep) },
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("rollout %s: %v", id, err)
	}
	s.waitHealthy(t, time.Minute)
	o := s.observe(t, start)
	t.Logf("rollout %s (parallel %d) took %s: %s", id, parallel, took.Round(time.Millisecond), o)
	for g := range s.groupCount() {
		if o.Disruptions[g] != 1 {
			t.Errorf("group %d disrupted %d times, want exactly once", g, o.Disruptions[g])
		}
	}
	if want := s.groupCount() - allowed; o.MinHealthy < want {
		t.Errorf("only %d groups healthy at %s; the budget promises %d", o.MinHealthy, o.MinHealthyAt.Format("15:04:05.000"), want)
	}
	for _, p := range o.leadersFirst() {
		t.Error(p)
	}
	reached := domainsReached(events)
	reached[pb.spare] = start
	p := placement{made: map[string]time.Time{}}
	p.check(t, s, s.rec, start, reached, "group pod", false)
	for _, msg := range p.onPending {
		t.Error(msg)
	}
	if blocked := events.ofType(eviction.EventBlocked); len(blocked) > 0 {
		t.Errorf("%d evictions met a spent budget (Blocked), want none: the rollout holds a domain back before its cordon; first: %s", len(blocked), blocked[0].Message)
	}
	if sum := report.SummarizeRollout(res); sum.DomainsDone != 4 || sum.GroupsDisruptedAgain != 0 {
		t.Errorf("summary %+v: want 4 domains done, no group disrupted again", sum)
	}
	pb.checkUpgradedAndUncordoned(t, id)
	return took, events, res
}

// checkUpgradedAndUncordoned asserts that every node of the rollout's
// domains is schedulable, not marked cordoned, and marked upgraded by id,
// and that the spare is left alone.
func (pb *parallelBed) checkUpgradedAndUncordoned(t *testing.T, id string) {
	t.Helper()
	nodes, err := pb.s.tt.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: pb.s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if _, marked := n.Annotations[udrain.CordonedByAnnotation]; n.Spec.Unschedulable || marked {
			t.Errorf("node %s still cordoned (unschedulable %t, annotations %v)", n.Name, n.Spec.Unschedulable, n.Annotations)
		}
		want := id
		if n.Labels[fixture.UpgradeDomainLabel] == pb.spare {
			want = ""
		}
		if n.Annotations[udrain.UpgradedByAnnotation] != want {
			t.Errorf("node %s marked upgraded by %q, want %q", n.Name, n.Annotations[udrain.UpgradedByAnnotation], want)
		}
	}
}

// cordonRecorder watches the rollout's domains and keeps the most of
// them cordoned at once, independently of udrain.
type cordonRecorder struct {
	mu      sync.Mutex
	domains map[string]bool
	udOf    map[string]string
	cordon  map[string]bool // by node
	most    int
	mostAt  []string
}

func recordCordons(t *testing.T, s *scenario, domains []string) *cordonRecorder {
	t.Helper()
	r := &cordonRecorder{domains: map[string]bool{}, udOf: s.domainOf(), cordon: map[string]bool{}}
	for _, d := range domains {
		r.domains[d] = true
	}
	f := informers.NewSharedInformerFactoryWithOptions(s.tt.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = s.nodes.Selector().String()
	}))
	inf := f.Core().V1().Nodes().Informer()
	seen := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.cordon[n.Name] = n.Spec.Unschedulable
		now := map[string]bool{}
		for node, c := range r.cordon {
			if c && r.domains[r.udOf[node]] {
				now[r.udOf[node]] = true
			}
		}
		if len(now) > r.most {
			r.most, r.mostAt = len(now), nil
			for d := range now {
				r.mostAt = append(r.mostAt, d)
			}
			slices.Sort(r.mostAt)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, n any) { seen(n) }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return r
}

func (r *cordonRecorder) max() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most, r.mostAt
}

// inFlight returns the most domains in flight at once by the rollout's
// events (from DomainStarted to DomainDone).
func inFlight(events *eventLog) int {
	most, now := 0, 0
	for _, e := range events.all() {
		switch e.Type {
		case eviction.EventDomainStarted:
			now++
			most = max(most, now)
		case eviction.EventDomainDone, eviction.EventDomainSkipped:
			now--
		}
	}
	return most
}

// TestParallelDomainsWithinTheBudget is issue 35's measure on real
// LeaderWorkerSets placed by the scheduler, beside a spare pool with room
// for two groups. With a budget allowing two groups down, the automatic
// parallelism runs two domains at once (an independent node watch sees
// two cordoned at once, never three: the budget's spec holds the third
// back before its cordon, and no eviction meets a spent budget), each
// group disrupted once, never more than two groups down, in
// at most 0.6 times the wall time of the same rollout one domain at a
// time on an identical pool, run at the same moment. With a budget
// allowing one, the plan serialises: never two domains cordoned at once,
// and again no eviction waits on a spent budget.
func TestParallelDomainsWithinTheBudget(t *testing.T) {
	t.Parallel()
	var serial, parallel time.Duration
	t.Run("budget allows two", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Go(func() {
			t.Run("one at a time", func(t *testing.T) {
				pb := deployParallel(t, 2)
				took, events, _ := pb.run(t, "e2e-serial", 0, 2)
				serial = took
				if got := inFlight(events); got != 1 {
					t.Errorf("%d domains in flight at once, want 1", got)
				}
				if most, at := pb.cordons.max(); most != 1 {
					t.Errorf("the node watch saw %d domains cordoned at once (%v), want 1", most, at)
				}
			})
		})
		wg.Go(func() {
			t.Run("auto", func(t *testing.T) {
				pb := deployParallel(t, 2)
				took, events, res := pb.run(t, "e2e-parallel", eviction.ParallelAuto, 2)
				parallel = took
				t.Logf("domains in flight at once (DomainStarted to DomainDone): %d", inFlight(events))
				if most, at := pb.cordons.max(); most != 2 {
					t.Errorf("the node watch saw %d domains cordoned at once (%v), want 2", most, at)
				}
				if res.MaxInFlight != 2 {
					t.Errorf("the plan said %d domains at once, want 2 (domains %+v)", res.MaxInFlight, res.Domains)
				}
				held := events.ofType(eviction.EventDomainHeld)
				if len(held) == 0 || held[0].Hold == nil || held[0].Hold.Reason != eviction.BlockBudget || held[0].Hold.PDB != pb.s.real.PDBName() {
					t.Errorf("DomainHeld events %v, want the first to name the budget %s", held, pb.s.real.PDBName())
				}
			})
		})
		wg.Wait()
		if serial == 0 || parallel == 0 {
			t.Fatal("a rollout failed")
		}
		ratio := float64(parallel) / float64(serial)
		t.Logf("wall time: parallel %s, one at a time %s: %.2f", parallel.Round(time.Millisecond), serial.Round(time.Millisecond), ratio)
		if ratio > 0.6 {
			t.Errorf("parallel rollout took %.2f of the serial one's time, want at most 0.6", ratio)
		}
	})
	t.Run("budget allows one", func(t *testing.T) {
		t.Parallel()
		pb := deployParallel(t, 1)
		_, events, res := pb.run(t, "e2e-parallel-one", eviction.ParallelAuto, 1)
		// A domain whose groups are whole again counts no more while its
		// recovery ends (its budgets' status catching up): the next may
		// start then, not before.
		t.Logf("domains in flight at once (DomainStarted to DomainDone): %d", inFlight(events))
		if most, at := pb.cordons.max(); most != 1 {
			t.Errorf("the node watch saw %d domains cordoned at once (%v), want 1: nothing waits cordoned on a blocked eviction", most, at)
		}
		if res.MaxInFlight != 1 {
			t.Errorf("the plan said %d domains at once, want 1", res.MaxInFlight)
		}
		if held := events.ofType(eviction.EventDomainHeld); len(held) == 0 {
			t.Error("no DomainHeld event: want the budget to hold the next domain back")
		}
	})
}

// TestParallelInPlace: groups placed exclusively (LeaderWorkerSet's
// exclusive topology on the domain key: a domain holds one group) and a
// spare with room for one. The upgraded room holds automatic parallelism
// to one domain cordoned at a time (the next domain's group would wait
// through its own domain's upgrade step); with InPlace, on an identical
// pool at the same moment, the budget alone holds: two domains cordoned
// at once (an independent node watch), so one of their two groups, kept
// out of the spare by the other and off the pending domains by Strict
// steering, waited Pending for an upgraded domain; still each group
// disrupted once, never more than the budget's two down, leaders first,
// no eviction meeting a spent budget. (Groups that nothing keeps apart
// are not run in place where their pods could split between the room of
// another group and their own domain: TestAdmissionNext. Seen here before
// that hold: two leaders in the spare, each with a part of its workers,
// neither group whole again.)
func TestParallelInPlace(t *testing.T) {
	t.Parallel()
	var auto, inPlace time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		t.Run("auto", func(t *testing.T) {
			pb := deployParallelSpare(t, 2, 2, fixture.PlaceExclusive)
			took, events, _ := pb.run(t, "e2e-room", eviction.ParallelAuto, 2)
			auto = took
			if most, at := pb.cordons.max(); most != 1 {
				t.Errorf("the node watch saw %d domains cordoned at once (%v), want 1: the room holds the next back", most, at)
			}
			held := events.ofType(eviction.EventDomainHeld)
			if !slices.ContainsFunc(held, func(e eviction.Event) bool { return e.Hold != nil && e.Hold.Reason == eviction.BlockRoom }) {
				t.Errorf("DomainHeld events %v, want one held back by room", held)
			}
		})
	})
	wg.Go(func() {
		t.Run("in place", func(t *testing.T) {
			pb := deployParallelSpare(t, 2, 2, fixture.PlaceExclusive)
			pb.inPlace = true
			took, events, res := pb.run(t, "e2e-in-place", eviction.ParallelAuto, 2)
			inPlace = took
			if most, at := pb.cordons.max(); most != 2 {
				t.Errorf("the node watch saw %d domains cordoned at once (%v), want 2 (the budget's)", most, at)
			}
			for _, e := range events.ofType(eviction.EventDomainHeld) {
				if e.Hold != nil && e.Hold.Reason == eviction.BlockRoom {
					t.Errorf("held back by room in place: %s", e.Message)
				}
			}
			if !res.InPlace || res.MaxInFlight != 2 {
				t.Errorf("result in place %t, the plan's most at once %d; want true, 2", res.InPlace, res.MaxInFlight)
			}
			own := 0
			for _, d := range res.Destinations {
				if d.Kind == eviction.DestinationOwnDomain {
					own++
				}
			}
			if own == 0 {
				t.Errorf("the plan's destinations %v: want a group waiting for its own domain", res.Destinations)
			}
		})
	})
	wg.Wait()
	if auto > 0 && inPlace > 0 {
		t.Logf("wall time: in place %s, auto %s: %.2f", inPlace.Round(time.Millisecond), auto.Round(time.Millisecond), float64(inPlace)/float64(auto))
	}
}

// TestParallelRolloutResumesSeveralDomains: a rollout with two domains in
// their upgrade step at once is cancelled (a Ctrl-C, a crash of its Job's
// pod): both stay cordoned; run again with the same ID it resumes both at
// once and completes, each group disrupted once over both runs, never more
// than the budget's two down, and no pod evicted by the second run that
// its plans did not name (the first run's evicted groups are not evicted
// again).
func TestParallelRolloutResumesSeveralDomains(t *testing.T) {
	t.Parallel()
	pb := deployParallel(t, 2)
	s := pb.s
	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	start := time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	inStep := 0
	opts := eviction.RolloutOptions{ID: "e2e-parallel-resume", Domains: pb.domains, Order: eviction.OrderGiven, Parallel: eviction.ParallelAuto,
		RecoveryTimeout: 3 * time.Minute, Upgrade: func(ctx context.Context, _ topology.Domain) error {
			mu.Lock()
			inStep++
			if inStep == 2 {
				cancel() // two domains part-way: stop here
			}
			mu.Unlock()
			return sleepCtx(ctx, parallelStep)
		}}
	res, err := d.Rollout(ctx, opts)
	if err == nil {
		t.Fatal("the cancelled rollout returned no error")
	}
	var interrupted []string
	for _, o := range res.Domains {
		if o.State == eviction.StateInterrupted {
			interrupted = append(interrupted, o.Domain)
		}
	}
	if len(interrupted) != 2 {
		t.Fatalf("%d domains interrupted (%v), want 2 part-way: %s", len(interrupted), interrupted, outcomes(res))
	}
	nodes, err := s.tt.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	cordoned := map[string]bool{}
	for _, n := range nodes.Items {
		if n.Annotations[udrain.CordonedByAnnotation] == opts.ID {
			cordoned[n.Labels[fixture.UpgradeDomainLabel]] = true
		}
	}
	if len(cordoned) != 2 {
		t.Errorf("domains left cordoned by the rollout: %v, want the two interrupted (%v)", cordoned, interrupted)
	}
	t.Logf("stopped with %v part-way after %s", interrupted, time.Since(start).Round(time.Millisecond))

	// Resumed: both at once, then the rest.
	resumed := &eventLog{}
	d = s.drainer(t, resumed, eviction.Options{})
	opts.Upgrade = func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, parallelStep) }
	res, err = d.Rollout(t.Context(), opts)
	if err != nil {
		t.Fatalf("resumed rollout: %v", err)
	}
	var first []string
	for _, e := range resumed.ofType(eviction.EventDomainStarted) {
		if len(first) < 2 {
			first = append(first, e.Domain)
		}
	}
	slices.Sort(first)
	slices.Sort(interrupted)
	if !slices.Equal(first, interrupted) {
		t.Errorf("the resumed rollout started %v first, want the domains part-way %v", first, interrupted)
	}
	s.waitHealthy(t, time.Minute)
	o := s.observe(t, start)
	t.Logf("a parallel rollout stopped with two domains part-way and resumed: %s", o)
	for g := range s.groupCount() {
		if o.Disruptions[g] != 1 {
			t.Errorf("group %d disrupted %d times over both runs, want exactly once", g, o.Disruptions[g])
		}
	}
	if o.MinHealthy < s.groupCount()-2 {
		t.Errorf("only %d groups healthy at %s; the budget promises %d", o.MinHealthy, o.MinHealthyAt.Format("15:04:05.000"), s.groupCount()-2)
	}
	for _, p := range o.leadersFirst() {
		t.Error(p)
	}
	original := s.uidsAt(t, start)
	evicted := map[string]int{}
	for _, e := range o.Evicted {
		if original[e.UID] {
			evicted[e.Name]++
		}
	}
	if len(evicted) != s.groupCount()*s.groupSize() {
		t.Errorf("%d original pods evicted over both runs, want %d, each once: %v", len(evicted), s.groupCount()*s.groupSize(), evicted)
	}
	if blocked := resumed.ofType(eviction.EventBlocked); len(blocked) > 0 {
		t.Errorf("%d evictions met a spent budget in the resumed run, want none", len(blocked))
	}
	if sum := report.SummarizeRollout(res); sum.DomainsDone != 4 {
		t.Errorf("resumed summary %+v: want 4 domains done", sum)
	}
	pb.checkUpgradedAndUncordoned(t, opts.ID)
}
