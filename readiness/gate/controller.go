package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// groupIndex names the pod informer's index from group key to member pods.
// On a caller's informer (Options.Pods), which several controllers may
// share, each controller's index has a name of its own (groupIndex/<n>).
const groupIndex = "udrain.dev/group"

// ErrAlreadyRun is returned by [Controller.Run] when called a second time:
// a controller's informers cannot be restarted; build a new one with [New].
var ErrAlreadyRun = errors.New("readiness gate: Run was already called on this Controller; build a new one with New")

// Controller keeps the [ConditionType] condition of every group's leader
// equal to [ConditionFor] of the group, for leaders that declare it as a
// readiness gate. Build it with [New], start it with [Controller.Run].
type Controller struct {
	client   kubernetes.Interface
	opts     Options
	selector labels.Selector
	factory  informers.SharedInformerFactory // nil with Options.Pods
	pods     cache.SharedIndexInformer
	index    string                                 // the name of this controller's group index on pods
	handler  cache.ResourceEventHandlerRegistration // this controller's event handler on pods

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[topology.GroupID] // the current term's; nil while not leading
	ran   bool

	changeMu sync.Mutex // serializes OnChange

	progress progress // for the health checks

	// afterSync, if set (by tests), is called after each reconcile of a
	// group with what it did.
	afterSync func(topology.GroupID, syncResult, error)
	// onTerm, if set (by tests), is called when a term starts (before its
	// first reconcile) and when it has ended (after its last).
	onTerm func(started bool)
}

// New returns a controller that watches pods through client, as opts says.
// It starts nothing: call [Controller.Run]. Bad options give a
// *udrain.ConfigError whose Field names the option at fault, e.g.
// "gate.Options.Selector".
func New(client kubernetes.Interface, opts Options) (*Controller, error) {
	if client == nil {
		return nil, configError("New(client)", "nil; pass a clientset, e.g. from kubernetes.NewForConfig")
	}
	opts, sel, err := opts.complete()
	if err != nil {
		return nil, err
	}
	c := &Controller{client: client, opts: opts, selector: sel, index: groupIndex}

	if opts.Pods != nil {
		c.pods = opts.Pods
		// Another controller may index the same informer.
		c.index = fmt.Sprintf("%s/%p", groupIndex, c)
	} else {
		var factoryOpts []informers.SharedInformerOption
		if opts.Namespace != "" {
			factoryOpts = append(factoryOpts, informers.WithNamespace(opts.Namespace))
		}
		if !sel.Empty() {
			s := sel.String()
			factoryOpts = append(factoryOpts, informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = s }))
		}
		c.factory = informers.NewSharedInformerFactoryWithOptions(client, opts.ResyncPeriod, factoryOpts...)
		c.pods = c.factory.Core().V1().Pods().Informer()
		if err := c.pods.SetTransform(stripManagedFields); err != nil {
			return nil, err
		}
	}
	if err := c.pods.AddIndexers(cache.Indexers{c.index: c.indexGroup}); err != nil {
		return nil, configError("Options.Pods", fmt.Sprintf("cannot index it: %v; pass a running or new informer, not a stopped one", err))
	}
	var err2 error
	c.handler, err2 = c.pods.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueuePod(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			c.enqueuePod(newObj)
			if oldID, ok := c.groupOfObject(oldObj); ok {
				if newID, ok := c.groupOfObject(newObj); !ok || newID != oldID {
					c.enqueue(oldID)
				}
			}
		},
		DeleteFunc: func(obj any) { c.enqueuePod(obj) },
	}, opts.ResyncPeriod) // 0: no resync
	if err2 != nil {
		return nil, configError("Options.Pods", fmt.Sprintf("cannot watch it: %v; pass a running or new informer, not a stopped one", err2))
	}
	return c, nil
}

// Run starts the informers, waits for their caches, and reconciles groups
// until ctx is done; with [Options.LeaderElection] it reconciles only while
// it holds the Lease, and campaigns again when it loses it. It returns nil
// once ctx is done and every worker has stopped (and the Lease, if held, is
// released); a [*udrain.HistoryChangedError], after the same, when the cluster's
// history went back under its pod cache (see [Options.HistoryCheck]); or
// [ErrAlreadyRun]. Run it in a goroutine to embed the
// controller; cancel ctx to stop it.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.ran {
		c.mu.Unlock()
		return ErrAlreadyRun
	}
	c.ran = true
	c.mu.Unlock()

	logger := klog.FromContext(ctx)
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	c.progress.setRunning(true)
	var guard sync.WaitGroup
	defer func() {
		cancel(nil)
		guard.Wait()
		if c.factory != nil {
			c.factory.Shutdown() // waits for the informers, which stop with ctx
		} else {
			// The caller's informer goes on; this controller's handler
			// does not.
			_ = c.pods.RemoveEventHandler(c.handler)
		}
		c.progress.setRunning(false)
	}()
	if c.factory != nil {
		c.factory.Start(ctx.Done())
	}
	logger.V(2).Info("Waiting for the pod cache", "namespace", c.opts.Namespace, "selector", c.selector.String(), "shared", c.factory == nil)
	if !cache.WaitForCacheSync(ctx.Done(), c.pods.HasSynced, c.handler.HasSynced) {
		return nil // ctx done before the cache filled: nothing was written
	}
	c.progress.setSynced()
	if c.opts.HistoryCheck > 0 {
		guard.Go(func() { c.guardHistory(ctx, cancel) })
	}
	var err error
	if c.opts.LeaderElection == nil {
		c.runTerm(ctx)
	} else {
		err = c.runElected(ctx)
	}
	var changed *udrain.HistoryChangedError
	if cause := context.Cause(ctx); parent.Err() == nil && errors.As(cause, &changed) {
		return changed
	}
	return err
}

