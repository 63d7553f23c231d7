package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// TestLWSRolloutOverDomainsWithSpare is the rollout of issue 34 on real
// LeaderWorkerSets: three groups of four GPU pods, a spare domain, the
// scheduler placing every pod (no node selector names a domain), the
// readiness-gate controller gating the leaders, with LWS's exclusive
// topology and without it (leaders spread, workers following their
// leader). LWS and the garbage collector delete and recreate members
// themselves: evicting a leader lets the garbage collector delete its
// group's workers, so phase 2 finds some already gone. The independent pod
// recording shows each group disrupted exactly once, never fewer healthy
// groups than the budget keeps, leaders evicted before workers in each
// domain, no group pod started on a domain before the rollout reached it,
// each group recovered on LWS's recreated pods (none of its original
// ones) before the next domain's first eviction, and no leader Ready
// beside workers of an earlier incarnation of its group; udrain reports no
// error for the pods that were gone before their eviction and counts each
// group once.
func TestLWSRolloutOverDomainsWithSpare(t *testing.T) {
	t.Parallel()
	for _, place := range []fixture.Placement{fixture.PlaceExclusive, fixture.PlaceSpread} {
		name := map[fixture.Placement]string{fixture.PlaceExclusive: "exclusive", fixture.PlaceSpread: "spread"}[place]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultLWS()
			cfg.Set.Placement = place
			cfg.gateRequests = &requestCounter{}
			s := deployLWS(t, cfg)
			ctx := t.Context()
			owners := recordOwners(t, s.tt.Client, s.tt.Name)
			domainOf, err := s.real.Domains(ctx, s.tt.Client)
			if err != nil {
				t.Fatal(err)
			}
			events := &eventLog{}
			d := s.drainer(t, events, eviction.Options{})
			before := cfg.gateRequests.snapshot()
			start := time.Now()
			res, err := d.Rollout(ctx, eviction.RolloutOptions{
				ID: "e2e-lws-" + name, Domains: s.domains(), Order: eviction.OrderSpareFirst, RecoveryTimeout: 3 * time.Minute,
				Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) },
			})
			if err != nil {
				t.Fatalf("rollout: %v", err)
			}
			t.Logf("rollout over real LWS (%s) took %s; order %v; groups in %v", name, time.Since(start).Round(time.Millisecond), domainsOf(res), domainOf)
			o := checkWholeRollout(t, s, start, "udrain rollout over real LWS ("+name+")")

			p := placement{made: map[string]time.Time{}}
			p.check(t, s, s.rec, start, domainsReached(events), "group pod", false)
			for _, msg := range p.onPending {
				t.Error(msg)
			}
			sum := report.SummarizeRollout(res)
			if sum.DomainsDone != s.nodes.UDs || sum.GroupsDisrupted != s.real.Replicas || sum.GroupsDisruptedAgain != 0 {
				t.Errorf("summary %+v: want %d domains done, %d groups disrupted, none again", sum, s.nodes.UDs, s.real.Replicas)
			}
			checkLWSDrainEvents(t, events)
			var order []int
			for _, dom := range domainsOf(res) {
				for g, gd := range domainOf {
					if gd == dom {
						order = append(order, g)
					}
				}
			}
			for _, msg := range checkRecoveredInOrder(t, s, start, order, domainOf, s.real.Groups, s.real.GroupIndex) {
				t.Error(msg)
			}
			for _, msg := range leaderReadyBesideOldWorkers(t, s, owners) {
				t.Error(msg)
			}
			gate := cfg.gateRequests.snapshot().minus(before)
			t.Logf("readiness-gate controller during the rollout: %s for %d recreated groups (%.1f patches a group)",
				gate, s.real.Replicas, float64(gate.patches)/float64(s.real.Replicas))
			// Only a True patch carries the resourceVersion it was decided
			// on; a False one cannot conflict.
			if gate.conflicts != gate.trueConflicts {
				t.Errorf("readiness-gate controller: %d of its 409s on False patches, which carry no precondition", gate.conflicts-gate.trueConflicts)
			}
			checkUpgradedAndUncordoned(t, s, "e2e-lws-"+name)
			_ = o
		})
	}
}

