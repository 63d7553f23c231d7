package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
)

// This file holds what the scenario tests share: a deployed multi-host
// workload with its readiness-gate controller, and the observation of a
// recorded run (disruptions per group, fewest healthy groups, eviction
// order per domain).

// scenario is one test's workload on its own node pool.
type scenario struct {
	tt    *testbed.Test
	nodes fixture.Nodes
	lws   fixture.LWS
	// ray, if set, is the scenario's workload instead of lws: RayClusters
	// run by the KubeRay operator (see ray_test.go).
	ray *fixture.RayClusters
	// real, if set, is the scenario's workload instead of lws: a real
	// LeaderWorkerSet run by the LWS manager (see lws_test.go); dyn reads
	// and changes it.
	real *fixture.LeaderWorkerSet
	dyn  dynamic.Interface
	rec  *fixture.PodRecorder
	// gate is the readiness-gate controller of the workload's leaders.
	gate *gateRunner
	// nodeList is the pool's nodes, for mapping pods to domains.
	nodeList []corev1.Node
}

type scenarioConfig struct {
	UDs, PerUD, Groups, Size, GPUsPerPod int
	ReadyDelay, TerminateDelay           time.Duration
}

func defaultScenario() scenarioConfig {
	// 3 UDs x 2 nodes of 8 GPUs; 3 groups of 4 pods of 4 GPUs: a group
	// fills its UD, so replacements cannot land in the domain being drained.
	return scenarioConfig{UDs: 3, PerUD: 2, Groups: 3, Size: 4, GPUsPerPod: 4, ReadyDelay: 2 * time.Second, TerminateDelay: time.Second}
}

// deploy creates the pool and the workload, runs the readiness-gate
// controller (the component users run) for the test's namespace, records
// every pod event, and returns once every group is healthy and the PDB
// allows one disruption.
func deploy(t *testing.T, cfg scenarioConfig) *scenario {
	t.Helper()
	tt := bed.ForTest(t)
	return deployWithGate(t, tt, cfg, tt.Client, gate.Options{Namespace: tt.Name})
}

// deployWithGate is deploy with the readiness-gate controller running on
// gateClient with gateOpts, in the test tt already made.
func deployWithGate(t *testing.T, tt *testbed.Test, cfg scenarioConfig, gateClient kubernetes.Interface, gateOpts gate.Options) *scenario {
	t.Helper()
	ctx := t.Context()
	gpu := fixture.H100()
	s := &scenario{tt: tt}
	s.nodes = fixture.Nodes{Pool: tt.Name, UDs: cfg.UDs, PerUD: cfg.PerUD, GPU: &gpu}
	if _, err := s.nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	s.lws = fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: cfg.Groups, Size: cfg.Size, Pool: tt.Name,
		GPUsPerPod: cfg.GPUsPerPod, ReadyDelay: cfg.ReadyDelay, TerminateDelay: cfg.TerminateDelay, GracePeriodSeconds: 5}
	s.gate = startGateController(t, gateClient, gateOpts)
	s.record(t, s.lws.Selector())
	if err := s.lws.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	s.waitHealthy(t, 3*time.Minute)
	nl, err := tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	s.nodeList = nl.Items
	return s
}

// record starts the independent recording of the pods sel selects in the
// test's namespace, until the test ends; a failed test's artifacts get its
// timeline.
func (s *scenario) record(t *testing.T, sel labels.Selector) {
	t.Helper()
	rec, err := fixture.RecordPods(t.Context(), s.tt.Client, s.tt.Name, sel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Stop)
	s.rec = rec
	s.tt.OnFailure("pod-timeline.txt", rec.WriteTimeline)
}

// recorded waits until the recording has seen every pod as it is now
// (PodRecorder.Sync), so that a recording judged from a moment taken next
// starts from the state the test just made: a group it broke, seen by the
// disruption controller first, is not broken again in the recording once
// the recorder's watch, lagging on a busy machine, catches up.
func (s *scenario) recorded(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.rec.Sync(ctx); err != nil {
		t.Fatalf("the pod recording did not catch up with the pods within a minute: %v", err)
	}
}

