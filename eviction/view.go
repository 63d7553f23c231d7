package eviction

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

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

// view is what one call (a plan, a drain, a rollout, a health check) sees
// of the cluster: nodes, pods and PodDisruptionBudgets from informers (the
// caller's shared ones, or its own for the time of the call), and a
// notifier woken by their events. Plans are made from it and all waiting
// (for pods to be gone, budgets to free, groups to recover) is driven by
// its events, not by polling.
type view struct {
	d         *Drainer
	nodes     cache.Store
	pods      cache.Store
	podIndex  cache.Indexer // nil when the pod informer has no namespace index
	pdbs      cache.Store
	dsStore   cache.Store // nil: DaemonSets are looked up with GETs
	pgStore   cache.Store // nil: PodGroups are listed (own informers) or unknown
	ownLister bool        // the view lists PodGroups itself
	changed   *notifier
	stop      func()
	// hist remembers an object whose resourceVersion went back.
	hist history

	// groupIndex is the pod store when it has udrain's pod index
	// (podIndexName), nil when it lacks it.
	groupIndex cache.Indexer

	mu          sync.Mutex
	daemonSets  map[string]error
	podGroups   []schedulingv1beta1.PodGroup
	podGroupsOK bool
	// noMembersLogged: the view has said (once, at V(2)) that it lists no
	// PodGroups because no pod in scope names one.
	noMembersLogged bool
}

// stripForCache drops what udrain never reads and what weighs most in a
// large cluster's pod cache. It changes a shallow copy, never the object it
// is given: a watch may share that object with others (the fake clientset's
// watch hands out its own stored objects, a data race for anyone testing
// with it and the race detector).
func stripForCache(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if needsStrip(&o.ObjectMeta) {
			c := *o
			stripMeta(&c.ObjectMeta)
			return &c, nil
		}
	case *corev1.Node:
		// A node's images (up to 50 on a real node, often its largest
		// field) and volumes are read by nothing in udrain.
		st := &o.Status
		if needsStrip(&o.ObjectMeta) || len(st.Images) > 0 || len(st.VolumesInUse) > 0 || len(st.VolumesAttached) > 0 {
			c := *o
			stripMeta(&c.ObjectMeta)
			c.Status.Images, c.Status.VolumesInUse, c.Status.VolumesAttached = nil, nil, nil
			return &c, nil
		}
	case *policyv1.PodDisruptionBudget:
		if needsStrip(&o.ObjectMeta) {
			c := *o
			stripMeta(&c.ObjectMeta)
			return &c, nil
		}
	}
	return obj, nil
}

func needsStrip(m *metav1.ObjectMeta) bool {
	_, applied := m.Annotations[corev1.LastAppliedConfigAnnotation]
	return len(m.ManagedFields) > 0 || applied
}

func stripMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	if _, ok := m.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		m.Annotations = maps.Clone(m.Annotations)
		delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
	}
}

// startView returns the call's view once its informers have synced; stop
// ends what the view started (its own informers, or its handlers on the
// caller's).
func (d *Drainer) startView(ctx context.Context) (*view, error) {
	if d.s.Informers != nil {
		return d.sharedView(ctx)
	}
	return d.ownView(ctx)
}

func (d *Drainer) newView() *view {
	return &view{d: d, changed: newNotifier(), daemonSets: map[string]error{}}
}

func (v *view) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { v.changed.notify() },
		UpdateFunc: func(old, cur interface{}) {
			v.hist.update(old, cur)
			v.changed.notify()
		},
		DeleteFunc: func(interface{}) { v.changed.notify() },
	}
}

