package eviction

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/topology"
)

// lwsJSON is a LeaderWorkerSet "llm" of 3 groups as the API server serves
// it: generation gen, observed observed, UpdateInProgress updating.
func lwsJSON(gen, observed int64, updating bool, updated int) string {
	cond := `{"type":"Available","status":"True","reason":"AllGroupsReady","message":"All replicas are ready","lastTransitionTime":"2026-07-01T12:00:00Z"}`
	if updating {
		cond = `{"type":"UpdateInProgress","status":"True","reason":"GroupsUpdating","message":"Rolling Upgrade is in progress","lastTransitionTime":"2026-07-01T12:00:00Z"}`
	}
	return fmt.Sprintf(`{"apiVersion":"leaderworkerset.x-k8s.io/v1","kind":"LeaderWorkerSet",
"metadata":{"name":"llm","namespace":"inference","generation":%d},
"spec":{"replicas":3,"rolloutStrategy":{"type":"RollingUpdate","rollingUpdateConfiguration":{"partition":0,"maxUnavailable":1,"maxSurge":0}}},
"status":{"observedGeneration":%d,"replicas":3,"readyReplicas":2,"updatedReplicas":%d,"conditions":[%s]}}`, gen, observed, updated, cond)
}

func TestLWSUpdate(t *testing.T) {
	since := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		json string
		want *WorkloadUpdate
	}{
		{"available", lwsJSON(2, 2, false, 3), nil},
		{"rolling", lwsJSON(2, 2, true, 1), &WorkloadUpdate{Kind: "LeaderWorkerSet", Namespace: "inference", Name: "llm", Replicas: 3, Updated: 1, Ready: 2, Since: &since}},
		{"spec not observed", lwsJSON(3, 2, false, 3), &WorkloadUpdate{Kind: "LeaderWorkerSet", Namespace: "inference", Name: "llm", Replicas: 3, Updated: 3, Ready: 2, Unobserved: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(tc.json)); err != nil {
				t.Fatal(err)
			}
			o, err := decodeLWS(u)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := o.update()
			if !ok {
				if tc.want != nil {
					t.Errorf("not updating, want %+v", tc.want)
				}
				return
			}
			if diff := cmp.Diff(tc.want, &got); diff != "" {
				t.Errorf("update (-want +got):\n%s", diff)
			}
		})
	}
	u := WorkloadUpdate{Kind: "LeaderWorkerSet", Namespace: "ns", Name: "llm", Replicas: 3, Updated: 1, Ready: 2, Partition: 1}
	if got, want := u.String(), "LeaderWorkerSet ns/llm rolls out an update: 1 of 3 groups updated, 2 ready (partition 1)"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
}

// fakeLWS answers reads of LeaderWorkerSet inference/llm: updating for the
// first `updating` reads, then done.
type fakeLWS struct {
	mu       sync.Mutex
	reads    int
	updating int
}

func (f *fakeLWS) read(_ context.Context, ref workloadRef) (*lwsObject, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if ref != (workloadRef{testNS, "llm"}) {
		return nil, fmt.Errorf("read of %v, want inference/llm", ref)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(lwsJSON(2, 2, f.reads <= f.updating, 1))); err != nil {
		return nil, err
	}
	return decodeLWS(u)
}

