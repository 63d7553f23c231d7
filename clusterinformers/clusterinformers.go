// Package clusterinformers hands udrain the shared informers a controller
// already runs, so that a Drainer (eviction.Options.Informers) reads the
// cluster from them and adds no list or watch of its own: FromFactory for
// a client-go SharedInformerFactory, FromCache for a controller-runtime
// cache (FromCache(ctx, mgr.GetCache())), or a Set filled by hand.
package clusterinformers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/clusterview"
)

// Informer is what udrain needs of a shared informer: its events, whether
// it has synced, and the objects it holds (GetStore). A client-go
// cache.SharedIndexInformer is one, and so is the informer a
// controller-runtime cache hands out (its dynamic type is a
// SharedIndexInformer; FromCache checks that), so a controller
// passes the informers it already runs and udrain adds no list or watch of
// its own. A wrapper without GetStore does not compile as an Informer.
type Informer interface {
	EventInformer
	GetStore() cache.Store
}

// EventInformer is the part of an Informer that a controller-runtime
// cache's Informer type declares: events and sync, without the store.
// FromCache takes informers of such a type and checks at run time
// that they have GetStore too.
type EventInformer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error
	HasSynced() bool
}

// Set is the caller's shared informers udrain reads the cluster
// from (eviction.Options.Informers). Nodes, Pods and PodDisruptionBudgets are
// required. DaemonSets is optional (WithoutDaemonSets leaves it out):
// without it, a plan GETs each DaemonSet that owns a pod on the domain,
// once per call (kubectl drain's filter needs to know whether it still
// exists). PodGroups is optional: without
// it, pods that name a native PodGroup are still grouped by that name, but
// the group's size, workload and disruption mode are unknown.
//
// LeaderWorkerSets is optional too: an informer of LeaderWorkerSets
// (LeaderWorkerSetResource), e.g. of a dynamic informer factory, or of a
// controller-runtime cache for a typed or unstructured LeaderWorkerSet;
// its store may hold any object that converts to unstructured. With it, a
// rollout reads the LeaderWorkerSets on a domain from it (see
// eviction.RolloutOptions.IgnoreWorkloadUpdates); without it, it GETs them.
type Set struct {
	Nodes                Informer
	Pods                 Informer
	PodDisruptionBudgets Informer
	DaemonSets           Informer
	PodGroups            Informer
	LeaderWorkerSets     Informer
}

// Option changes which informers FromFactory and
// FromCache register.
type Option func(*informersSettings)

type informersSettings struct {
	noDaemonSets bool
}

// WithoutDaemonSets leaves Set.DaemonSets nil, so that udrain adds
// no informer of every DaemonSet in the cluster: no list and watch of
// them, and no permission to watch them (the role in deploy/rbac grants
// get and list only). A plan then GETs each DaemonSet that owns a pod on
// the domain, once per call, to learn whether it still exists (see
// Set). Use it where those GETs are few: plans now and then (a
// drain or a rollout at a time), few DaemonSet pods per domain. Keep the
// informer where plans are frequent (a status refreshed in a loop, many
// domains planned each reconcile), or where the factory or cache watches
// DaemonSets anyway, for the caller's own use: then it costs nothing more.
func WithoutDaemonSets() Option {
	return func(s *informersSettings) { s.noDaemonSets = true }
}

func informersSettingsOf(opts []Option) informersSettings {
	var s informersSettings
	for _, opt := range opts {
		opt(&s)
	}
	return s
}

// FromFactory returns the informers udrain needs from a client-go
// SharedInformerFactory, registering them with it (nodes, pods,
// PodDisruptionBudgets and, unless WithoutDaemonSets, DaemonSets), and
// adding to the pod informer an index of udrain's (by group and by the
// labels naming a LeaderWorkerSet or Ray cluster) that lets a recovery
// evaluation read only the pods it judges. Call it before factory.Start,
// or call factory.Start again afterwards, as for any informer. PodGroups
// are left out: clusters without the GenericWorkload feature gate do not
// serve them; where they are served, set
// factory.Scheduling().V1beta1().PodGroups().Informer() yourself.
func FromFactory(factory informers.SharedInformerFactory, opts ...Option) *Set {
	s := informersSettingsOf(opts)
	pods := factory.Core().V1().Pods().Informer()
	clusterview.AddPodIndex(pods)
	out := &Set{
		Nodes:                factory.Core().V1().Nodes().Informer(),
		Pods:                 pods,
		PodDisruptionBudgets: factory.Policy().V1().PodDisruptionBudgets().Informer(),
	}
	if !s.noDaemonSets {
		out.DaemonSets = factory.Apps().V1().DaemonSets().Informer()
	}
	return out
}

// InformerGetter is the method of a controller-runtime cache
// (sigs.k8s.io/controller-runtime/pkg/cache.Cache) that FromCache
// uses, written with type parameters so that this package does not import
// controller-runtime: O is client.Object, Opt the cache's
// InformerGetOption, I its Informer.
type InformerGetter[O any, Opt any, I EventInformer] interface {
	GetInformer(ctx context.Context, obj O, opts ...Opt) (I, error)
}

// FromCache returns the informers udrain needs from a
// controller-runtime cache, e.g. FromCache(ctx, mgr.GetCache()):
// nodes, pods, PodDisruptionBudgets and, unless WithoutDaemonSets,
// DaemonSets (the cache starts an informer for a kind it did not watch
// yet, which needs list and watch permission on it). It adds udrain's pod
// index to the pod informer, as FromFactory does. PodGroups are
// left out, as in FromFactory. An informer without GetStore is a
// *udrain.ConfigError.
func FromCache[O any, Opt any, I EventInformer](ctx context.Context, c InformerGetter[O, Opt, I], opts ...Option) (*Set, error) {
	s := informersSettingsOf(opts)
	get := func(obj any) (Informer, error) {
		o, ok := obj.(O)
		if !ok {
			return nil, &udrain.ConfigError{Field: "clusterinformers.FromCache(c)", Problem: fmt.Sprintf("the cache's GetInformer does not take a %T", obj)}
		}
		got, err := c.GetInformer(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("getting the informer of %T from the cache: %w", obj, err)
		}
		inf, ok := any(got).(Informer)
		if !ok {
			return nil, &udrain.ConfigError{Field: "clusterinformers.FromCache(c)", Problem: fmt.Sprintf("the cache's informer of %T, a %T, has no GetStore method, so udrain cannot read its objects; pass a cache whose informers are client-go SharedIndexInformers", obj, got)}
		}
		return inf, nil
	}
	var out Set
	for _, want := range []struct {
		obj any
		dst *Informer
	}{
		{&corev1.Node{}, &out.Nodes},
		{&corev1.Pod{}, &out.Pods},
		{&policyv1.PodDisruptionBudget{}, &out.PodDisruptionBudgets},
		{&appsv1.DaemonSet{}, &out.DaemonSets},
	} {
		if want.dst == &out.DaemonSets && s.noDaemonSets {
			continue
		}
		inf, err := get(want.obj)
		if err != nil {
			return nil, err
		}
		*want.dst = inf
	}
	if pods, ok := out.Pods.(cache.SharedIndexInformer); ok {
		clusterview.AddPodIndex(pods)
	}
	return &out, nil
}