// sharedView reads through the caller's informers: it adds event handlers
// for the time of the call and starts no list or watch.
func (d *Drainer) sharedView(ctx context.Context) (*view, error) {
	in := d.s.Informers
	v := d.newView()
	v.nodes = in.Nodes.GetStore()
	v.pods = in.Pods.GetStore()
	if ix, ok := in.Pods.(indexer); ok {
		if _, has := ix.GetIndexer().GetIndexers()[cache.NamespaceIndex]; has {
			v.podIndex = ix.GetIndexer()
		}
		if hasPodIndex(ix.GetIndexer()) {
			v.groupIndex = ix.GetIndexer()
		}
	}
	v.pdbs = in.PodDisruptionBudgets.GetStore()
	if in.DaemonSets != nil {
		v.dsStore = in.DaemonSets.GetStore()
	}
	if in.PodGroups != nil {
		v.pgStore = in.PodGroups.GetStore()
	}
	type registration struct {
		inf Informer
		reg cache.ResourceEventHandlerRegistration
	}
	var regs []registration
	v.stop = func() {
		for _, r := range regs {
			_ = r.inf.RemoveEventHandler(r.reg)
		}
	}
	var synced []cache.InformerSynced
	for _, inf := range []Informer{in.Nodes, in.Pods, in.PodDisruptionBudgets, in.DaemonSets, in.PodGroups} {
		if inf == nil {
			continue
		}
		reg, err := inf.AddEventHandler(v.handler())
		if err != nil {
			v.stop()
			return nil, fmt.Errorf("watching the informers of Options.Informers: %w", err)
		}
		regs = append(regs, registration{inf, reg})
		synced = append(synced, inf.HasSynced, reg.HasSynced)
	}
	start := time.Now()
	if err := waitSynced(ctx, d.s.ConnectTimeout, synced); err != nil {
		v.stop()
		return nil, err
	}
	klog.FromContext(ctx).V(4).Info("Reading through the caller's informers", "waitedForSync", time.Since(start))
	return v, nil
}

// waitSynced waits until every synced func says so: informers that are
// running already (the usual case) and the handlers just added to them
// (their initial events come a moment later). It checks every 5ms, so a
// call over synced informers starts at once, unlike
// cache.WaitForCacheSync's 100ms period.
func waitSynced(ctx context.Context, timeout time.Duration, synced []cache.InformerSynced) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for _, s := range synced {
			done = done && s()
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return &NotSyncedError{Waited: timeout}
		case <-tick.C:
		}
	}
}

// inScope reports whether an object of namespace ns is in the Drainer's
// namespace scope.
func (v *view) inScope(ns string) bool {
	return v.d.s.Namespace == "" || v.d.s.Namespace == ns
}

// pod returns the cached pod namespace/name.
func (v *view) pod(namespace, name string) (*corev1.Pod, bool) {
	if !v.inScope(namespace) {
		return nil, false
	}
	obj, ok, err := v.pods.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return podcache.AsPod(obj), true
}

// gone reports whether the pod with this UID no longer exists.
func (v *view) gone(p PodRef) bool {
	if !v.inScope(p.Namespace) {
		return true
	}
	obj, ok, err := v.pods.GetByKey(p.Namespace + "/" + p.Name)
	return err != nil || !ok || !podcache.HasUID(obj, p.UID)
}

func (v *view) pdb(namespace, name string) (*policyv1.PodDisruptionBudget, bool) {
	if !v.inScope(namespace) {
		return nil, false
	}
	obj, ok, err := v.pdbs.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*policyv1.PodDisruptionBudget), true
}

func (v *view) node(name string) (*corev1.Node, bool) {
	obj, ok, err := v.nodes.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*corev1.Node), true
}

// nodeList returns copies of the cached nodes.
func (v *view) nodeList() []corev1.Node {
	objs := v.nodes.List()
	out := make([]corev1.Node, len(objs))
	for i, o := range objs {
		out[i] = *o.(*corev1.Node)
	}
	return out
}

// podsIn returns the cached pods of a namespace.
func (v *view) podsIn(namespace string) []*corev1.Pod {
	if !v.inScope(namespace) {
		return nil
	}
	return podsOf(v.podObjectsIn(namespace))
}

// podObjectsIn returns the cached objects of the pods of a namespace in
// scope.
func (v *view) podObjectsIn(namespace string) []interface{} {
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

// podsOf returns the pods of cached objects (asPod).
func podsOf(objs []interface{}) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		pods[i] = podcache.AsPod(o)
	}
	return pods
}

// allPods returns the cached pods in scope.
func (v *view) allPods() []*corev1.Pod {
	if ns := v.d.s.Namespace; ns != "" {
		return v.podsIn(ns)
	}
	return podsOf(v.pods.List())
}

// snapshot returns the cluster state for planning. Objects are shared with
// the cache: planning must not modify them.
func (v *view) snapshot(ctx context.Context) (*Snapshot, error) {
	return v.snapshotOf(ctx, v.nodeList(), v.allPods())
}

