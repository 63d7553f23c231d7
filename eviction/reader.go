package eviction

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// ReadOptions configures a Reader: what reading the cluster needs, and
// nothing about evicting (no drain.Helper, grace period, dry run or
// concurrency). The zero value reads domains named by
// topology.DefaultDomainLabel over lists and watches of its own.
type ReadOptions struct {
	// DomainLabel is the node label naming upgrade domains; empty means
	// topology.DefaultDomainLabel.
	DomainLabel string
	// Unlabeled says what to do with nodes that lack DomainLabel.
	Unlabeled topology.UnlabeledPolicy
	// Groupers find groups among pods; nil means
	// topology.DefaultGroupers() plus native PodGroups.
	Groupers []topology.Grouper

	// Namespace, if set, limits what the Reader sees to the pods and
	// PodDisruptionBudgets of one namespace; nodes are always seen whole.
	Namespace string
	// Informers, if set, are the caller's shared informers, as
	// Options.Informers: every call reads through them and starts no list
	// or watch of its own. Nil means each call lists and watches the
	// cluster itself while it runs.
	Informers *clusterinformers.Set
	// ConnectTimeout bounds how long a call waits for its informers to
	// list the cluster (and RolloutStatus for its Lease) while the API
	// server cannot be reached; the call then fails with an
	// *UnreachableError. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// Clock is used for timestamps and waiting; nil means the real clock.
	Clock clock.WithTicker
	// GPU is how PlanRollout's plans count and fit GPUs, as Options.GPU.
	GPU gpu.Options
	// OnEvent, if set, receives the events of the Reader's calls:
	// WaitHealthy's EventWaitingRecovery (what it still waits for,
	// whenever that changes) and EventRecovered, PlanRollout's
	// EventContractFindings. Calls are serialised per Reader, as
	// Options.OnEvent's are per Drainer, so it should return quickly.
	OnEvent func(Event)
}

// Reader is the read-only entry point of the package: it reports the
// cluster's state (Snapshot), the health of its domains' groups (Health,
// WaitHealthy), what a rollout would do (PlanRollout) and where one stands
// (RolloutStatus), exactly as a Drainer's methods of the same names do,
// lists the cluster's nodes and DaemonSets alone (Nodes, DaemonSets, for a
// report of nodes or GPUs that needs no pods), and audits the placement
// contract with a rollout's destinations (Audit); it sends no write
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

// options are the Drainer options the Reader delegates to.
func (o ReadOptions) options() Options {
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

// Validate checks the options without a cluster: it returns the
// *udrain.ConfigError that NewReader would return for them (its Field
// names the ReadOptions field, e.g. "eviction.ReadOptions.Namespace"), so
// that a caller can refuse bad input before it connects.
func (o ReadOptions) Validate() error {
	return inReadTerms(o.options().Validate())
}

// NewReader returns a Reader, or a *udrain.ConfigError for invalid
// options. Nothing is read from the cluster before a call.
func NewReader(client kubernetes.Interface, opts ReadOptions) (*Reader, error) {
	if client == nil {
		return nil, configError("NewReader(client)", "nil; pass a clientset, e.g. from kubernetes.NewForConfig")
	}
	d, err := New(client, opts.options())
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
// ends with a *NotHealthyError saying what was still missing, which
// unwraps to context.DeadlineExceeded. What it waits for goes to
// ReadOptions.OnEvent (EventWaitingRecovery) whenever it changes.
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

// RolloutStatus reads where rollout id stands from what it writes to the
// cluster, without running it, as Drainer.RolloutStatus does: through
// ReadOptions.Informers or lists of its own, and one GET of the Lease
// unless opts.NoLock.
func (r *Reader) RolloutStatus(ctx context.Context, id string, opts RolloutStatusOptions) (*RolloutStatus, error) {
	st, err := r.d.RolloutStatus(ctx, id, opts)
	return st, inReadTerms(err)
}

// Nodes returns the cluster's nodes, ordered by name, whatever
// ReadOptions.Namespace: through ReadOptions.Informers when set, else
// listed in pages of its own (no informer, no watch). An API server that
// does not serve a page within ReadOptions.ConnectTimeout is an
// *UnreachableError; a refusal for lack of permission a *PermissionError.
func (r *Reader) Nodes(ctx context.Context) ([]corev1.Node, error) {
	return r.d.listNodes(ctx)
}

// DaemonSets returns the DaemonSets of every namespace, whatever
// ReadOptions.Namespace, ordered by namespace and name (the device plugins
// package gpu diagnoses with): through ReadOptions.Informers' DaemonSets
// when set, else listed in pages of their own, with the errors of Nodes.
func (r *Reader) DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	return r.d.listDaemonSets(ctx)
}

// inReadTerms names, in a *udrain.ConfigError of the Drainer a Reader
// delegates to, what the Reader's caller set: the ReadOptions field
// instead of the Options field, the Reader's method instead of the
// Drainer's. Other errors, and configuration errors wrapped in another,
// pass through.
func inReadTerms(err error) error {
	ce, ok := err.(*udrain.ConfigError)
	if !ok {
		return err
	}
	field := ce.Field
	if rest, ok := strings.CutPrefix(field, "eviction.Options."); ok {
		field = "eviction.ReadOptions." + rest
	} else if rest, ok := strings.CutPrefix(field, "eviction.Drainer."); ok {
		field = "eviction.Reader." + rest
	}
	return &udrain.ConfigError{Field: field, Problem: ce.Problem}
}
