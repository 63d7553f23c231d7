package eviction

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/eviction/evictiontest"
	"github.com/udrain/udrain/internal/testkit/kube"
)

// This file builds a fake cluster for the tests: nodes in upgrade domains,
// LeaderWorkerSet-like groups owned by StatefulSets, a PDB over the leaders,
// over evictiontest's fake API server, whose evictions enforce budgets the
// way the Eviction API does (429 when no disruption is allowed, 500 for two
// PDBs, 409 for a UID precondition that does not match).

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pdbsGVR = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

const testNS = "inference"

type fakeCluster struct {
	t      *testing.T
	client *fake.Clientset

	mu        sync.Mutex
	evictions []string // "ns/name" in the order the API accepted them
	uids      []types.UID
	attempts  []string // every eviction request, accepted or not
	uidSeq    int
	// onEvict, if set, runs before the API decides; returning a
	// non-nil error answers the request with it. dryRun marks udrain's
	// dry-run preflight requests.
	onEvict func(ns, name string, dryRun bool) error
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{t: t, client: fake.NewClientset(objs...)}
	evictiontest.Install(fc.client, evictiontest.Options{OnEvicted: fc.recordEviction})
	fc.client.PrependReactor("create", "pods", fc.beforeEviction)
	return fc
}

func (fc *fakeCluster) nextUID(name string) types.UID {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.uidSeq++
	return types.UID(fmt.Sprintf("%s-uid-%d", name, fc.uidSeq))
}

// beforeEviction records every eviction request and lets onEvict refuse
// it; the kit's reactor answers the rest.
func (fc *fakeCluster) beforeEviction(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	fc.mu.Lock()
	fc.attempts = append(fc.attempts, ev.Namespace+"/"+ev.Name)
	hook := fc.onEvict
	fc.mu.Unlock()
	if hook != nil {
		if err := hook(ev.Namespace, ev.Name, ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0); err != nil {
			return true, nil, err
		}
	}
	return false, nil, nil
}

// recordEviction records a pod the API removed (evictiontest's
// OnEvicted), and plays the disruption controller's first step: the
// budgets over the pod count one healthy pod less (they give the
// disruption back when the tests say so: setBudget, recreateGroup).
func (fc *fakeCluster) recordEviction(tr k8stesting.ObjectTracker, pod *corev1.Pod) error {
	fc.mu.Lock()
	fc.evictions = append(fc.evictions, pod.Namespace+"/"+pod.Name)
	fc.uids = append(fc.uids, pod.UID)
	fc.mu.Unlock()
	list, err := tr.List(pdbsGVR, schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, pod.Namespace)
	if err != nil {
		return err
	}
	for _, b := range list.(*policyv1.PodDisruptionBudgetList).Items {
		if sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			b.Status.CurrentHealthy--
			if err := tr.Update(pdbsGVR, &b, b.Namespace); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteBehindTheAPI removes a pod of testNS as a controller or the
// garbage collector does: the watch sees it go, and no eviction or budget
// records it.
func (fc *fakeCluster) deleteBehindTheAPI(name string) {
	fc.t.Helper()
	if err := fc.client.Tracker().Delete(podsGVR, testNS, name); err != nil {
		fc.t.Fatalf("deleting %s: %v", name, err)
	}
}

func (fc *fakeCluster) evicted() []string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]string(nil), fc.evictions...)
}

// mutations lists the actions that change the cluster.
func (fc *fakeCluster) mutations() []string {
	var out []string
	for _, a := range fc.client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			s := a.GetVerb() + " " + a.GetResource().Resource
			if sub := a.GetSubresource(); sub != "" {
				s += "/" + sub
			}
			out = append(out, s)
		}
	}
	return out
}

// testNode is a Ready node of domain (kube.Node).
func testNode(name, domain string) *corev1.Node {
	return kube.Node(name, kube.InDomain(domain))
}

func readyPod(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
	}
	return p
}

func ownedBy(kind, name string) []metav1.OwnerReference {
	apiVersion := "apps/v1"
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptrTo(true), UID: types.UID(name + "-owner")}}
}

func ptrTo[T any](v T) *T { return &v }