func (f *fakeLWS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// TestRolloutWaitsForWorkloadUpdates: a domain holding a group of a
// LeaderWorkerSet that rolls out its own update is not cordoned until the
// update is done; the wait is said (WorkloadUpdating, then
// WorkloadUpdated) before the domain's first cordon.
func TestRolloutWaitsForWorkloadUpdates(t *testing.T) {
	ctx := testContext(t)
	const domains, nodesPer, size = 2, 2, 2
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	lws := &fakeLWS{updating: 3}
	d.s.readLWS = lws.read
	_, err = d.Rollout(ctx, RolloutOptions{ID: "r", Domains: []string{"ud-1"}, NoLock: true, WorkloadUpdateInterval: 5 * time.Millisecond, Upgrade: func(ctx context.Context, dom topology.Domain) error {
		fc.recreateGroup(ctx, 0, size, 1, nodesPer, domains)
		return nil
	}})
	if err != nil {
		t.Fatalf("Rollout: %v", err)
	}
	var seq []string
	for _, e := range log.all() {
		switch e.Type {
		case EventWorkloadUpdating, EventWorkloadUpdated:
			seq = append(seq, string(e.Type))
		case EventCordoned:
			if seq[len(seq)-1] != "Cordoned" {
				seq = append(seq, "Cordoned")
			}
		}
	}
	if diff := cmp.Diff([]string{"WorkloadUpdating", "WorkloadUpdated", "Cordoned"}, seq); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	up := log.ofType(EventWorkloadUpdating)[0]
	if len(up.Updates) != 1 || up.Updates[0].Name != "llm" || up.Domain != "ud-1" ||
		!strings.Contains(up.Message, "LeaderWorkerSet inference/llm rolls out an update: 1 of 3 groups updated") {
		t.Errorf("WorkloadUpdating %+v", up)
	}
	if n := lws.count(); n < 4 {
		t.Errorf("%d reads of the LeaderWorkerSet, want at least 4 (3 updating, 1 done)", n)
	}
}

// TestWorkloadUpdatesIgnoredOrTimedOut: with IgnoreWorkloadUpdates nothing
// is read; with a WorkloadUpdateTimeout, a domain whose workload keeps updating stops the rollout with
// a *RetryError (ReasonWorkloadUpdating) before anything is cordoned or evicted.
func TestWorkloadUpdatesIgnoredOrTimedOut(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
	d, err := New(fc.client, Options{Backoff: slowBackoff})
	if err != nil {
		t.Fatal(err)
	}
	lws := &fakeLWS{updating: 1 << 30}
	d.s.readLWS = lws.read
	if _, err := d.Rollout(ctx, RolloutOptions{ID: "r", NoLock: true, RecoveryTimeout: time.Millisecond, IgnoreWorkloadUpdates: true}); err == nil {
		t.Log("rollout done") // recovery may time out: the pods are not recreated; only the reads matter
	}
	if n := lws.count(); n != 0 {
		t.Errorf("IgnoreWorkloadUpdates: %d reads of LeaderWorkerSets, want 0", n)
	}

	fc = newFakeCluster(t, lwsCluster(1, 1, 2)...)
	log := newEventLog()
	d, err = New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	d.s.readLWS = lws.read
	_, err = d.Rollout(ctx, RolloutOptions{ID: "r", NoLock: true, WorkloadUpdateTimeout: 30 * time.Millisecond, WorkloadUpdateInterval: 5 * time.Millisecond})
	var wu *RetryError
	var de *DomainError
	if !asReason(err, &wu, ReasonWorkloadUpdating) || !errors.As(err, &de) || de.Stage != StagePlan || wu.Domain != "ud-1" || len(wu.Updates) != 1 {
		t.Fatalf("rollout: %v, want a *DomainError of stage plan wrapping a *RetryError (ReasonWorkloadUpdating) for ud-1", err)
	}
	if !strings.Contains(err.Error(), "not started after waiting") || !strings.Contains(err.Error(), "LeaderWorkerSet inference/llm rolls out an update") {
		t.Errorf("message %q", err)
	}
	if n := len(log.ofType(EventCordoned)) + len(fc.uids); n != 0 {
		t.Errorf("%d cordons and evictions, want none", n)
	}
}

func TestWorkloadUpdatesCheck(t *testing.T) {
	for _, tc := range []struct {
		opts  RolloutOptions
		field string
	}{
		{RolloutOptions{WorkloadUpdateTimeout: -1}, "eviction.RolloutOptions.WorkloadUpdateTimeout"},
		{RolloutOptions{WorkloadUpdateInterval: -1}, "eviction.RolloutOptions.WorkloadUpdateInterval"},
	} {
		var ce *udrain.ConfigError
		if err := tc.opts.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: %v, want a *udrain.ConfigError naming %s", tc.opts, err, tc.field)
		}
	}
	o, err := RolloutOptions{}.withDefaults()
	if err != nil || o.WorkloadUpdateInterval != DefaultWorkloadUpdateInterval {
		t.Errorf("zero options: interval %v, %v; want DefaultWorkloadUpdateInterval", o.WorkloadUpdateInterval, err)
	}
}