// TestLWSPhase2FindsMembersGone: two groups of two pods in each of three
// domains (leaders spread, workers following), a budget of maxUnavailable
// 1 over the six leaders, a spare domain added once they run. In each
// domain phase 1 evicts one leader and is refused (429) for the other until
// the first group has recovered elsewhere; meanwhile the garbage collector
// deletes the first group's worker (its StatefulSet is the evicted leader
// pod's), so phase 2 finds pods of its plan already gone. udrain counts
// them Gone, not errors, disrupts each group once and counts it once; the
// recording shows never more than one group down, and each group
// recovered on LWS's recreated pods.
func TestLWSPhase2FindsMembersGone(t *testing.T) {
	t.Parallel()
	one := intstr.FromInt32(1)
	cfg := lwsConfig{UDs: 4, PerUD: 2, Groups: 6, Size: 2, GPUsPerPod: 4, spareAfter: true,
		Set: fixture.LeaderWorkerSet{Placement: fixture.PlaceSpread, Budget: &fixture.LeaderBudget{MaxUnavailable: &one}}}
	s := deployLWS(t, cfg)
	ctx := t.Context()
	events := &eventLog{}
	// The spare domain came after the groups were placed: the audit says
	// two groups of the workload share a domain while the spare holds
	// none (an error finding); the drill wants exactly that.
	d := s.drainer(t, events, eviction.Options{AllowViolations: true})
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-lws-gone", Domains: s.domains(), Order: eviction.OrderSpareFirst, RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) }})
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	t.Logf("rollout took %s; order %v", time.Since(start).Round(time.Millisecond), domainsOf(res))
	checkWholeRollout(t, s, start, "udrain rollout, two groups a domain")
	checkLWSDrainEvents(t, events)
	// Pods of the plans that LWS or the garbage collector deleted before
	// udrain came to them: not evicted, not errors.
	before := 0
	for _, dom := range res.Domains {
		if dr := dom.Drain; dr != nil {
			before += dr.Pods.Phase2AlreadyGone + dr.Pods.Phase2AlreadyTerminating
		}
	}
	t.Logf("phase 2 found %d planned pods already gone or terminating (deleted by the garbage collector with their leader)", before)
	if before == 0 {
		t.Errorf("phase 2 found no planned pod gone: the drill did not make the garbage collector delete a member first")
	}
	if blocked := len(events.ofType(eviction.EventBlocked)); blocked == 0 {
		t.Errorf("no eviction was refused by the budget: the second leader of a domain was not held back")
	}
	sum := report.SummarizeRollout(res)
	if sum.GroupsDisrupted != s.real.Replicas || sum.GroupsDisruptedAgain != 0 {
		t.Errorf("summary %+v: want %d groups disrupted, none again", sum, s.real.Replicas)
	}
	seen := map[topology.GroupID]string{}
	for _, dom := range res.Domains {
		for _, g := range dom.Groups {
			if prev, ok := seen[g.Group]; ok {
				t.Errorf("group %s counted in %s and again in %s", g.Group, prev, dom.Domain)
			}
			seen[g.Group] = dom.Domain
			if g.Healthy == nil {
				t.Errorf("group %s evicted from %s never seen healthy again", g.Group, g.From)
			}
		}
	}
	if len(seen) != s.real.Replicas {
		t.Errorf("%d groups with a downtime, want %d", len(seen), s.real.Replicas)
	}
	status := func(pods []corev1.Pod) []fixture.GroupStatus { return s.real.Groups(pods, s.nodeList) }
	tl, err := fixture.NewTimeline(s.rec.Events(), start, status, s.real.GroupIndex)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range tl.Groups {
		if g.Recovered.IsZero() {
			t.Errorf("group %d never recovered on recreated pods", g.Index)
		}
	}
	checkUpgradedAndUncordoned(t, s, "e2e-lws-gone")
}

// checkLWSDrainEvents checks udrain's events of a rollout over real LWS:
// the pods LWS or the garbage collector deleted before their eviction are
// Gone, not errors; no eviction failed, no drain stopped, nothing was
// retried.
func checkLWSDrainEvents(t *testing.T, events *eventLog) (gone int) {
	t.Helper()
	evicted := 0
	for _, e := range events.all() {
		switch {
		case e.Type == eviction.EventEvictionFailed, e.Type == eviction.EventDrainStopped, e.Type == eviction.EventRetrying:
			t.Errorf("udrain %s %s: %s %s", e.Type, podOf(e), e.Message, e.Error)
		case e.Request == eviction.RequestGone:
			gone++
		case e.Request == eviction.RequestEvicted:
			evicted++
		}
	}
	t.Logf("udrain's eviction requests: %d evicted, %d found the pod already gone (deleted by LWS or the garbage collector), %d refused by the budget", evicted, gone, len(events.ofType(eviction.EventBlocked)))
	return gone
}

