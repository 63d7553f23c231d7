package eviction

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain/internal/clusterview"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// view is what one call (a plan, a drain, a rollout, a health check) sees
// of the cluster: the read-only, indexed, synced clusterview.View of its
// informers (the caller's shared ones, or its own for the time of the
// call), which wakes its waiters at each event, with the Drainer whose
// settings it reads and the history of the resourceVersions its events
// showed. Plans are made from it (snapshot, planSnapshot) and all waiting
// is driven by its events, not by polling.
type view struct {
	*clusterview.View
	d *Drainer
	// hist remembers an object whose resourceVersion went back.
	hist history
}

// viewConfig is what the view of v needs of the Drainer's settings.
func (d *Drainer) viewConfig(v *view) clusterview.Config {
	return clusterview.Config{
		Client:         d.client,
		Namespace:      d.s.Namespace,
		CustomGroupers: d.s.Groupers != nil,
		SlimPods:       d.s.slimPods(),
		OnUpdate:       v.hist.update,
	}
}

// newView returns a view over stores the caller keeps (tests).
func (d *Drainer) newView(st clusterview.Stores) *view {
	v := &view{d: d}
	v.View = clusterview.New(d.viewConfig(v), st)
	return v
}

// startView returns the call's view once its informers have synced; Stop
// ends what the view started (its own informers, or its handlers on the
// caller's).
func (d *Drainer) startView(ctx context.Context) (*view, error) {
	if d.s.Informers != nil {
		return d.sharedView(ctx)
	}
	return d.ownView(ctx)
}

// sharedView reads through the caller's informers: it adds event handlers
// for the time of the call and starts no list or watch. Informers that do
// not sync within ConnectTimeout are a *RetryError (ReasonNotSynced).
func (d *Drainer) sharedView(ctx context.Context) (*view, error) {
	in := d.s.Informers
	v := &view{d: d}
	cv, err := clusterview.Shared(ctx, d.viewConfig(v), clusterview.Informers{
		Nodes: in.Nodes, Pods: in.Pods, PDBs: in.PodDisruptionBudgets, DaemonSets: in.DaemonSets, PodGroups: in.PodGroups,
	}, d.s.ConnectTimeout)
	var notSynced *clusterview.SyncTimeoutError
	var refused *clusterview.HandlerError
	switch {
	case errors.As(err, &notSynced):
		return nil, &RetryError{Reason: ReasonNotSynced, Waited: notSynced.Waited}
	case errors.As(err, &refused):
		return nil, fmt.Errorf("watching the informers of Options.Informers: %w", refused.Err)
	case err != nil:
		return nil, err
	}
	v.View = cv
	return v, nil
}

// gone reports whether the pod p refers to (its UID) no longer exists.
func (v *view) gone(p topology.PodRef) bool {
	return v.Gone(p.Namespace, p.Name, p.UID)
}

// snapshot returns the cluster state for planning. Objects are shared with
// the cache: planning must not modify them.
func (v *view) snapshot(ctx context.Context) (*Snapshot, error) {
	return v.snapshotOf(ctx, v.NodeList(), v.AllPods())
}

// planSnapshot returns the cluster state for a plan of domain: with the
// pod index, only the pods the plan reads (PlanPods), which at a fleet's
// size is a small part of the cluster's; else every pod, as snapshot.
func (v *view) planSnapshot(ctx context.Context, domain string) (*Snapshot, error) {
	nodes := v.NodeList()
	layout, err := topology.BuildLayout(nodes, v.d.s.layoutOptions())
	if err != nil {
		return v.snapshotOf(ctx, nodes, v.AllPods()) // the plan says what is wrong
	}
	dom, err := layout.Domain(domain)
	if err != nil {
		return v.snapshotOf(ctx, nodes, v.AllPods())
	}
	pods, ok := v.PlanPods(dom.Nodes, nil)
	if !ok {
		pods = v.AllPods()
	}
	snap, err := v.snapshotOf(ctx, nodes, pods)
	if snap != nil {
		snap.layout = layout
	}
	return snap, err
}

// groupSnapshot returns the cluster state with, of the pods, only those
// of groups (clusterview.View.GroupPods) when the pod index allows it;
// full reports that it holds every pod instead; the groups' pods are
// materialized through memo. At a fleet's size the
// groups' pods are a third of the cluster's, or less, and a look at the
// whole rollout (its status) then materializes no other pod at once.
func (v *view) groupSnapshot(ctx context.Context, memo *podcache.Memo) (snap *Snapshot, full bool, err error) {
	pods, ok := v.GroupPods(memo)
	if !ok {
		snap, err = v.snapshot(ctx)
		return snap, true, err
	}
	snap, err = v.snapshotOf(ctx, v.NodeList(), pods)
	return snap, false, err
}

// domainSnapshot returns snap with the pods a plan of the domain of nodes
// reads (clusterview.View.PlanPods, through memo) instead of its own,
// unless snap is full (holds every pod) or the index does not allow it.
func (v *view) domainSnapshot(snap *Snapshot, full bool, nodes []string, memo *podcache.Memo) *Snapshot {
	if full {
		return snap
	}
	pods, ok := v.PlanPods(nodes, memo)
	if !ok {
		pods = v.AllPods()
	}
	ds := *snap
	ds.Pods = pods
	return &ds
}

func (v *view) snapshotOf(ctx context.Context, nodes []corev1.Node, pods []*corev1.Pod) (*Snapshot, error) {
	snap := &Snapshot{Now: v.d.s.Clock.Now(), Pods: pods, Nodes: nodes, PDBs: v.PDBList()}
	pgs, err := v.PodGroups(ctx)
	if err != nil {
		return nil, err
	}
	snap.PodGroups = pgs
	snap.daemonSet = v.daemonSetLookup(ctx)
	return snap, nil
}

// daemonSetLookup answers whether a DaemonSet exists: from the caller's
// DaemonSet informer, or with one GET of it the first time a plan asks
// (for a pod on the domain it plans), remembering the answer (nil,
// NotFound or another error) for the rest of the view.
func (v *view) daemonSetLookup(ctx context.Context) dsLookup {
	if v.HasDaemonSets() {
		return func(namespace, name string) error {
			if v.HasDaemonSet(namespace, name) {
				return nil
			}
			return daemonSetsLookup(nil)(namespace, name)
		}
	}
	return func(namespace, name string) error {
		return v.GetDaemonSet(ctx, namespace, name)
	}
}

// groupsIn returns the groups of namespace ns that wants names, by ID
// (clusterview.View.GroupsIn).
func (v *view) groupsIn(ns string, wants []wantedGroup, groupers []topology.Grouper, memo *podcache.Memo) map[topology.GroupID]*topology.Group {
	ids := make([]topology.GroupID, len(wants))
	for i, w := range wants {
		ids[i] = w.id
	}
	return v.GroupsIn(ns, ids, groupers, memo)
}
