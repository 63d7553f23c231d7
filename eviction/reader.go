package eviction

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain"
)

// Reader is the read-only entry point of the package: it reports the
// cluster's state (Snapshot), the health of its domains' groups (Health,
// WaitHealthy), what a rollout would do (PlanRollout) and where one stands
// (RolloutStatus), exactly as a Drainer's methods of the same names do,
// lists the cluster's nodes and DaemonSets alone (Nodes, DaemonSets, for a
// report of nodes or GPUs that needs no pods), and audits the placement
// contract over every domain (Audit); it sends no write
// request: it has no method that changes the cluster,
// and no option about evicting. A caller that only reads (a status page,
// a report, a script waiting for health) needs no drain settings to get
// one.
//
// Every pod counts: the plans PlanRollout and RolloutStatus read count
// the pods a drain with kubectl's Force, IgnoreAllDaemonSets and
// DeleteEmptyDirData would evict (pods without a controller, pods with
// emptyDir volumes) and skip DaemonSet pods instead of refusing them, so
// that no read fails on a pod some drain's flags would refuse.
//
// A Reader keeps no state between calls but the serialisation of OnEvent,
// and is safe for concurrent use.
type Reader struct {
	d *Drainer
}

// readHelper is the drain.Helper a Reader reads with: every pod counts,
// whatever a drain would do with it. Only its filters are read; nothing is
// ever evicted with it.
func readHelper() *drain.Helper {
	return &drain.Helper{GracePeriodSeconds: -1, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true}
}

// readOptions are the Drainer options a Reader delegates to: of o, what
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

// NewReader returns a Reader, or a *udrain.ConfigError for invalid
// options. Of opts it reads what reading the cluster needs: DomainLabel,
// Unlabeled, Groupers, Namespace, Informers, ConnectTimeout, Clock, GPU
// and OnEvent (the events of WaitHealthy and PlanRollout), and ignores
// the drain settings (Helper, Concurrency, Evictor, DryRun, ...): the zero
// Options read domains named by topology.DefaultDomainLabel over lists
// and watches of its own. Nothing is read from the cluster before a call.
func NewReader(client kubernetes.Interface, opts Options) (*Reader, error) {
	if client == nil {
		return nil, configError("NewReader(client)", "nil; pass a clientset, e.g. from kubernetes.NewForConfig")
	}
	d, err := New(client, readOptions(opts))
	if err != nil {
		return nil, inReadTerms(err)
	}
	return &Reader{d: d}, nil
}

// Snapshot reads the cluster as every call of the Reader sees it, as
// Drainer.Snapshot does. It changes nothing.
func (r *Reader) Snapshot(ctx context.Context) (*Snapshot, error) {
	s, err := r.d.Snapshot(ctx)
	return s, inReadTerms(err)
}

// Health reports, without waiting, the health of the groups with a pod on
// the named domains (every domain when none is named), as Drainer.Health
// does. An empty name among domains is a *udrain.ConfigError, before any
// request.
func (r *Reader) Health(ctx context.Context, domains ...string) (*HealthReport, error) {
	h, err := r.d.Health(ctx, domains...)
	return h, inReadTerms(err)
}

// WaitHealthy waits, on its watch, until Health would report every named
// domain (every domain when none is named) healthy, and returns that
// report, as Drainer.WaitHealthy does. It is bounded by ctx only: give ctx
// a deadline (context.WithTimeout) to give up after a while; the wait then
// ends with a *RetryError (ReasonNotHealthy) saying what was still missing, which
// unwraps to context.DeadlineExceeded. What it waits for goes to
// Options.OnEvent (EventWaitingRecovery) whenever it changes.
func (r *Reader) WaitHealthy(ctx context.Context, domains ...string) (*HealthReport, error) {
	h, err := r.d.WaitHealthy(ctx, domains...)
	return h, inReadTerms(err)
}

// PlanRollout says what Rollout(ctx, opts) would do, without a lock, a
// taint, a cordon or an eviction, as Drainer.PlanRollout does with
// Options.AllowViolations unset: a plan with findings of severity Error
// comes with a *topology.ContractError holding them.
func (r *Reader) PlanRollout(ctx context.Context, opts RolloutOptions) (*RolloutPlan, error) {
	p, err := r.d.PlanRollout(ctx, opts)
	return p, inReadTerms(err)
}

// RolloutStatus reads where rollout opts.ID stands from what it writes to the
// cluster, without running it, as Drainer.RolloutStatus does: through
// Options.Informers or lists of its own, and one GET of the Lease
// unless opts.NoLock.
func (r *Reader) RolloutStatus(ctx context.Context, opts RolloutOptions) (*RolloutStatus, error) {
	st, err := r.d.RolloutStatus(ctx, opts)
	return st, inReadTerms(err)
}

// Nodes returns the cluster's nodes, ordered by name, whatever
// Options.Namespace: through Options.Informers when set, else
// listed in pages of its own (no informer, no watch). An API server that
// does not serve a page within Options.ConnectTimeout is an
// *RetryError (ReasonUnreachable); a refusal for lack of permission a *PermissionError.
func (r *Reader) Nodes(ctx context.Context) ([]corev1.Node, error) {
	return r.d.listNodes(ctx)
}

// DaemonSets returns the DaemonSets of every namespace, whatever
// Options.Namespace, ordered by namespace and name (the device plugins
// package gpu diagnoses with): through Options.Informers' DaemonSets
// when set, else listed in pages of their own, with the errors of Nodes.
func (r *Reader) DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	return r.d.listDaemonSets(ctx)
}

// inReadTerms names, in a *udrain.ConfigError of the Drainer a Reader
// delegates to, what the Reader's caller called: the Reader's method
// instead of the Drainer's. Other errors, and configuration errors
// wrapped in another, pass through.
func inReadTerms(err error) error {
	ce, ok := err.(*udrain.ConfigError)
	if !ok {
		return err
	}
	field := ce.Field
	if rest, ok := strings.CutPrefix(field, "eviction.Drainer."); ok {
		field = "eviction.Reader." + rest
	}
	return &udrain.ConfigError{Field: field, Problem: ce.Problem}
}
