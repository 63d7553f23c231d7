package gate

import (
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// Defaults of [Options] and [LeaderElection].
const (
	// DefaultWorkers is the number of groups reconciled concurrently.
	DefaultWorkers = 4
	// DefaultLeaseName names the Lease that replicas elect a leader with.
	DefaultLeaseName = "udrain-readiness-gate"
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod are
	// the values of the Kubernetes controllers' own leader election.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultMaxSyncAge bounds how far the leader may fall behind before
	// its health checks fail (see [Health]): long enough for a first pass
	// over a few thousand groups at the CLI's API rate (50 writes a
	// second), short enough that a stuck leader is restarted, and its
	// Lease handed over, within a couple of minutes.
	DefaultMaxSyncAge = time.Minute
	// DefaultHistoryCheck is how often the controller compares the API
	// server's resourceVersion with its pod cache's (see
	// [Options.HistoryCheck]): one list of at most one pod.
	DefaultHistoryCheck = 30 * time.Second
	// DefaultFalseRewriteInterval spaces the rewrites of a leader's False
	// condition whose message changes (see [Options.FalseRewriteInterval]).
	DefaultFalseRewriteInterval = time.Second
)

// Options configures a [Controller]. The zero value watches all namespaces,
// groups pods with [topology.DefaultGroupers] and runs without leader
// election (run one replica only).
type Options struct {
	// Pods is the caller's shared informer of pods, e.g.
	// factory.Core().V1().Pods().Informer() of a client-go informer
	// factory, or the pod informer of a controller-runtime cache (its
	// dynamic type is a cache.SharedIndexInformer). With it the controller
	// starts no list or watch of its own: it adds an index and an event
	// handler to the informer, reads pods from it, and never starts or
	// stops it (start it, e.g. with factory.Start, before or after
	// [Controller.Run]; Run waits for it to sync). It must hold the pods
	// the controller judges with their labels, owner references and
	// status (a transform may drop managed fields, not those). Nil means
	// the controller lists and watches pods itself, limited to Namespace
	// and Selector.
	Pods cache.SharedIndexInformer
	// Namespace limits the controller to one namespace; empty means all.
	// With Pods, pods of other namespaces in the informer are ignored.
	Namespace string
	// Selector is a label selector (as for kubectl -l) limiting the pods
	// the controller watches (with Pods: the pods it reads of the
	// informer's); empty means all. It must select every member
	// of a group, not only leaders: a member it leaves out counts as
	// missing.
	Selector string
	// Groupers sort pods into groups (see [topology.FindGroups]); nil means
	// [topology.DefaultGroupers] (LeaderWorkerSet, then Ray).
	Groupers []topology.Grouper
	// Workers is the number of groups reconciled concurrently; 0 means
	// [DefaultWorkers].
	Workers int
	// ResyncPeriod, if positive, re-reconciles every group that often even
	// without pod events; 0 reacts to events only.
	ResyncPeriod time.Duration
	// RateLimiter paces the retries of a group whose reconcile failed; nil
	// means workqueue.DefaultTypedControllerRateLimiter.
	RateLimiter workqueue.TypedRateLimiter[topology.GroupID]
	// LeaderElection, if set, makes replicas elect one writer through a
	// Lease: set it whenever more than one replica may run. See the package
	// documentation for why.
	LeaderElection *LeaderElection
	// MaxSyncAge bounds how long the leader may leave a sync probe of its
	// health checks waiting in its work queue, run one reconcile, or keep
	// failing to reconcile groups, before [Controller.Healthz] (the first
	// two) or [Controller.Readyz] (all three) fail; 0 means
	// [DefaultMaxSyncAge]. Raise it if the first pass over all groups of a
	// new leader takes longer.
	MaxSyncAge time.Duration
	// HistoryCheck is how often the controller asks the API server for its
	// current resourceVersion (a list of at most one pod) and compares it
	// with the newest its pod cache has seen. An older one means that the
	// cluster's history went back, as when etcd is restored from a
	// snapshot: the cache's watch then waits for a resourceVersion the
	// server has not reached and misses every change until it does, so
	// conditions would be left as they were. Run then stops with a
	// [*udrain.HistoryChangedError]; start the controller again (its Deployment
	// restarts it) for a fresh cache. 0 means [DefaultHistoryCheck];
	// negative never checks.
	HistoryCheck time.Duration
	// FalseRewriteInterval is the least time between two writes of a
	// leader's condition that stays False with a new message (a member of a
	// recovering group scheduled, running, ready: one pod event each); the
	// last message is written once it has passed. Turning True or False is
	// written at once. 0 means [DefaultFalseRewriteInterval]; negative,
	// every change at once.
	FalseRewriteInterval time.Duration
	// Clock gives the condition's lastTransitionTime and lastProbeTime
	// (the time of its last write) and the times of the health checks;
	// nil means the system clock.
	Clock clock.PassiveClock
	// OnChange, if set, is called after each write of a leader's condition.
	// Calls are serialized; keep it short, it holds up the other workers'
	// callbacks.
	OnChange func(Change)
}

// LeaderElection configures the election of one writing replica through a
// coordination.k8s.io Lease.
type LeaderElection struct {
	// Namespace of the Lease. Required.
	Namespace string
	// Name of the Lease; empty means [DefaultLeaseName]. Replicas that
	// watch the same pods must use the same Lease.
	Name string
	// Identity of this replica; empty means "<hostname>_<random UUID>".
	// Each replica needs its own.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod work as in
	// k8s.io/client-go/tools/leaderelection; 0 means DefaultLeaseDuration,
	// DefaultRenewDeadline and DefaultRetryPeriod.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// OnNewLeader, if set, is called with the identity of each leader this
	// replica observes (its own included).
	OnNewLeader func(identity string)
}

// Change is one write of a leader's condition, as given to
// [Options.OnChange].
type Change struct {
	// Group is the group whose health changed.
	Group topology.GroupID
	// Leader is the name of the leader pod written to (in Group.Namespace).
	Leader string
	// Previous is the condition before the write; nil if there was none.
	Previous *corev1.PodCondition
	// Condition is the condition written.
	Condition corev1.PodCondition
}

// String formats the change for a log line or a terminal, e.g.
// "inference/vllm-0: udrain.dev/group-ready=False MemberNotReady: vllm-0-2 not ready; 3/4 members healthy".
func (c Change) String() string {
	return fmt.Sprintf("%s/%s: %s=%s %s: %s", c.Group.Namespace, c.Leader, c.Condition.Type, c.Condition.Status, c.Condition.Reason, c.Condition.Message)
}

// configError returns a *udrain.ConfigError about field, a field of the
// package's settings ("Options.Selector", "LeaderElection.Name"), and the
// other settings (qualified) the problem involves.
func configError(field, problem string, see ...string) error {
	return &udrain.ConfigError{Field: "gate." + field, Problem: problem, See: see}
}

// complete validates o and fills in the defaults.
func (o Options) complete() (Options, labels.Selector, error) {
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return o, nil, configError("Options.Namespace", fmt.Sprintf("%q is not a namespace name: %s", o.Namespace, strings.Join(errs, "; ")))
		}
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return o, nil, configError("Options.Selector", fmt.Sprintf("%v; write it as for kubectl -l, e.g. leaderworkerset.sigs.k8s.io/name=vllm", err))
	}
	switch {
	case o.Workers < 0:
		return o, nil, configError("Options.Workers", fmt.Sprintf("%d is negative; use 0 for the default (%d)", o.Workers, DefaultWorkers))
	case o.ResyncPeriod < 0:
		return o, nil, configError("Options.ResyncPeriod", fmt.Sprintf("%v is negative; use 0 to react to events only", o.ResyncPeriod))
	case o.MaxSyncAge < 0:
		return o, nil, configError("Options.MaxSyncAge", fmt.Sprintf("%v is negative; use 0 for the default (%v)", o.MaxSyncAge, DefaultMaxSyncAge))
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxSyncAge == 0 {
		o.MaxSyncAge = DefaultMaxSyncAge
	}
	if o.FalseRewriteInterval == 0 {
		o.FalseRewriteInterval = DefaultFalseRewriteInterval
	}
	if o.HistoryCheck == 0 {
		o.HistoryCheck = DefaultHistoryCheck
	}
	if len(o.Groupers) == 0 {
		o.Groupers = topology.DefaultGroupers()
	}
	for i, g := range o.Groupers {
		if g == nil {
			return o, nil, configError(fmt.Sprintf("Options.Groupers[%d]", i), "nil; leave it out or use a grouper from package topology")
		}
	}
	if o.RateLimiter == nil {
		o.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[topology.GroupID]()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.LeaderElection != nil {
		le, err := o.LeaderElection.complete()
		if err != nil {
			return o, nil, err
		}
		o.LeaderElection = &le
	}
	return o, sel, nil
}

// complete validates le and fills in the defaults.
func (le LeaderElection) complete() (LeaderElection, error) {
	if le.Namespace == "" {
		return le, configError("LeaderElection.Namespace", "empty; name the namespace of the Lease, usually the controller's own")
	}
	if errs := validation.IsDNS1123Label(le.Namespace); len(errs) > 0 {
		return le, configError("LeaderElection.Namespace", fmt.Sprintf("%q is not a namespace name: %s", le.Namespace, strings.Join(errs, "; ")))
	}
	if le.Name == "" {
		le.Name = DefaultLeaseName
	}
	if errs := validation.IsDNS1123Subdomain(le.Name); len(errs) > 0 {
		return le, configError("LeaderElection.Name", fmt.Sprintf("%q is not a Lease name: %s", le.Name, strings.Join(errs, "; ")))
	}
	if le.Identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "udrain"
		}
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
	for _, d := range []struct {
		field string
		value *time.Duration
		def   time.Duration
	}{
		{"LeaderElection.LeaseDuration", &le.LeaseDuration, DefaultLeaseDuration},
		{"LeaderElection.RenewDeadline", &le.RenewDeadline, DefaultRenewDeadline},
		{"LeaderElection.RetryPeriod", &le.RetryPeriod, DefaultRetryPeriod},
	} {
		if *d.value < 0 {
			return le, configError(d.field, fmt.Sprintf("%v is negative; use 0 for the default (%v)", *d.value, d.def))
		}
		if *d.value == 0 {
			*d.value = d.def
		}
	}
	if le.LeaseDuration <= le.RenewDeadline {
		return le, configError("LeaderElection.LeaseDuration", fmt.Sprintf("%v is not longer than the renew deadline (%v); a leader must give up before others may take over", le.LeaseDuration, le.RenewDeadline), "gate.LeaderElection.RenewDeadline")
	}
	if minRenew := time.Duration(leaderelection.JitterFactor * float64(le.RetryPeriod)); le.RenewDeadline <= minRenew {
		return le, configError("LeaderElection.RenewDeadline", fmt.Sprintf("%v is not longer than %v× the retry period (%v); lengthen it or shorten that", le.RenewDeadline, leaderelection.JitterFactor, minRenew), "gate.LeaderElection.RetryPeriod")
	}
	return le, nil
}
