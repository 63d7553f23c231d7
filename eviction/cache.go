package eviction

import (
	"context"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
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

// view is udrain's watch on the cluster for one drain or rollout: nodes,
// pods and PodDisruptionBudgets, listed once and kept current by watches.
// Plans are made from it and all waiting (for pods to be gone, for budgets
// to free, for groups to recover) is driven by its events, not by polling.
type view struct {
	d       *Drainer
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	pdbs    cache.SharedIndexInformer
	changed *notifier
	cancel  context.CancelFunc

	mu          sync.Mutex
	daemonSets  map[string]error
	podGroups   []schedulingv1beta1.PodGroup
	podGroupsOK bool
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
		if needsStrip(&o.ObjectMeta) {
			c := *o
			stripMeta(&c.ObjectMeta)
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

// startView lists and starts watching; it returns once the caches are in
// sync. stop ends the watches.
func (d *Drainer) startView(parent context.Context) (*view, error) {
	ctx, cancel := context.WithCancel(parent)
	opts := []informers.SharedInformerOption{informers.WithTransform(stripForCache)}
	f := informers.NewSharedInformerFactoryWithOptions(d.client, 0, opts...)
	v := &view{
		d: d, factory: f, changed: newNotifier(), cancel: cancel,
		nodes:      f.Core().V1().Nodes().Informer(),
		pods:       f.Core().V1().Pods().Informer(),
		pdbs:       f.Policy().V1().PodDisruptionBudgets().Informer(),
		daemonSets: map[string]error{},
	}
	// Lists and watches refused for lack of permission are retried forever
	// by the reflectors: fail at once instead, naming what is missing.
	denied := make(chan error, 3)
	onError := func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			select {
			case denied <- err:
			default:
			}
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
	for _, inf := range []cache.SharedIndexInformer{v.nodes, v.pods, v.pdbs} {
		if err := inf.SetWatchErrorHandlerWithContext(onError); err != nil {
			cancel()
			return nil, err
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { v.changed.notify() },
		UpdateFunc: func(interface{}, interface{}) { v.changed.notify() },
		DeleteFunc: func(interface{}) { v.changed.notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{v.nodes, v.pods, v.pdbs} {
		if _, err := inf.AddEventHandler(h); err != nil {
			cancel()
			return nil, err
		}
	}
	f.Start(ctx.Done())
	syncCtx, stopSync := context.WithCancel(ctx)
	defer stopSync()
	deniedFound := make(chan error, 1)
	go func() {
		select {
		case err := <-denied:
			deniedFound <- err
			stopSync()
		case <-syncCtx.Done():
		}
	}()
	synced := f.WaitForCacheSync(syncCtx.Done())
	for typ, ok := range synced {
		if !ok {
			stopSync()
			cancel()
			f.Shutdown()
			select {
			case err := <-deniedFound:
				return nil, &PermissionError{Err: err}
			default:
			}
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			return nil, fmt.Errorf("watching %v did not sync", typ)
		}
	}
	return v, nil
}

func (v *view) stop() {
	v.cancel()
	v.factory.Shutdown()
}

// pod returns the cached pod namespace/name.
func (v *view) pod(namespace, name string) (*corev1.Pod, bool) {
	obj, ok, err := v.pods.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*corev1.Pod), true
}

// gone reports whether the pod with this UID no longer exists.
func (v *view) gone(p PlannedPod) bool {
	cur, ok := v.pod(p.Namespace, p.Name)
	return !ok || cur.UID != p.UID
}

func (v *view) pdb(namespace, name string) (*policyv1.PodDisruptionBudget, bool) {
	obj, ok, err := v.pdbs.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*policyv1.PodDisruptionBudget), true
}

func (v *view) node(name string) (*corev1.Node, bool) {
	obj, ok, err := v.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*corev1.Node), true
}

// snapshot returns the cluster state for planning. Objects are shared with
// the cache: planning must not modify them.
func (v *view) snapshot(ctx context.Context) (*Snapshot, error) {
	snap := &Snapshot{Now: v.d.s.Clock.Now()}
	for _, obj := range v.nodes.GetStore().List() {
		snap.Nodes = append(snap.Nodes, *obj.(*corev1.Node))
	}
	for _, obj := range v.pods.GetStore().List() {
		snap.Pods = append(snap.Pods, obj.(*corev1.Pod))
	}
	for _, obj := range v.pdbs.GetStore().List() {
		snap.PDBs = append(snap.PDBs, *obj.(*policyv1.PodDisruptionBudget))
	}
	pgs, err := v.listPodGroups(ctx)
	if err != nil {
		return nil, err
	}
	snap.PodGroups = pgs
	if err := v.lookupDaemonSets(ctx, snap.Pods); err != nil {
		return nil, err
	}
	v.mu.Lock()
	known := make(map[string]error, len(v.daemonSets))
	for k, e := range v.daemonSets {
		known[k] = e
	}
	v.mu.Unlock()
	snap.DaemonSets = func(namespace, name string) error { return known[namespace+"/"+name] }
	return snap, nil
}

// listPodGroups lists native PodGroups once per view; clusters that do not
// serve scheduling.k8s.io/v1beta1 (the GenericWorkload gate is off) have
// none.
func (v *view) listPodGroups(ctx context.Context) ([]schedulingv1beta1.PodGroup, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.podGroupsOK || v.d.s.Groupers != nil {
		return v.podGroups, nil
	}
	list, err := v.d.client.SchedulingV1beta1().PodGroups(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
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

// lookupDaemonSets GETs each DaemonSet that owns a pod, once per view, and
// remembers the answer (nil, NotFound or another error) for the filters.
func (v *view) lookupDaemonSets(ctx context.Context, pods []*corev1.Pod) error {
	want := map[types.NamespacedName]bool{}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && isDaemonSetRef(ref) {
			want[types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}] = true
		}
	}
	for nn := range want {
		key := nn.String()
		v.mu.Lock()
		_, done := v.daemonSets[key]
		v.mu.Unlock()
		if done {
			continue
		}
		_, err := v.d.client.AppsV1().DaemonSets(nn.Namespace).Get(ctx, nn.Name, metav1.GetOptions{})
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		v.mu.Lock()
		v.daemonSets[key] = err
		v.mu.Unlock()
	}
	return nil
}