// TestReadLeaderWorkerSet reads through the clientset's REST client (a
// GET of the resource's path), and from an informer's store.
func TestReadLeaderWorkerSet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/leaderworkerset.x-k8s.io/v1/namespaces/inference/leaderworkersets/llm":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, lwsJSON(2, 2, true, 1))
		case "/apis/leaderworkerset.x-k8s.io/v1/namespaces/inference/leaderworkersets/secret":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"leaderworkersets.leaderworkerset.x-k8s.io \"secret\" is forbidden"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	updates, problems := d.workloadUpdates(ctx, []workloadRef{{testNS, "gone"}, {testNS, "llm"}, {testNS, "secret"}})
	if len(updates) != 1 || updates[0].Name != "llm" || updates[0].Updated != 1 {
		t.Errorf("updates %+v, want llm's", updates)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "LeaderWorkerSet inference/secret") || !strings.Contains(problems[0], "forbidden") {
		t.Errorf("problems %q, want the forbidden one only (a missing LeaderWorkerSet is not one)", problems)
	}

	// From the caller's informer: no request.
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(lwsJSON(3, 2, false, 3))); err != nil {
		t.Fatal(err)
	}
	if err := store.Add(u); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	d.s.Informers = &clusterinformers.Set{LeaderWorkerSets: storeInformer{store}}
	updates, problems = d.workloadUpdates(ctx, []workloadRef{{testNS, "llm"}, {testNS, "gone"}})
	if len(problems) != 0 || len(updates) != 1 || !updates[0].Unobserved {
		t.Errorf("from the informer: updates %+v, problems %q; want llm's spec not observed", updates, problems)
	}
}

func TestLWSOf(t *testing.T) {
	pod := func(ns, lws, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lws + "-" + node, Labels: map[string]string{}}, Spec: corev1.PodSpec{NodeName: node}}
		if lws != "" {
			p.Labels[topology.LWSNameLabel] = lws
		}
		return p
	}
	pods := []*corev1.Pod{pod("b", "z", "n1"), pod("a", "y", "n2"), pod("a", "y", "n1"), pod("a", "x", "n3"), pod("a", "", "n1"), pod("a", "w", "")}
	want := []workloadRef{{"a", "y"}, {"b", "z"}}
	if diff := cmp.Diff(want, lwsOf(pods, []string{"n1", "n2"}), cmp.AllowUnexported(workloadRef{})); diff != "" {
		t.Errorf("LeaderWorkerSets on n1, n2 (-want +got):\n%s", diff)
	}
}

// TestRolloutStatusSaysWorkloadUpdates: a Pending domain lists the
// workloads on it that roll out their own update, each read once per
// status.
func TestRolloutStatusSaysWorkloadUpdates(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	d, err := New(fc.client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lws := &fakeLWS{updating: 1 << 30}
	d.s.readLWS = lws.read
	st, err := d.RolloutStatus(ctx, RolloutOptions{ID: "r", NoLock: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Domains {
		if p.State != StatePending || len(p.Updating) != 1 || p.Updating[0].Name != "llm" {
			t.Errorf("domain %s: %s, updating %+v; want Pending with llm's update", p.Domain, p.State, p.Updating)
		}
	}
	if n := lws.count(); n != 1 {
		t.Errorf("%d reads of the LeaderWorkerSet, want 1", n)
	}

	// IgnoreWorkloadUpdates: the status reads none and lists none.
	st, err = d.RolloutStatus(ctx, RolloutOptions{ID: "r", NoLock: true, IgnoreWorkloadUpdates: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Domains {
		if p.State != StatePending || len(p.Updating) != 0 {
			t.Errorf("IgnoreWorkloadUpdates: domain %s: %s, updating %+v; want Pending with none", p.Domain, p.State, p.Updating)
		}
	}
	if n := lws.count(); n != 1 {
		t.Errorf("IgnoreWorkloadUpdates: %d reads of the LeaderWorkerSet in all, want still 1", n)
	}
}