func podOf(e eviction.Event) string {
	if e.Pod == nil {
		return ""
	}
	return e.Pod.String()
}

// checkRecoveredInOrder checks, on the recording from start on, that the
// rollout started evicting the group of each domain only after the group
// of the domain before had recovered on recreated pods (none of its
// original pods left); order lists the groups in the rollout's order,
// domainOf their domains.
func checkRecoveredInOrder(t *testing.T, s *scenario, start time.Time, order []int, domainOf map[int]string,
	groups func([]corev1.Pod, []corev1.Node) []fixture.GroupStatus, groupOf func(*corev1.Pod) (int, bool)) []string {
	t.Helper()
	status := func(pods []corev1.Pod) []fixture.GroupStatus { return groups(pods, s.nodeList) }
	tl, err := fixture.NewTimeline(s.rec.Events(), start, status, groupOf)
	if err != nil {
		t.Fatal(err)
	}
	byIndex := map[int]fixture.GroupTimeline{}
	for _, g := range tl.Groups {
		byIndex[g.Index] = g
	}
	var problems []string
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		prev, next := byIndex[a], byIndex[b]
		switch {
		case prev.Recovered.IsZero():
			problems = append(problems, fmt.Sprintf("group %d (domain %s) never recovered on recreated pods", a, domainOf[a]))
		case next.FirstEvicted.IsZero():
			problems = append(problems, fmt.Sprintf("nothing of group %d (domain %s) evicted", b, domainOf[b]))
		case !prev.Recovered.Before(next.FirstEvicted):
			problems = append(problems, fmt.Sprintf("domain %s: first eviction at %s, before group %d of domain %s recovered at %s",
				domainOf[b], next.FirstEvicted.Format("15:04:05.000"), a, domainOf[a], prev.Recovered.Format("15:04:05.000")))
		default:
			t.Logf("group %d recovered on recreated pods %s before the first eviction in %s (group %d)",
				a, next.FirstEvicted.Sub(prev.Recovered).Round(time.Millisecond), domainOf[b], b)
		}
	}
	return problems
}