// planSnapshot returns the cluster state for a plan of domain: with the
// pod index, only the pods the plan reads (planPods), which at a fleet's
// size is a small part of the cluster's; else every pod, as snapshot.
func (v *view) planSnapshot(ctx context.Context, domain string) (*Snapshot, error) {
	nodes := v.nodeList()
	layout, err := topology.BuildLayout(nodes, v.d.s.layoutOptions())
	if err != nil {
		return v.snapshotOf(ctx, nodes, v.allPods()) // the plan says what is wrong
	}
	dom, err := layout.Domain(domain)
	if err != nil {
		return v.snapshotOf(ctx, nodes, v.allPods())
	}
	pods, ok := v.planPods(dom.Nodes)
	if !ok {
		pods = v.allPods()
	}
	snap, err := v.snapshotOf(ctx, nodes, pods)
	if snap != nil {
		snap.layout = layout
	}
	return snap, err
}

func (v *view) snapshotOf(ctx context.Context, nodes []corev1.Node, pods []*corev1.Pod) (*Snapshot, error) {
	snap := &Snapshot{Now: v.d.s.Clock.Now(), Pods: pods, Nodes: nodes}
	for _, obj := range v.pdbs.List() {
		if b := obj.(*policyv1.PodDisruptionBudget); v.inScope(b.Namespace) {
			snap.PDBs = append(snap.PDBs, *b)
		}
	}
	pgs, err := v.listPodGroups(ctx)
	if err != nil {
		return nil, err
	}
	snap.PodGroups = pgs
	snap.DaemonSets = v.daemonSetLookup(ctx)
	return snap, nil
}

// anyPodGroupMember reports whether a pod in scope names a native
// PodGroup (spec.schedulingGroup.podGroupName).
func (v *view) anyPodGroupMember() bool {
	for _, obj := range v.pods.List() {
		if podcache.GroupNameOf(obj) != "" && v.inScope(podcache.NamespaceOf(obj)) {
			return true
		}
	}
	return false
}

// listPodGroups returns native PodGroups: from the caller's informer, or
// listed once per view by a view with its own informers; clusters that do
// not serve scheduling.k8s.io/v1beta1 (the GenericWorkload gate is off)
// have none.
func (v *view) listPodGroups(ctx context.Context) ([]schedulingv1beta1.PodGroup, error) {
	if v.d.s.Groupers != nil {
		return nil, nil
	}
	if v.pgStore != nil {
		var out []schedulingv1beta1.PodGroup
		for _, o := range v.pgStore.List() {
			if pg := o.(*schedulingv1beta1.PodGroup); v.inScope(pg.Namespace) {
				out = append(out, *pg)
			}
		}
		return out, nil
	}
	if !v.ownLister {
		return nil, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.podGroupsOK {
		return v.podGroups, nil
	}
	// PodGroups only name the groups of pods that reference one: without
	// such a pod (yet), the list is not worth a request.
	if !v.anyPodGroupMember() {
		if !v.noMembersLogged {
			v.noMembersLogged = true
			klog.FromContext(ctx).V(2).Info("No native PodGroups", "reason", "no pod in scope names one (spec.schedulingGroup.podGroupName); grouping by labels")
		}
		return nil, nil
	}
	list, err := v.d.client.SchedulingV1beta1().PodGroups(v.d.s.Namespace).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		v.podGroups = list.Items
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		klog.FromContext(ctx).V(2).Info("No native PodGroups", "reason", err.Error())
	default:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		klog.FromContext(ctx).Info("Listing PodGroups failed; grouping by labels only", "err", err)
	}
	v.podGroupsOK = true
	return v.podGroups, nil
}

// daemonSetLookup answers whether a DaemonSet exists: from the caller's
// DaemonSet informer, or with one GET of it the first time a plan asks
// (for a pod on the domain it plans), remembering the answer (nil,
// NotFound or another error) for the rest of the view.
func (v *view) daemonSetLookup(ctx context.Context) DaemonSetLookup {
	if v.dsStore != nil {
		store := v.dsStore
		return func(namespace, name string) error {
			if _, ok, _ := store.GetByKey(namespace + "/" + name); ok {
				return nil
			}
			return DaemonSetsLookup(nil)(namespace, name)
		}
	}
	return func(namespace, name string) error {
		key := namespace + "/" + name
		v.mu.Lock()
		err, done := v.daemonSets[key]
		v.mu.Unlock()
		if done {
			return err
		}
		_, err = v.d.client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && ctx.Err() != nil {
			return ctx.Err() // not remembered: it says nothing of the DaemonSet
		}
		v.mu.Lock()
		v.daemonSets[key] = err
		v.mu.Unlock()
		return err
	}
}

// waitFor waits on the view's events until cond holds, at most timeout
// (real time), and reports whether it held.
func (v *view) waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
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