// startGateController runs the readiness-gate controller on c with opts
// until the test ends. A controller that stops because the cluster's
// history went back (an etcd restore) is started again, as its Deployment
// would restart it; gateRunner.restarted says when and why.
func startGateController(t testing.TB, c kubernetes.Interface, opts gate.Options) *gateRunner {
	t.Helper()
	ctrl, err := gate.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateRunner{}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0)))))
	done := make(chan error, 1)
	go func() {
		for {
			err := ctrl.Run(ctx)
			var changed *udrain.HistoryChangedError
			if ctx.Err() == nil && errors.As(err, &changed) {
				g.mu.Lock()
				g.restarts = append(g.restarts, gateRestart{time.Now(), changed})
				g.mu.Unlock()
				if ctrl, err = gate.New(c, opts); err == nil {
					continue
				}
			}
			done <- err
			return
		}
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("readiness-gate controller: %v", err)
		}
	})
	return g
}

// gateRunner is a readiness-gate controller run by startGateController.
type gateRunner struct {
	mu       sync.Mutex
	restarts []gateRestart
}

// gateRestart is a stop of the controller on a changed history, and its
// start again.
type gateRestart struct {
	at  time.Time
	err *udrain.HistoryChangedError
}

func (g *gateRunner) restarted() []gateRestart {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.restarts)
}

// waitHealthy waits until every group is healthy and the PDB over the
// leaders has caught up (allows its one disruption).
func (s *scenario) waitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	var last string
	n := s.groupCount()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		groups, err := s.health(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		healthy := 0
		for _, g := range groups {
			if g.Healthy() {
				healthy++
			}
		}
		pdb, err := s.tt.Client.PolicyV1().PodDisruptionBudgets(s.tt.Name).Get(ctx, s.pdbName(), metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d/%d groups healthy; PDB allows %d (healthy %d, desired %d)", healthy, n,
			pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy)
		return healthy == n && len(groups) == n && pdb.Status.CurrentHealthy == int32(n) &&
			pdb.Status.ObservedGeneration >= pdb.Generation, nil
	})
	if err != nil {
		t.Fatalf("workload not healthy within %s: %s", timeout, last)
	}
	if s.rec != nil {
		s.recorded(t)
	}
}

// groupCount is the number of groups of the scenario's workload.
func (s *scenario) groupCount() int {
	switch {
	case s.ray != nil:
		return s.ray.Clusters
	case s.real != nil:
		return s.real.Replicas
	}
	return s.lws.Groups
}

// groupSize is the number of pods of each group.
func (s *scenario) groupSize() int {
	switch {
	case s.ray != nil:
		return s.ray.Size()
	case s.real != nil:
		return s.real.Size
	}
	return s.lws.Size
}

// pdbName is the PDB over the workload's leaders.
func (s *scenario) pdbName() string {
	switch {
	case s.ray != nil:
		return s.ray.PDBName()
	case s.real != nil:
		return s.real.PDBName()
	}
	return s.lws.PDBName()
}

// health lists the workload's groups as they are now.
func (s *scenario) health(ctx context.Context) ([]fixture.GroupStatus, error) {
	switch {
	case s.ray != nil:
		return s.ray.Health(ctx, s.tt.Client)
	case s.real != nil:
		return s.real.Health(ctx, s.tt.Client)
	}
	return s.lws.Health(ctx, s.tt.Client)
}

// domains returns the pool's upgrade domains in order.
func (s *scenario) domains() []string {
	out := make([]string, s.nodes.UDs)
	for d := range out {
		out[d] = s.nodes.UD(d)
	}
	return out
}

// drainer returns a Drainer with kubectl's defaults whose events are kept
// and logged.
func (s *scenario) drainer(t *testing.T, events *eventLog, opts eviction.Options) *eviction.Drainer {
	t.Helper()
	return hookedDrainer(t, s, "udrain-events.txt", events, opts, nil)
}

// hookedDrainer is scenario.drainer with hook (if not nil) called on every
// event after it is logged; the log goes into the artifacts as file. udrain
// calls hook synchronously: it must not block for long.
func hookedDrainer(t *testing.T, s *scenario, file string, events *eventLog, opts eviction.Options, hook func(eviction.Event)) *eviction.Drainer {
	t.Helper()
	return hookedDrainerOn(t, s, s.tt.Client, file, events, opts, hook)
}

