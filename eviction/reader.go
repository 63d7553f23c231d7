package eviction

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain"
)

// readHelper is the drain.Helper a read-only Drainer reads with: every pod counts,
// whatever a drain would do with it. Only its filters are read; nothing is
// ever evicted with it.
func readHelper() *drain.Helper {
	return &drain.Helper{GracePeriodSeconds: -1, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true}
}

// readOptions are the options of a read-only Drainer: of o, what
// reading needs (DomainLabel, Unlabeled, Groupers, Namespace, Informers,
// ConnectTimeout, Clock, GPU, OnEvent), and none of the drain settings.
func readOptions(o Options) Options {
	return Options{
		Helper:         readHelper(),
		DomainLabel:    o.DomainLabel,
		Unlabeled:      o.Unlabeled,
		Groupers:       o.Groupers,
		Namespace:      o.Namespace,
		Informers:      o.Informers,
		ConnectTimeout: o.ConnectTimeout,
		Clock:          o.Clock,
		GPU:            o.GPU,
		OnEvent:        o.OnEvent,
	}
}

// NewReader returns a read-only Drainer, for a caller that changes
// nothing (a status page, a report, a script waiting for health), or a
// *udrain.ConfigError for invalid options. Of opts it reads what reading
// the cluster needs: DomainLabel, Unlabeled, Groupers, Namespace,
// Informers, ConnectTimeout, Clock, GPU and OnEvent (the events of
// WaitHealthy and PlanRollout), and ignores the drain settings (Helper,
// Concurrency, Evictor, DryRun, AllowViolations, ...): the zero Options
// read domains named by topology.DefaultDomainLabel over lists and
// watches of its own. Nothing is read from the cluster before a call.
//
// Its read methods (Snapshot, Plan, Health, WaitHealthy, WaitRecovered,
// PlanRollout, RolloutStatus, WatchRolloutStatus, Audit, Nodes,
// DaemonSets, DevicePlugins) are a Drainer's, where every pod counts: the
// plans it reads count the pods a drain with kubectl's Force,
// IgnoreAllDaemonSets and DeleteEmptyDirData would evict (pods without a
// controller, pods with emptyDir volumes) and skip DaemonSet pods instead
// of refusing them, so that no read fails on a pod some drain's flags
// would refuse. Its write methods (Drain, Execute, Uncordon, Rollout)
// return a *udrain.ConfigError whose Field is "eviction.NewReader(client)"
// before any request: the program made the Drainer that should change the
// cluster with NewReader, and must make it with New. So it sends no write
// request, ever.
func NewReader(client kubernetes.Interface, opts Options) (*Drainer, error) {
	if client == nil {
		return nil, configError("NewReader(client)", "nil; pass a clientset, e.g. from kubernetes.NewForConfig")
	}
	d, err := New(client, readOptions(opts))
	if err != nil {
		return nil, err
	}
	d.readOnly = true
	return d, nil
}

// writable returns, for a write method (e.g. "Drain") of a Drainer from
// NewReader, the *udrain.ConfigError that refuses it; nil for a Drainer
// from New.
func (d *Drainer) writable(method string) error {
	if !d.readOnly {
		return nil
	}
	return &udrain.ConfigError{Field: "eviction.NewReader(client)",
		Problem: fmt.Sprintf("returned a read-only Drainer, and %s changes the cluster: nothing was sent; make the Drainer that drains, uncordons or rolls out with New", method)}
}

// Nodes returns the cluster's nodes, ordered by name, whatever
// Options.Namespace: through Options.Informers when set, else
// listed in pages of its own (no informer, no watch). An API server that
// does not serve a page within Options.ConnectTimeout is a
// *RetryError (ReasonUnreachable); a refusal for lack of permission a
// *PermissionError.
func (d *Drainer) Nodes(ctx context.Context) ([]corev1.Node, error) {
	return d.listNodes(ctx)
}

// DaemonSets returns the DaemonSets of every namespace, whatever
// Options.Namespace, ordered by namespace and name (the device plugins
// package gpu diagnoses with): through Options.Informers' DaemonSets
// when set, else listed in pages of their own, with the errors of Nodes.
func (d *Drainer) DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	return d.listDaemonSets(ctx)
}