// leaderReadyBesideOldWorkers replays the recording and names each group
// whose leader was Ready (its gate True) at a moment when a worker of the
// group, not terminating, belonged to another incarnation: its
// StatefulSet (the worker StatefulSet LWS makes for a leader pod, owned by
// it) was not the current leader's. The budget would count such a group
// healthy while its new leader and old workers are not one group. It
// logs how long new leaders and other incarnations' workers coexisted.
func leaderReadyBesideOldWorkers(t *testing.T, s *scenario, owners *ownerRecorder) []string {
	t.Helper()
	var problems []string
	seen := map[int]bool{}
	var mixedSince map[int]time.Time
	var mixed time.Duration
	unknown := map[types.UID]bool{}
	mixedSince = map[int]time.Time{}
	err := s.rec.Replay(func(at time.Time, pods map[types.UID]*corev1.Pod) error {
		leaders := map[int]*corev1.Pod{}
		for _, p := range pods {
			if g, ok := s.real.GroupIndex(p); ok && s.real.IsLeader(p) && p.DeletionTimestamp == nil {
				leaders[g] = p
			}
		}
		now := map[int]bool{}
		for _, p := range pods {
			g, ok := s.real.GroupIndex(p)
			l := leaders[g]
			if !ok || s.real.IsLeader(p) || p.DeletionTimestamp != nil || l == nil {
				continue
			}
			ref := metav1.GetControllerOf(p)
			if ref == nil {
				continue
			}
			owner, known := owners.ownerOf(ref.UID)
			if !known {
				unknown[ref.UID] = true
				continue
			}
			if owner == l.UID {
				continue
			}
			now[g] = true
			if fixture.IsReady(l) && !seen[g] {
				seen[g] = true
				problems = append(problems, fmt.Sprintf("at %s leader %s (uid %s) of group %d was Ready beside worker %s of another incarnation (its StatefulSet's owner %s), on %s",
					at.Format("15:04:05.000"), l.Name, l.UID, g, p.Name, owner, p.Spec.NodeName))
			}
		}
		for g := range now {
			if _, ok := mixedSince[g]; !ok {
				mixedSince[g] = at
			}
		}
		for g, since := range mixedSince {
			if !now[g] {
				mixed += at.Sub(since)
				delete(mixedSince, g)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("new leaders beside workers of an earlier incarnation (not terminating): %s in all, Ready during it in %d group(s); %d worker StatefulSet(s) not seen by the recorder",
		mixed.Round(time.Millisecond), len(problems), len(unknown))
	return problems
}

// ownerRecorder remembers the controller of every StatefulSet of a
// namespace it saw, also after its deletion: which leader pod a worker
// StatefulSet belonged to.
type ownerRecorder struct {
	mu     sync.Mutex
	owners map[types.UID]types.UID
}

func recordOwners(t *testing.T, c kubernetes.Interface, namespace string) *ownerRecorder {
	t.Helper()
	r := &ownerRecorder{owners: map[types.UID]types.UID{}}
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(namespace))
	inf := factory.Apps().V1().StatefulSets().Informer()
	add := func(obj any) {
		sts, ok := obj.(*appsv1.StatefulSet)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOf(sts); ref != nil {
			r.mu.Lock()
			r.owners[sts.UID] = ref.UID
			r.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("StatefulSet informer did not sync")
	}
	return r
}

func (r *ownerRecorder) ownerOf(sts types.UID) (types.UID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[sts]
	return o, ok
}

// requestCounter counts a client's writes of pod status (the
// readiness-gate controller's condition patches) and their answers.
type requestCounter struct {
	mu sync.Mutex
	requestCounts
}

type requestCounts struct {
	patches, conflicts, notFound int
	trues, trueConflicts         int
}

func (c requestCounts) String() string {
	pct := 0.0
	if c.patches > 0 {
		pct = 100 * float64(c.conflicts) / float64(c.patches)
	}
	return fmt.Sprintf("%d condition patches, %d answered 409 Conflict (%.0f%%), %d 404; %d True (%d 409)", c.patches, c.conflicts, pct, c.notFound, c.trues, c.trueConflicts)
}

func (c requestCounts) minus(o requestCounts) requestCounts {
	return requestCounts{c.patches - o.patches, c.conflicts - o.conflicts, c.notFound - o.notFound, c.trues - o.trues, c.trueConflicts - o.trueConflicts}
}

func (c *requestCounter) snapshot() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requestCounts
}

// client returns a clientset on cfg whose writes of pod status c counts.
func (c *requestCounter) client(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: c} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

type countingTransport struct {
	next http.RoundTripper
	c    *requestCounter
}

func (ct *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	isTrue := false
	if req.Method == http.MethodPatch && req.Body != nil {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		isTrue = bytes.Contains(body, []byte(`"status":"True"`))
	}
	resp, err := ct.next.RoundTrip(req)
	if req.Method != http.MethodPatch || !strings.Contains(req.URL.Path, "/pods/") || !strings.HasSuffix(req.URL.Path, "/status") {
		return resp, err
	}
	ct.c.mu.Lock()
	defer ct.c.mu.Unlock()
	ct.c.patches++
	if isTrue {
		ct.c.trues++
	}
	if err == nil {
		switch resp.StatusCode {
		case http.StatusConflict:
			ct.c.conflicts++
			if isTrue {
				ct.c.trueConflicts++
			}
		case http.StatusNotFound:
			ct.c.notFound++
		}
	}
	return resp, err
}

// TestLWSUpdateDuringRollout is the drill "a LeaderWorkerSet rolling
// update starts during a node rollout": LWS's update deletes and recreates
// every group (one at a time, maxUnavailable 1) through no budget. The
// rollout (spare domain first, then the groups' domains) has just finished
// its first group's domain when the update starts. By default udrain does
// not start the next domain while the update runs: it says so
// (WorkloadUpdating, naming the LeaderWorkerSet; rollout status lists it on
// the domain), evicts nothing until LWS's status says the update is done
// or the update has moved every group off the domain (udrain's steering
// keeps recreated groups off the pending domains), then goes on; the
// independent recording shows never fewer than 2 of 3 groups healthy. With the wait turned off (RolloutOptions.IgnoreWorkloadUpdates), the
// same run evicts while LWS's update runs: the drill fails.
func TestLWSUpdateDuringRollout(t *testing.T) {
	t.Parallel()
	t.Run("waits", func(t *testing.T) {
		t.Parallel()
		r := runUpdateDuringRollout(t, false)
		if len(r.evictedDuring) > 0 {
			t.Errorf("udrain evicted %d pod(s) while the LeaderWorkerSet rolled out its update (%s): %v", len(r.evictedDuring), r.window, r.evictedDuring)
		}
		if want := r.s.real.Replicas - 1; r.o.MinHealthy < want {
			t.Errorf("only %d groups healthy at %s; the budget keeps %d", r.o.MinHealthy, r.o.MinHealthyAt.Format("15:04:05.000"), want)
		}
		updating := r.events.ofType(eviction.EventWorkloadUpdating)
		updated := r.events.ofType(eviction.EventWorkloadUpdated)
		named := slices.ContainsFunc(updating, func(e eviction.Event) bool {
			return strings.Contains(e.Message, "LeaderWorkerSet "+r.s.tt.Name+"/llm rolls out an update")
		})
		if len(updating) == 0 || len(updated) == 0 || updating[0].Domain != r.next || !named {
			t.Errorf("WorkloadUpdating events %v, WorkloadUpdated %v: want the wait said for domain %s, naming the LeaderWorkerSet", eventMessages(updating), eventMessages(updated), r.next)
		} else if !updated[0].Time.After(r.window.end.Add(-time.Second)) {
			// Before the update's end only when the update has taken
			// every pod of the LeaderWorkerSet off the domain (the
			// wait is for workloads on the domain; the steering keeps
			// recreated groups off pending domains): the domain's plan
			// then evicts nothing.
			planned := r.events.ofType(eviction.EventPlanned)
			i := slices.IndexFunc(planned, func(e eviction.Event) bool { return e.Domain == r.next })
			if i < 0 || planned[i].Progress.Phase1Total+planned[i].Progress.Phase2Total > 0 {
				t.Errorf("udrain went on at %s, before LWS's update was done at %s, with pods on %s to evict (plan: %v)", updated[0].Time.Format("15:04:05.000"), r.window.end.Format("15:04:05.000"), r.next, eventMessages(planned))
			} else {
				t.Logf("udrain went on at %s, before LWS's update was done at %s: the update had moved every group off %s (its plan: %s)", updated[0].Time.Format("15:04:05.000"), r.window.end.Format("15:04:05.000"), r.next, planned[i].Message)
			}
		}
		if r.status == nil || len(r.status.Updating) == 0 || r.status.State != eviction.StatePending {
			t.Errorf("rollout status of %s during the wait: %+v; want Pending with the LeaderWorkerSet's update", r.next, r.status)
		} else {
			t.Logf("rollout status during the wait: %s %s, updating %s", r.status.Domain, r.status.State, r.status.Updating[0])
		}
	})
	// The control: without the wait udrain evicts while LWS's update runs.
	// Were it not so, the run above would prove nothing.
	t.Run("without the wait", func(t *testing.T) {
		t.Parallel()
		r := runUpdateDuringRollout(t, true)
		if len(r.evictedDuring) == 0 {
			t.Errorf("with the wait off, udrain evicted nothing while the LeaderWorkerSet rolled out its update (%s): the drill proves nothing", r.window)
		}
		t.Logf("with the wait off: %d eviction(s) during LWS's update; fewest healthy groups %d of %d", len(r.evictedDuring), r.o.MinHealthy, r.s.real.Replicas)
	})
}

// updateRun is what one run of the drill showed.
type updateRun struct {
	s      *scenario
	o      observation
	events *eventLog
	// next is the domain the rollout takes after the update starts.
	next   string
	window updateWindow
	// evictedDuring are the pods udrain evicted (accepted) inside the
	// window; status is the next domain's progress read during the wait.
	evictedDuring []string
	status        *eviction.RolloutDomain
}

// updateWindow is when LWS's update ran, as its status showed it to a
// poll of the test's own: from the template change until it reported every
// group updated and ready, UpdateInProgress gone.
type updateWindow struct{ start, end time.Time }

func (w updateWindow) String() string {
	return fmt.Sprintf("%s to %s", w.start.Format("15:04:05.000"), w.end.Format("15:04:05.000"))
}

func eventMessages(evs []eviction.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Domain+": "+e.Message)
	}
	return out
}

func runUpdateDuringRollout(t *testing.T, ignore bool) updateRun {
	t.Helper()
	s := deployLWS(t, defaultLWS())
	ctx := t.Context()
	domainOf, err := s.real.Domains(ctx, s.tt.Client)
	if err != nil {
		t.Fatal(err)
	}
	var spare string
	for _, d := range s.domains() {
		if !slices.Contains(slices.Collect(maps.Values(domainOf)), d) {
			spare = d
		}
	}
	order := append([]string{spare}, domainOf[0], domainOf[1], domainOf[2])
	r := updateRun{s: s, events: &eventLog{}, next: domainOf[1]}
	id := "e2e-lws-update"
	if ignore {
		id += "-ignored"
	}
	statusReader, err := eviction.New(s.tt.Client, eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var wg sync.WaitGroup
	updated := make(chan updateWindow, 1)
	var mu sync.Mutex
	hook := func(e eviction.Event) {
		switch {
		case e.Type == eviction.EventDomainDone && e.Domain == domainOf[0]:
			once.Do(func() {
				// The update starts: LWS's status says so before the
				// rollout takes its next domain.
				start := time.Now()
				if err := s.real.Update(ctx, s.dyn, "v2"); err != nil {
					t.Errorf("update: %v", err)
					return
				}
				for time.Since(start) < 10*time.Second {
					if st, err := s.real.Status(ctx, s.dyn); err == nil && st.Updating() {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				wg.Go(func() { updated <- watchUpdate(t, s, start) })
			})
		case e.Type == eviction.EventWorkloadUpdating && e.Domain == r.next:
			wg.Go(func() {
				st, err := statusReader.RolloutStatus(ctx, eviction.RolloutOptions{ID: id, Domains: order})
				if err != nil {
					t.Errorf("rollout status: %v", err)
					return
				}
				// A WorkloadUpdating event each time the wait's message
				// changes, a read each: keep one that lists the update
				// (a later read may come once the update has moved the
				// group off the domain, which then lists none).
				for _, p := range st.Domains {
					if p.Domain == r.next {
						mu.Lock()
						if r.status == nil || len(r.status.Updating) == 0 {
							r.status = &p
						}
						mu.Unlock()
					}
				}
			})
		}
	}
	d := hookedDrainer(t, s, "udrain-events.txt", r.events, eviction.Options{}, hook)
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: id, Domains: order, Order: eviction.OrderGiven, RecoveryTimeout: 3 * time.Minute, IgnoreWorkloadUpdates: ignore,
		Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) }})
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	wg.Wait()
	select {
	case r.window = <-updated:
	default:
		t.Fatal("the LeaderWorkerSet's update never started")
	}
	t.Logf("rollout (wait off: %v) took %s, order %v; LWS's update ran %s (%s)", ignore, time.Since(start).Round(time.Millisecond), domainsOf(res),
		r.window, r.window.end.Sub(r.window.start).Round(time.Millisecond))
	s.waitHealthy(t, 2*time.Minute)
	r.o = s.observe(t, start)
	t.Logf("recorded: %s", r.o)
	for _, e := range r.events.all() {
		if e.Request == eviction.RequestEvicted && e.Time.After(r.window.start) && e.Time.Before(r.window.end) {
			r.evictedDuring = append(r.evictedDuring, fmt.Sprintf("%s at %s", podOf(e), e.Time.Format("15:04:05.000")))
		}
	}
	return r
}

// watchUpdate polls the LeaderWorkerSet's status from start until its
// update is done: every group updated and ready, not updating.
func watchUpdate(t *testing.T, s *scenario, start time.Time) updateWindow {
	ctx := t.Context()
	// The window ends when the last look that still found the update
	// running was asked: the update was running then for sure. A look's
	// answer comes later, and udrain's own poll may see the update done
	// and evict before it.
	busy := start
	for {
		asked := time.Now()
		st, err := s.real.Status(ctx, s.dyn)
		if err == nil && !st.Updating() && st.UpdatedReplicas == s.real.Replicas && st.ReadyReplicas == s.real.Replicas {
			return updateWindow{start, busy}
		}
		if err == nil {
			busy = asked
		}
		if ctx.Err() != nil || time.Since(start) > 5*time.Minute {
			t.Errorf("the LeaderWorkerSet's update did not finish: %+v, %v", st, err)
			return updateWindow{start, time.Now()}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