// lwsPod is a member of group g of LWS "llm" (kube.LWSPod), owned by the
// LWS controller's StatefulSets: worker 0 is the leader.
func lwsPod(g, worker, size int, nodeName string, uid types.UID) *corev1.Pod {
	return kube.LWSPod("llm", g, worker, size, kube.OnNode(nodeName), kube.WithUID(uid), kube.OwnedByStatefulSets)
}

// leaderPDB is the budget over the leaders of LWS "llm" (kube.LeaderPDB),
// allowing one disruption.
func leaderPDB(groups int) *policyv1.PodDisruptionBudget {
	return kube.LeaderPDB("llm", groups, 1)
}

// lwsCluster builds domains ud-1..ud-<domains> with nodesPerDomain nodes
// each and one group of size pods per domain, packed on the domain's nodes,
// plus the PDB over leaders.
func lwsCluster(domains, nodesPerDomain, size int) []runtime.Object {
	var objs []runtime.Object
	for d := 1; d <= domains; d++ {
		for n := 1; n <= nodesPerDomain; n++ {
			objs = append(objs, testNode(fmt.Sprintf("node-%d-%d", d, n), fmt.Sprintf("ud-%d", d)))
		}
		g := d - 1
		for w := 0; w < size; w++ {
			nodeName := fmt.Sprintf("node-%d-%d", d, w%nodesPerDomain+1)
			objs = append(objs, lwsPod(g, w, size, nodeName, types.UID(fmt.Sprintf("g%d-w%d", g, w))))
		}
	}
	objs = append(objs, leaderPDB(domains))
	return objs
}

// recreateGroup plays the StatefulSet controller and the kubelet: the
// group's pods come back (new UIDs) on the domain's nodes, Ready, and the
// disruption controller restores the budget.
func (fc *fakeCluster) recreateGroup(ctx context.Context, g, size, domain, nodesPerDomain, groups int) {
	fc.t.Helper()
	for w := 0; w < size; w++ {
		nodeName := fmt.Sprintf("node-%d-%d", domain, w%nodesPerDomain+1)
		p := lwsPod(g, w, size, nodeName, fc.nextUID(fmt.Sprintf("g%d-w%d", g, w)))
		if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			fc.t.Errorf("recreating %s: %v", p.Name, err)
		}
	}
	fc.setBudget(ctx, 1, int32(groups))
}

func (fc *fakeCluster) setBudget(ctx context.Context, allowed, healthy int32) {
	fc.t.Helper()
	b, err := fc.client.PolicyV1().PodDisruptionBudgets(testNS).Get(ctx, "llm-leaders", metav1.GetOptions{})
	if err != nil {
		fc.t.Fatalf("get pdb: %v", err)
	}
	b.Status.DisruptionsAllowed, b.Status.CurrentHealthy = allowed, healthy
	if _, err := fc.client.PolicyV1().PodDisruptionBudgets(testNS).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		fc.t.Fatalf("update pdb status: %v", err)
	}
}

// eventLog records events for assertions.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
}

func newEventLog() *eventLog { return &eventLog{notify: make(chan struct{}, 1)} }

func (l *eventLog) add(_ context.Context, e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

func (l *eventLog) ofType(t EventType) []Event {
	var out []Event
	for _, e := range l.all() {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// waitFor waits until an event matches, or fails the test after 10s.
func (l *eventLog) waitFor(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	var found Event
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, e := range l.all() {
			if match(e) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event within 10s; events: %v", what, eventMessages(l.all()))
	}
	return found
}

func eventTypes(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type) + " " + podOf(e) + e.Node
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

var _ = appsv1.DaemonSet{}

func eventMessages(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type) + " " + e.Domain + " " + podOf(e) + e.Node + ": " + e.Message
	}
	return out
}

// podOf returns "namespace/name" of a pod event's pod, "" for others.
func podOf(e Event) string {
	if e.Pod == nil {
		return ""
	}
	return e.Pod.String()
}

// viewOf is a Drainer over fc with opts, and its view started (stopped
// when the test ends).
func viewOf(ctx context.Context, fc *fakeCluster, opts Options) (*Drainer, *view) {
	fc.t.Helper()
	d, err := New(fc.client, opts)
	if err != nil {
		fc.t.Fatal(err)
	}
	v, err := d.startView(ctx)
	if err != nil {
		fc.t.Fatal(err)
	}
	fc.t.Cleanup(v.Stop)
	return d, v
}
