// Package clusterview is the read-only, indexed, synced view of the
// cluster that one call of udrain's Drainer (a plan, a drain, a rollout, a
// health check) reads: nodes, pods, PodDisruptionBudgets and, when given,
// DaemonSets and native PodGroups, from informers (the caller's shared
// ones, or its own for the time of the call), and a notifier woken by
// their events. Plans are made from it and all waiting (for pods to be
// gone, budgets to free, groups to recover) is driven by its events, not
// by polling.
//
// The package knows nothing of plans, drains or their results: package
// eviction builds those over a View.
package clusterview

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain/internal/podcache"
)

// Config is what a View needs of its caller's settings.
type Config struct {
	// Client lists PodGroups and GETs DaemonSets that no informer holds,
	// and backs the View's own informers (StartOwn).
	Client kubernetes.Interface
	// Namespace limits the View's pods, budgets and PodGroups to one
	// namespace; "" is every namespace.
	Namespace string
	// CustomGroupers: the caller groups pods with groupers of its own.
	// The pod index knows only the default groupers, so the index queries
	// do not use it, and no PodGroups are read.
	CustomGroupers bool
	// SlimPods lets StartOwn keep pods in udrain's slim cache
	// (internal/podcache).
	SlimPods bool
	// OnUpdate, when set, is called with both objects of every update
	// event, before the View's waiters are woken.
	OnUpdate func(old, cur interface{})
}

// Stores are the caches a View reads. Nodes, Pods and PDBs are required;
// DaemonSets and PodGroups are optional. PodIndexer, when set, is the pod
// store's indexer: the View uses its namespace index and udrain's pod
// index (PodIndexName) when it has them.
type Stores struct {
	Nodes      cache.Store
	Pods       cache.Store
	PodIndexer cache.Indexer
	PDBs       cache.Store
	DaemonSets cache.Store
	PodGroups  cache.Store
}

// View is what one call sees of the cluster. Objects it returns are shared
// with the caches: callers must not modify them.
type View struct {
	cfg      Config
	nodes    cache.Store
	pods     cache.Store
	podIndex cache.Indexer // nil when the pod store has no namespace index
	pdbs     cache.Store
	dsStore  cache.Store // nil: DaemonSets are looked up with GETs
	pgStore  cache.Store // nil: PodGroups are listed (own informers) or unknown
	// ownLister: the view lists PodGroups itself.
	ownLister bool
	changed   *notifier
	stop      func()

	// groupIndex is the pod store when it has udrain's pod index
	// (PodIndexName), nil when it lacks it.
	groupIndex cache.Indexer

	mu          sync.Mutex
	daemonSets  map[string]error
	podGroups   []schedulingv1beta1.PodGroup
	podGroupsOK bool
	// noMembersLogged: the view has said (once, at V(2)) that it lists no
	// PodGroups because no pod in scope names one.
	noMembersLogged bool
}

// New returns a View over stores that the caller keeps up to date; it
// starts nothing, and its Stop does nothing. Its waiters wake on Notify
// or on the events of the handler (Handler) the caller adds to its
// informers.
func New(cfg Config, st Stores) *View {
	v := &View{cfg: cfg, changed: newNotifier(), daemonSets: map[string]error{}, stop: func() {}}
	v.setStores(st)
	return v
}

func (v *View) setStores(st Stores) {
	v.nodes, v.pods, v.pdbs, v.dsStore, v.pgStore = st.Nodes, st.Pods, st.PDBs, st.DaemonSets, st.PodGroups
	if ix := st.PodIndexer; ix != nil {
		if _, has := ix.GetIndexers()[cache.NamespaceIndex]; has {
			v.podIndex = ix
		}
		if HasPodIndex(ix) {
			v.groupIndex = ix
		}
	}
}

// Handler returns the event handler that wakes the View's waiters (and
// calls Config.OnUpdate on updates).
func (v *View) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { v.changed.notify() },
		UpdateFunc: func(old, cur interface{}) {
			if v.cfg.OnUpdate != nil {
				v.cfg.OnUpdate(old, cur)
			}
			v.changed.notify()
		},
		DeleteFunc: func(interface{}) { v.changed.notify() },
	}
}