// runTerm reconciles until ctx is done: every group once at the start (the
// controller may have missed events before), then the groups whose pods
// change. It returns when every worker has stopped.
func (c *Controller) runTerm(ctx context.Context) {
	logger := klog.FromContext(ctx)
	queue := workqueue.NewTypedRateLimitingQueue(c.opts.RateLimiter)
	c.mu.Lock()
	c.queue = queue
	c.mu.Unlock()
	c.progress.startTerm(queue, c.opts.Clock.Now())
	keys := c.pods.GetIndexer().ListIndexFuncValues(c.index)
	for _, key := range keys {
		if id, ok := parseGroupKey(key); ok {
			queue.Add(id)
		}
	}
	logger.Info("Reconciling groups", "groups", len(keys), "workers", c.opts.Workers)
	if c.onTerm != nil {
		c.onTerm(true)
		defer c.onTerm(false)
	}

	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx, queue) {
			}
		})
	}
	<-ctx.Done()
	c.mu.Lock()
	c.queue = nil
	c.mu.Unlock()
	queue.ShutDown()
	wg.Wait()
	c.progress.endTerm()
	logger.Info("Stopped reconciling groups")
}

// processNext reconciles the next group of the queue; false once the queue
// is shut down. After ctx is done it only drains the queue: a replica that
// lost its Lease must not write.
func (c *Controller) processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[topology.GroupID]) bool {
	id, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(id)
	if ctx.Err() != nil {
		return true
	}
	if id == syncProbe {
		c.progress.probeReached(c.opts.Clock.Now())
		return true
	}
	logger := klog.FromContext(ctx).WithValues("group", id.String(), "kind", id.Kind)
	c.progress.reconcileStarted(id, c.opts.Clock.Now())
	result, err := c.sync(klog.NewContext(ctx, logger), id)
	c.progress.reconcileDone(id, c.opts.Clock.Now(), err)
	if c.afterSync != nil {
		c.afterSync(id, result, err)
	}
	if err == nil {
		queue.Forget(id)
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	if apierrors.IsConflict(err) {
		// The leader changed since the cache saw it; its update is on the
		// way, and the retry will see it.
		logger.V(2).Info("Leader changed while writing its condition; retrying", "err", err)
	} else {
		logger.Error(err, "Cannot update the leader's condition; retrying")
	}
	queue.AddRateLimited(id)
	return true
}

func (c *Controller) enqueue(id topology.GroupID) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.Add(id)
	}
}

// enqueueAfter reconciles group id again after d.
func (c *Controller) enqueueAfter(id topology.GroupID, d time.Duration) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.AddAfter(id, d)
	}
}

func (c *Controller) enqueuePod(obj any) {
	if id, ok := c.groupOfObject(obj); ok {
		c.enqueue(id)
	}
}

// groupOfObject returns the group of a pod, or of the pod in a deletion
// tombstone.
func (c *Controller) groupOfObject(obj any) (topology.GroupID, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return topology.GroupID{}, false
	}
	return c.groupOf(pod)
}

// groupOf returns the group that the first claiming grouper puts pod in, as
// topology.FindGroups does. Pods outside Namespace and Selector belong to
// none, even if a watch or a caller's informer delivers them.
func (c *Controller) groupOf(pod *corev1.Pod) (topology.GroupID, bool) {
	if !c.inScope(pod) {
		return topology.GroupID{}, false
	}
	for _, grouper := range c.opts.Groupers {
		if m, ok := grouper(pod); ok {
			return topology.GroupID{Kind: m.Kind, Namespace: pod.Namespace, Name: m.Group}, true
		}
	}
	return topology.GroupID{}, false
}

func (c *Controller) indexGroup(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	id, ok := c.groupOf(pod)
	if !ok {
		return nil, nil
	}
	return []string{groupKey(id)}, nil
}

// groupKey is the index key of a group: "kind/namespace/name". Kinds and
// namespaces hold no slash.
func groupKey(id topology.GroupID) string {
	return string(id.Kind) + "/" + id.Namespace + "/" + id.Name
}

func parseGroupKey(key string) (topology.GroupID, bool) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return topology.GroupID{}, false
	}
	return topology.GroupID{Kind: topology.Kind(parts[0]), Namespace: parts[1], Name: parts[2]}, true
}

// stripManagedFields drops what the controller never reads and a large
// cluster would pay for in memory.
// inScope reports whether pod is one of Namespace and Selector: always so
// for the controller's own informer, which lists no other; a caller's
// informer (Options.Pods) may hold any pod.
func (c *Controller) inScope(pod *corev1.Pod) bool {
	return (c.opts.Namespace == "" || pod.Namespace == c.opts.Namespace) &&
		(c.selector.Empty() || c.selector.Matches(labels.Set(pod.Labels)))
}

func stripManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}
