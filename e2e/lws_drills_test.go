package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
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
			sum := res.Summary()
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

// checkLWSDrainEvents checks udrain's events of a rollout over real LWS:
// the pods LWS or the garbage collector deleted before their eviction are
// Gone, not errors; no eviction failed, no drain stopped, nothing was
// retried.
func checkLWSDrainEvents(t *testing.T, events *eventLog) {
	t.Helper()
	gone, evicted := 0, 0
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
	t.Logf("udrain's eviction requests: %d evicted, %d found the pod already gone (deleted by LWS or the garbage collector)", evicted, gone)
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