// hookedDrainerOn is hookedDrainer with the Drainer's client.
func hookedDrainerOn(t *testing.T, s *scenario, client kubernetes.Interface, file string, events *eventLog, opts eviction.Options, hook func(eviction.Event)) *eviction.Drainer {
	t.Helper()
	if opts.Helper == nil {
		opts.Helper = eviction.KubectlDefaults()
	}
	opts.OnEvent = func(ctx context.Context, e eviction.Event) {
		events.add(ctx, e)
		if hook != nil {
			hook(e)
		}
	}
	d, err := eviction.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.tt.OnFailure(file, events.write)
	return d
}

// glitchBelow is the longest unhealthy stretch without a pod terminating
// that is a glitch, not a disruption (bench.DefaultGlitchBelow).
const glitchBelow = time.Second

// observation is what a recorded stretch of time shows.
type observation struct {
	// Disruptions counts, per group index, the times it went from healthy
	// to unhealthy, but for glitches.
	Disruptions map[int]int
	// Glitches counts the unhealthy stretches shorter than glitchBelow
	// during which no pod was seen terminating: a readiness condition
	// written False and True again within milliseconds (seen in CI: a
	// leader's Ready flapped for 20 ms after its group recovered), not a
	// disruption (the fleet harness judges the same way, bench.Observe).
	Glitches int
	// MinHealthy is the fewest groups healthy at any recorded moment.
	MinHealthy int
	// MinHealthyAt is when that was first seen.
	MinHealthyAt time.Time
	// Unhealthy sums, over the groups, the time each spent unhealthy.
	Unhealthy time.Duration
	// EvictedAt is when each pod (by UID) was first seen terminating, with
	// its domain and whether it led its group.
	Evicted []evictedPod
	// ownedWorkers: a worker deleted after its own group's leader was is
	// no eviction of udrain's (real LWS: the garbage collector deletes a
	// group's workers with their leader, whose pod owns their
	// StatefulSet), and does not count against leaders first.
	ownedWorkers bool
}

type evictedPod struct {
	UID    types.UID
	Name   string
	Domain string
	// Group names the pod's group (LWS name and group index, or Ray
	// cluster).
	Group  string
	Leader bool
	At     time.Time
}

func (o observation) totalDisruptions() int {
	n := 0
	for _, c := range o.Disruptions {
		n += c
	}
	return n
}

func (o observation) String() string {
	idx := make([]int, 0, len(o.Disruptions))
	for g := range o.Disruptions {
		idx = append(idx, g)
	}
	sort.Ints(idx)
	var parts []string
	for _, g := range idx {
		parts = append(parts, fmt.Sprintf("group %d: %d", g, o.Disruptions[g]))
	}
	return fmt.Sprintf("disruptions %d (%s); glitches %d; fewest healthy groups %d; group-time unhealthy %s",
		o.totalDisruptions(), strings.Join(parts, ", "), o.Glitches, o.MinHealthy, o.Unhealthy.Round(100*time.Millisecond))
}

// observe replays the recorded pod events from `from` on.
func (s *scenario) observe(t *testing.T, from time.Time) observation {
	t.Helper()
	return s.observeBetween(t, from, time.Time{})
}

