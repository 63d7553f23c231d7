package clusterview

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informer is what a View needs of a caller's shared informer: its events,
// whether it has synced, and the objects it holds.
type Informer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error
	HasSynced() bool
	GetStore() cache.Store
}

// Informers are the caller's shared informers a View reads through. Nodes,
// Pods and PDBs are required; DaemonSets and PodGroups may be nil.
type Informers struct {
	Nodes, Pods, PDBs, DaemonSets, PodGroups Informer
}

// SyncTimeoutError reports informers that did not sync within the time
// Shared was given.
type SyncTimeoutError struct {
	Waited time.Duration
}

func (e *SyncTimeoutError) Error() string {
	return "the informers did not sync within " + e.Waited.String()
}

// HandlerError reports an informer that refused the View's event handler.
type HandlerError struct {
	Err error
}

func (e *HandlerError) Error() string { return "adding an event handler: " + e.Err.Error() }

// Unwrap returns the informer's error.
func (e *HandlerError) Unwrap() error { return e.Err }

// indexer is an informer with indexes (the namespace index above all).
type indexer interface{ GetIndexer() cache.Indexer }

// Shared returns a View that reads through the caller's informers once
// they and its handlers on them have synced, within timeout (else a
// *SyncTimeoutError, or ctx's error): it adds event handlers for the time
// of the call (until Stop) and starts no list or watch. An informer that
// refuses a handler is a *HandlerError.
func Shared(ctx context.Context, cfg Config, in Informers, timeout time.Duration) (*View, error) {
	st := Stores{Nodes: in.Nodes.GetStore(), Pods: in.Pods.GetStore(), PDBs: in.PDBs.GetStore()}
	if ix, ok := in.Pods.(indexer); ok {
		st.PodIndexer = ix.GetIndexer()
	}
	if in.DaemonSets != nil {
		st.DaemonSets = in.DaemonSets.GetStore()
	}
	if in.PodGroups != nil {
		st.PodGroups = in.PodGroups.GetStore()
	}
	v := New(cfg, st)
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
	for _, inf := range []Informer{in.Nodes, in.Pods, in.PDBs, in.DaemonSets, in.PodGroups} {
		if inf == nil {
			continue
		}
		reg, err := inf.AddEventHandler(v.Handler())
		if err != nil {
			v.stop()
			return nil, &HandlerError{Err: err}
		}
		regs = append(regs, registration{inf, reg})
		synced = append(synced, inf.HasSynced, reg.HasSynced)
	}
	start := time.Now()
	if err := WaitSynced(ctx, timeout, synced); err != nil {
		v.stop()
		return nil, err
	}
	klog.FromContext(ctx).V(4).Info("Reading through the caller's informers", "waitedForSync", time.Since(start))
	return v, nil
}

// WaitSynced waits until every synced func says so: informers that are
// running already (the usual case) and the handlers just added to them
// (their initial events come a moment later). It checks every 5ms, so a
// call over synced informers starts at once, unlike
// cache.WaitForCacheSync's 100ms period. After timeout it returns a
// *SyncTimeoutError.
func WaitSynced(ctx context.Context, timeout time.Duration, synced []cache.InformerSynced) error {
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
			return &SyncTimeoutError{Waited: timeout}
		case <-tick.C:
		}
	}
}
