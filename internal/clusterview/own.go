package clusterview

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Starting is a View of its own informers being listed: what its caller
// waits on to learn whether they synced, and the list errors they saw
// meanwhile.
type Starting struct {
	// View is the View being started; its Stop stops its informers.
	View     *View
	ctx      context.Context
	start    time.Time
	synced   chan bool
	problems chan error
}

// StartOwn makes a View's own informers (nodes, pods, PDBs: the pods and
// budgets of Config.Namespace only, when set; pods in udrain's slim cache
// when Config.SlimPods; udrain's pod index on the pods) and starts them,
// for the time of the call (until View.Stop). The View lists PodGroups
// itself.
func StartOwn(parent context.Context, cfg Config) (*Starting, error) {
	logger := klog.FromContext(parent)
	ctx, cancel := context.WithCancel(parent)
	opts := []informers.SharedInformerOption{informers.WithTransform(newTransform(cfg.SlimPods))}
	if cfg.Namespace != "" {
		opts = append(opts, informers.WithNamespace(cfg.Namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, opts...)
	nodes := f.Core().V1().Nodes().Informer()
	pods := f.Core().V1().Pods().Informer()
	pdbs := f.Policy().V1().PodDisruptionBudgets().Informer()
	v := New(cfg, Stores{Nodes: nodes.GetStore(), Pods: pods.GetStore(), PDBs: pdbs.GetStore()})
	v.podIndex, v.ownLister = pods.GetIndexer(), true
	v.stop = func() {
		cancel()
		f.Shutdown()
	}
	if err := pods.AddIndexers(cache.Indexers{PodIndexName: NewPodIndexFunc()}); err != nil {
		v.stop()
		return nil, err
	}
	v.groupIndex = pods.GetIndexer()
	s := &Starting{View: v, ctx: ctx, synced: make(chan bool, 1), problems: make(chan error, 16)}
	// The reflectors retry refused and failed lists forever: tell the
	// wait what they see, so that it can fail at once for a missing
	// permission and after a timeout for a server it cannot reach.
	onError := func(ctx context.Context, r *cache.Reflector, err error) {
		if ctx.Err() != nil || parent.Err() != nil {
			return // the view is stopping: not worth a line
		}
		logger.V(2).Info("Watching the cluster failed; retrying", "err", err)
		select {
		case s.problems <- err:
		default:
		}
	}
	for _, inf := range []cache.SharedIndexInformer{nodes, pods, pdbs} {
		if err := inf.SetWatchErrorHandlerWithContext(onError); err != nil {
			v.stop()
			return nil, err
		}
		if _, err := inf.AddEventHandler(v.Handler()); err != nil {
			v.stop()
			return nil, err
		}
	}
	s.start = time.Now()
	f.Start(ctx.Done())
	go func() {
		s.synced <- cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, pods.HasSynced, pdbs.HasSynced)
	}()
	return s, nil
}

// Context returns the context of the View's informers: it ends when the
// View stops or the caller's context ends.
func (s *Starting) Context() context.Context { return s.ctx }

// Started returns when the View's informers started.
func (s *Starting) Started() time.Time { return s.start }

// Synced receives once: whether the informers synced (false: the View's
// context ended first).
func (s *Starting) Synced() <-chan bool { return s.synced }

// Problems receives list and watch errors the informers' reflectors saw
// (they retry them), as far as the caller keeps up.
func (s *Starting) Problems() <-chan error { return s.problems }