// Stop ends what the View started: its own informers, or its handlers on
// the caller's.
func (v *View) Stop() { v.stop() }

// Changed returns a channel closed at the next change the View sees.
func (v *View) Changed() <-chan struct{} { return v.changed.wait() }

// Notify wakes the View's waiters, as an event of its informers does.
func (v *View) Notify() { v.changed.notify() }

// inScope reports whether an object of namespace ns is in the View's
// namespace scope.
func (v *View) inScope(ns string) bool {
	return v.cfg.Namespace == "" || v.cfg.Namespace == ns
}

// Pod returns the cached pod namespace/name.
func (v *View) Pod(namespace, name string) (*corev1.Pod, bool) {
	if !v.inScope(namespace) {
		return nil, false
	}
	obj, ok, err := v.pods.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return podcache.AsPod(obj), true
}

// Gone reports whether the pod namespace/name with this UID no longer
// exists.
func (v *View) Gone(namespace, name string, uid types.UID) bool {
	if !v.inScope(namespace) {
		return true
	}
	obj, ok, err := v.pods.GetByKey(namespace + "/" + name)
	return err != nil || !ok || !podcache.HasUID(obj, uid)
}

// PDB returns the cached PodDisruptionBudget namespace/name.
func (v *View) PDB(namespace, name string) (*policyv1.PodDisruptionBudget, bool) {
	if !v.inScope(namespace) {
		return nil, false
	}
	obj, ok, err := v.pdbs.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*policyv1.PodDisruptionBudget), true
}

// PDBList returns copies of the cached PodDisruptionBudgets in scope.
func (v *View) PDBList() []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	for _, obj := range v.pdbs.List() {
		if b := obj.(*policyv1.PodDisruptionBudget); v.inScope(b.Namespace) {
			out = append(out, *b)
		}
	}
	return out
}

// Node returns the cached node name.
func (v *View) Node(name string) (*corev1.Node, bool) {
	obj, ok, err := v.nodes.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*corev1.Node), true
}

// NodeList returns copies of the cached nodes.
func (v *View) NodeList() []corev1.Node {
	objs := v.nodes.List()
	out := make([]corev1.Node, len(objs))
	for i, o := range objs {
		out[i] = *o.(*corev1.Node)
	}
	return out
}

// PodsIn returns the cached pods of a namespace.
func (v *View) PodsIn(namespace string) []*corev1.Pod {
	if !v.inScope(namespace) {
		return nil
	}
	return podcache.Pods(v.PodObjectsIn(namespace))
}

// PodObjectsIn returns the cached objects (whole or slim pods) of the pods
// of a namespace in scope.
func (v *View) PodObjectsIn(namespace string) []interface{} {
	if !v.inScope(namespace) {
		return nil
	}
	if v.podIndex != nil {
		objs, _ := v.podIndex.ByIndex(cache.NamespaceIndex, namespace)
		return objs
	}
	var objs []interface{}
	for _, o := range v.pods.List() {
		if podcache.NamespaceOf(o) == namespace {
			objs = append(objs, o)
		}
	}
	return objs
}

// AllPods returns the cached pods in scope.
func (v *View) AllPods() []*corev1.Pod {
	if ns := v.cfg.Namespace; ns != "" {
		return v.PodsIn(ns)
	}
	return podcache.Pods(v.pods.List())
}

// Sizes returns how many nodes, pods and PodDisruptionBudgets the View's
// caches hold.
func (v *View) Sizes() (nodes, pods, pdbs int) {
	return len(v.nodes.ListKeys()), len(v.pods.ListKeys()), len(v.pdbs.ListKeys())
}

// WaitFor waits on the View's events until cond holds, at most timeout
// (real time), and reports whether it held.
func (v *View) WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := v.changed.wait()
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return cond()
		case <-changed:
		}
	}
}

// notifier wakes every waiter when something changed.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

// wait returns a channel closed at the next change.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}
