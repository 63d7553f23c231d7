package clusterview

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// storeOf returns a namespace-indexed store holding objs.
func storeOf(t *testing.T, objs ...interface{}) cache.Indexer {
	t.Helper()
	s := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A View of one namespace sees the pods and budgets of that namespace
// only, and a pod out of scope is gone.
func TestNamespaceScope(t *testing.T) {
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", UID: "u"}}
	}
	pdb := func(ns string) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}}
	}
	pods := storeOf(t, pod("a"), pod("b"))
	st := Stores{Nodes: storeOf(t), Pods: pods, PodIndexer: pods, PDBs: storeOf(t, pdb("a"), pdb("b"))}
	for _, ns := range []string{"", "a"} {
		v := New(Config{Namespace: ns}, st)
		if _, ok := v.Pod("b", "p"); ok != (ns == "") {
			t.Errorf("scope %q: Pod(b/p) found = %v", ns, ok)
		}
		if gone := v.Gone("b", "p", "u"); gone != (ns != "") {
			t.Errorf("scope %q: Gone(b/p) = %v", ns, gone)
		}
		if _, ok := v.PDB("b", "b"); ok != (ns == "") {
			t.Errorf("scope %q: PDB(b/b) found = %v", ns, ok)
		}
		want := 2
		if ns != "" {
			want = 1
		}
		if got := len(v.AllPods()); got != want {
			t.Errorf("scope %q: %d pods, want %d", ns, got, want)
		}
		if got := len(v.PDBList()); got != want {
			t.Errorf("scope %q: %d budgets, want %d", ns, got, want)
		}
	}
	if v := New(Config{}, st); !v.Gone("a", "p", "other") {
		t.Errorf("a pod of another UID is not gone")
	}
}

// The handler calls OnUpdate with both objects and wakes the waiters.
func TestHandlerWakesWaiters(t *testing.T) {
	var updates int
	nodes := storeOf(t)
	v := New(Config{OnUpdate: func(old, cur interface{}) { updates++ }}, Stores{Nodes: nodes})
	changed := v.Changed()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	v.Handler().OnUpdate(n, n)
	select {
	case <-changed:
	default:
		t.Fatal("an update did not wake the waiters")
	}
	if updates != 1 {
		t.Errorf("OnUpdate called %d times, want 1", updates)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = nodes.Add(n)
		v.Notify()
	}()
	if !v.WaitFor(context.Background(), 10*time.Second, func() bool { _, ok := v.Node("n"); return ok }) {
		t.Error("WaitFor did not see the node")
	}
	if v.WaitFor(context.Background(), 10*time.Millisecond, func() bool { return false }) {
		t.Error("WaitFor held for a condition that never holds")
	}
}

type refusingInformer struct{ cache.SharedIndexInformer }

func (refusingInformer) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return nil, errors.New("stopped")
}

// Shared over informers that never sync, or refuse its handler, says so
// with its typed errors.
func TestSharedErrors(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0) // never started
	in := Informers{Nodes: f.Core().V1().Nodes().Informer(), Pods: f.Core().V1().Pods().Informer(), PDBs: f.Policy().V1().PodDisruptionBudgets().Informer()}
	_, err := Shared(context.Background(), Config{}, in, 50*time.Millisecond)
	var timeout *SyncTimeoutError
	if !errors.As(err, &timeout) || timeout.Waited != 50*time.Millisecond {
		t.Errorf("Shared over unstarted informers: %v, want a *SyncTimeoutError of 50ms", err)
	}
	in.PDBs = refusingInformer{in.PDBs.(cache.SharedIndexInformer)}
	_, err = Shared(context.Background(), Config{}, in, time.Second)
	var refused *HandlerError
	if !errors.As(err, &refused) {
		t.Errorf("Shared over an informer that refuses handlers: %v, want a *HandlerError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in.PDBs = f.Policy().V1().PodDisruptionBudgets().Informer()
	if _, err := Shared(ctx, Config{}, in, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Shared with a cancelled context: %v, want context.Canceled", err)
	}
}

// GetDaemonSet GETs a DaemonSet once per View; HasDaemonSet reads the
// caller's informer.
func TestDaemonSetLookups(t *testing.T) {
	client := fake.NewClientset(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ds"}})
	gets := 0
	client.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return false, nil, nil
	})
	v := New(Config{Client: client}, Stores{})
	for range 3 {
		if err := v.GetDaemonSet(context.Background(), "kube-system", "ds"); err != nil {
			t.Fatal(err)
		}
	}
	if gets != 1 {
		t.Errorf("%d GETs, want 1", gets)
	}
	if v.HasDaemonSets() || v.HasDaemonSet("kube-system", "ds") {
		t.Errorf("a View without a DaemonSet store holds DaemonSets")
	}
	withStore := New(Config{}, Stores{DaemonSets: storeOf(t, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ds"}})})
	if !withStore.HasDaemonSet("kube-system", "ds") || withStore.HasDaemonSet("kube-system", "other") || len(withStore.DaemonSetObjects()) != 1 {
		t.Errorf("the DaemonSet store is not read")
	}
}