// observeBetween replays the recorded pod events between from and to (a
// zero to: until the last event).
func (s *scenario) observeBetween(t *testing.T, from, to time.Time) observation {
	t.Helper()
	o := observation{Disruptions: map[int]int{}, MinHealthy: s.groupCount(), ownedWorkers: s.real != nil}
	prevHealthy := map[int]bool{}
	started := false
	var last time.Time
	seen := map[types.UID]bool{}
	udOf := s.domainOf()
	openAt, openEvicted := map[int]time.Time{}, map[int]int{}
	err := s.rec.Replay(func(at time.Time, pods map[types.UID]*corev1.Pod) error {
		if !to.IsZero() && at.After(to) {
			return nil
		}
		evictedBefore := len(o.Evicted)
		list := make([]corev1.Pod, 0, len(pods))
		for _, p := range pods {
			list = append(list, *p)
			// Unscheduled pods are never drained; kwok (which deletes a
			// terminating pod by name) sometimes deletes the Pending
			// replacement that took the name of a pod it just finished.
			if at.Before(from) || p.DeletionTimestamp == nil || seen[p.UID] || p.Spec.NodeName == "" {
				continue
			}
			seen[p.UID] = true
			o.Evicted = append(o.Evicted, newEvictedPod(p, udOf, at))
		}
		now, healthy := s.groupsHealthy(list)
		if at.Before(from) {
			prevHealthy = now
			return nil
		}
		if started {
			for g := 0; g < s.groupCount(); g++ {
				if !prevHealthy[g] {
					o.Unhealthy += at.Sub(last)
				}
			}
		}
		started, last = true, at
		for g := 0; g < s.groupCount(); g++ {
			switch {
			case prevHealthy[g] && !now[g]:
				o.Disruptions[g]++
				openAt[g], openEvicted[g] = at, evictedBefore
			case !prevHealthy[g] && now[g] && !openAt[g].IsZero():
				if at.Sub(openAt[g]) < glitchBelow && len(o.Evicted) == openEvicted[g] {
					o.Disruptions[g]--
					o.Glitches++
				}
				openAt[g] = time.Time{}
			}
		}
		prevHealthy = now
		if healthy < o.MinHealthy {
			o.MinHealthy, o.MinHealthyAt = healthy, at
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(o.Evicted, func(i, j int) bool { return o.Evicted[i].At.Before(o.Evicted[j].At) })
	return o
}

// domainOf maps the names of the pool's nodes to their upgrade domains.
func (s *scenario) domainOf() map[string]string {
	udOf := map[string]string{}
	for _, n := range s.nodeList {
		udOf[n.Name] = n.Labels[fixture.UpgradeDomainLabel]
	}
	return udOf
}

// newEvictedPod is p first seen terminating at `at`; udOf names its
// node's domain. A leader is an LWS leader or a Ray head.
func newEvictedPod(p *corev1.Pod, udOf map[string]string, at time.Time) evictedPod {
	group := p.Labels[fixture.RayClusterLabel]
	if name := p.Labels[fixture.LWSNameLabel]; name != "" {
		group = name + "/" + p.Labels[fixture.LWSGroupIndexLabel]
	}
	return evictedPod{UID: p.UID, Name: p.Name, Domain: udOf[p.Spec.NodeName], Group: group,
		Leader: p.Labels[fixture.LWSWorkerIndexLabel] == "0" || p.Labels[fixture.RayNodeTypeLabel] == "head", At: at}
}

// groupsHealthy says, by group index, which groups pods make healthy, and
// how many.
func (s *scenario) groupsHealthy(pods []corev1.Pod) (map[int]bool, int) {
	now := map[int]bool{}
	healthy := 0
	groups := fixture.Groups(pods, s.nodeList, s.lws.Name, "")
	switch {
	case s.ray != nil:
		groups = s.ray.Groups(pods, s.nodeList)
	case s.real != nil:
		groups = s.real.Groups(pods, s.nodeList)
	}
	for _, g := range groups {
		now[g.Index] = g.Healthy()
		if g.Healthy() {
			healthy++
		}
	}
	return now, healthy
}

// leadersFirst checks that in every domain each leader was evicted before
// any worker of that domain (with ownedWorkers, but the workers whose own
// leader had gone before them).
func (o observation) leadersFirst() []string {
	var problems []string
	lastLeader := map[string]evictedPod{}
	firstWorker := map[string]evictedPod{}
	leaderGone := map[string]bool{}
	for _, e := range o.Evicted {
		switch {
		case e.Leader:
			lastLeader[e.Domain] = e
			leaderGone[e.Group] = true
		case o.ownedWorkers && leaderGone[e.Group]:
		default:
			if _, ok := firstWorker[e.Domain]; !ok {
				firstWorker[e.Domain] = e
			}
		}
	}
	for d, w := range firstWorker {
		if l, ok := lastLeader[d]; ok && !l.At.Before(w.At) {
			problems = append(problems, fmt.Sprintf("domain %s: worker %s evicted at %s, before leader %s at %s",
				d, w.Name, w.At.Format("15:04:05.000"), l.Name, l.At.Format("15:04:05.000")))
		}
	}
	return problems
}

// checkEachGroupOnce asserts scenario 1's guarantees on an observation:
// every group disrupted exactly once, never more than one down, leaders
// evicted before workers in each domain.
func checkEachGroupOnce(t *testing.T, s *scenario, o observation) {
	t.Helper()
	for g := range s.groupCount() {
		if o.Disruptions[g] != 1 {
			t.Errorf("group %d disrupted %d times, want exactly once", g, o.Disruptions[g])
		}
	}
	if want := s.groupCount() - 1; o.MinHealthy < want {
		t.Errorf("only %d groups healthy at %s; the PDB promises %d", o.MinHealthy, o.MinHealthyAt.Format("15:04:05.000"), want)
	}
	for _, p := range o.leadersFirst() {
		t.Error(p)
	}
}

// checkWholeRollout waits until every group is healthy and asserts, on
// what was recorded from start on, what a rollout over all the scenario's
// domains guarantees: checkEachGroupOnce, and each original pod evicted
// once. It logs the observation as what's and returns it.
func checkWholeRollout(t *testing.T, s *scenario, start time.Time, what string) observation {
	t.Helper()
	s.waitHealthy(t, time.Minute)
	o := s.observe(t, start)
	t.Logf("%s: %s", what, o)
	checkEachGroupOnce(t, s, o)
	want := s.groupCount() * s.groupSize()
	if s.real == nil {
		if got := len(o.Evicted); got != want {
			t.Errorf("%d pods evicted, want %d (each original pod once)", got, want)
		}
		return o
	}
	// Real LWS deletes pods itself too: the old worker StatefulSet
	// recreates an evicted worker until the garbage collector deletes it
	// with its leader.
	original := s.uidsAt(t, start)
	got, others := 0, 0
	for _, e := range o.Evicted {
		if original[e.UID] {
			got++
		} else {
			others++
		}
	}
	if got != want {
		t.Errorf("%d original pods evicted, want %d (each once)", got, want)
	}
	t.Logf("%s: %d pods made during the rollout were deleted too (by LWS or the garbage collector)", what, others)
	return o
}

// uidsAt returns the pods the recording shows at the moment at.
func (s *scenario) uidsAt(t *testing.T, at time.Time) map[types.UID]bool {
	t.Helper()
	out := map[types.UID]bool{}
	err := s.rec.Replay(func(when time.Time, pods map[types.UID]*corev1.Pod) error {
		if !when.After(at) {
			clear(out)
			for uid := range pods {
				out[uid] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTargetVersion asserts that every node of the pool carries
// label=version (an embedding example's upgrade step sets it).
func checkTargetVersion(t *testing.T, s *scenario, label, version string) {
	t.Helper()
	nodes, err := s.tt.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if got := n.Labels[label]; got != version {
			t.Errorf("node %s has %s=%q, want %q", n.Name, label, got, version)
		}
	}
}

// checkEvictionEvents asserts that the pods Kubernetes Events name (by
// UID) are exactly the pods evicted in o.
func checkEvictionEvents(t *testing.T, o observation, reason string, named []types.UID) {
	t.Helper()
	evicted := sets.New[types.UID]()
	for _, e := range o.Evicted {
		evicted.Insert(e.UID)
	}
	if got := sets.New(named...); !got.Equal(evicted) {
		t.Errorf("%s events name pods %v; the pods evicted were %v", reason, sets.List(got), sets.List(evicted))
	}
}

// eventLog keeps udrain's events for assertions and for the artifacts.
type eventLog struct {
	mu     sync.Mutex
	events []eviction.Event
}

func (l *eventLog) add(_ context.Context, e eviction.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []eviction.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]eviction.Event(nil), l.events...)
}

func (l *eventLog) ofType(t eviction.EventType) []eviction.Event {
	var out []eviction.Event
	for _, e := range l.all() {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func (l *eventLog) write(w io.Writer) error {
	for _, e := range l.all() {
		subject := e.Node
		if e.Pod != nil {
			subject = e.Pod.String() + "@" + e.Pod.Node
		}
		if _, err := fmt.Fprintf(w, "%s %-16s %-8s %s %s %s %s\n", e.Time.Format("15:04:05.000"), e.Type, e.Domain,
			phaseString(e.Stage), subject, e.Message, errString(e.Err)); err != nil {
			return err
		}
	}
	return nil
}

// waitFor polls the log until an event matches.
func (l *eventLog) waitFor(ctx context.Context, timeout time.Duration, match func(eviction.Event) bool) (eviction.Event, error) {
	var found eviction.Event
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, e := range l.all() {
			if match(e) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found, err
}

func phaseString(s eviction.Stage) string {
	if s.Phase() == 0 {
		return "-"
	}
	return fmt.Sprintf("phase %d", s.Phase())
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return "err=" + err.Error()
}
