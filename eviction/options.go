package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/clock"

	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// Defaults used when Options leaves a field at zero.
const (
	// DefaultConcurrency bounds the evictions (and node patches) in flight
	// at once.
	DefaultConcurrency = 32
	// DefaultConnectTimeout is how long a call waits for an API server that
	// cannot be reached before it fails with a *RetryError (ReasonUnreachable).
	DefaultConnectTimeout = 15 * time.Second
	// DefaultRequestTimeout bounds each write udrain makes (an eviction, a
	// node patch, a Lease update) when Options.RequestTimeout is zero.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultBudgetRecheck is how long an eviction refused by its
	// PodDisruptionBudget waits for the budget's watched status to allow a
	// disruption before it asks the API server again. The API server
	// decides from that same status, so a retry before the watch shows it
	// allowing is refused; the recheck only covers a watch that is behind.
	// A broken watch is noticed and relisted by client-go's reflector
	// within its reconnection backoff (at most 30 s; up to 24 s late was
	// measured with every connection cut, see the README's drills), so
	// 60 s never fires before a working watch has told: it only bounds how
	// long udrain trusts a watch that went quiet without an error.
	DefaultBudgetRecheck = 60 * time.Second
)

// DefaultBackoff is the retry backoff after an eviction fails transiently
// or is refused by an admission webhook, and after a refusal by a budget
// whose watched status allowed the disruption (the watch was behind, or
// another eviction took it). A refusal by a budget the watch shows spent
// waits for the budget instead (Options.BudgetRecheck).
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 30 * time.Second}
}

// KubectlDefaults returns the drain.Helper settings of a plain
// "kubectl drain": pods' own grace periods, no force, no timeout.
func KubectlDefaults() *drain.Helper {
	return &drain.Helper{GracePeriodSeconds: -1}
}

// Options configures a Drainer. The zero value drains like "kubectl drain"
// with its defaults, on domains named by topology.DefaultDomainLabel, over
// informers of its own.
type Options struct {
	// Helper carries kubectl drain's settings; an existing *drain.Helper can
	// be handed over as is. Used: Force, IgnoreAllDaemonSets,
	// DeleteEmptyDirData, GracePeriodSeconds (0 means "delete immediately",
	// negative the pod's own grace period, as in kubectl), Timeout (per
	// domain, from its cordon, as kubectl's from its evictions; zero means
	// no limit), PodSelector, DisableEviction,
	// SkipWaitForDeleteTimeoutSeconds, DryRunStrategy, AdditionalFilters,
	// EvictErrorRetryDelay (the first retry delay when Backoff is unset)
	// and the callbacks, called when kubectl calls them:
	// OnPodDeletionOrEvictionStarted before a pod's first request,
	// OnPodDeletionOrEvictionFinished once it is gone (with the error of
	// an eviction that failed for good), the deprecated
	// OnPodDeletedOrEvicted once it is gone when Finished is unset.
	// Without DisableEviction, pods are evicted through the Eviction API
	// version the server's discovery serves, or deleted when it serves
	// none (kubectl's CheckEvictionSupport). Ignored: Ctx, Client, Out,
	// ErrOut, Selector (the domain selects the nodes), ChunkSize (udrain
	// reads through informers, which page their lists themselves).
	// Nil means KubectlDefaults().
	Helper *drain.Helper

	// DomainLabel is the node label naming upgrade domains; empty means
	// topology.DefaultDomainLabel.
	DomainLabel string
	// Unlabeled says what to do with nodes that lack DomainLabel. The zero
	// value, topology.UnlabeledError, refuses an unlabelled worker and
	// leaves out unlabelled control-plane nodes (never drained; listed in
	// the layout's Unlabeled).
	Unlabeled topology.UnlabeledPolicy
	// Groupers find groups among pods; nil means
	// topology.DefaultGroupers() plus native PodGroups.
	Groupers []topology.Grouper

	// Concurrency bounds the evictions in flight, and the node patches
	// (cordon, upgraded mark, uncordon) of a domain; 0 means
	// DefaultConcurrency. Across every drain of the Drainer (the domains
	// of a rollout in flight), udrain also keeps no more writes in flight
	// than the client's rate limiter serves in about 2 s (read from the
	// clientset; a client without a limiter is not bounded so): each of
	// its requests then waits about that long at most in the limiter, and
	// the renewals of a rollout's Lease, which take no turn, no longer
	// than that behind queued evictions.
	Concurrency int
	// Backoff paces retries of failed evictions (see DefaultBackoff); the
	// zero value means DefaultBackoff().
	Backoff wait.Backoff
	// BudgetRecheck is how long an eviction refused by a budget that the
	// watch shows spent waits without seeing it allow a disruption before
	// it is tried again; it is retried as soon as the watched status
	// allows one. Zero means DefaultBudgetRecheck.
	BudgetRecheck time.Duration

	// AllowViolations lets a drain go on despite error findings of the
	// contract audit. Pods selected by more than one PDB stop a domain
	// regardless: the Eviction API cannot evict them.
	AllowViolations bool

	// OnEvent, if set, receives progress events, each with the context of
	// the call that sent it (a Drain's, a Rollout's, a WaitHealthy's), as
	// DrainOptions.OnEvent and RolloutOptions.OnEvent do: one signature,
	// so that one sink (metrics.Recorder.Record, report.Progress.Event)
	// plugs into any of the three. Calls are serialised per Drainer,
	// across all its calls: OnEvent never runs twice at once.
	// It runs on udrain's goroutines and holds back every call of this
	// Drainer while it runs, so it should return quickly (log, count,
	// hand over to a channel). A sink that is slow (a status write to the
	// API server) belongs in DrainOptions.OnEvent or
	// RolloutOptions.OnEvent, which hold back only their own call.
	OnEvent func(context.Context, Event)

	// Evictor performs evictions; nil means the Eviction API (or pod
	// deletion with Helper.DisableEviction, which cannot be combined with
	// an Evictor, or on a server that serves no pods/eviction).
	Evictor Evictor

	// Clock is used for timestamps, the pauses between retries, the GPU
	// check's grace, the recovery's expiry timers and the rollout Lease's
	// times and renewals; nil means the real clock. Deadlines (Timeout,
	// RecoveryTimeout, the connect and request timeouts, a renewal left
	// unanswered) are context deadlines in real time, and so is the pacing
	// that coalesces bursts of watch events into one evaluation.
	Clock clock.WithTicker

	// GPU is how the plan's GPU fit (Plan.GPUs, Plan.GPUFit) and the
	// rollout's GPU check classify nodes (package gpu): the resources of
	// device plugins gpu does not know (ExtraResources), the grace of a
	// node that does not advertise its GPUs yet. Its nil Clock means
	// Clock.
	GPU gpu.Options

	// Informers, if set, are the caller's shared informers (see
	// clusterinformers.FromFactory and clusterinformers.FromCache): every call reads
	// through them and watches their events, and starts no list or watch
	// of its own. The caller starts them; a call waits until they have
	// synced. Nil means each call lists and watches the cluster itself
	// while it runs (the CLI's case). Its own cache keeps of each pod only
	// what udrain and kubectl drain's filters read, about 550 bytes a pod
	// instead of the 9 kB of a whole one: name, namespace, UID, labels,
	// annotations, owners, deletion, node, scheduling group, readiness
	// gates, emptyDir volumes, the containers' names and resource
	// requests, phase, the conditions' types and statuses, and the
	// container statuses' readiness and waiting reasons. The pods a call
	// hands out (Snapshot, plans' groups, Helper's callbacks) then hold
	// those fields only. With Helper.AdditionalFilters or Groupers, which
	// may read anything, it keeps whole pods. Its nodes lack their
	// status's images and volumes.
	Informers *clusterinformers.Set

	// Namespace, if set, limits what udrain sees and evicts to the pods
	// and PodDisruptionBudgets of one namespace: a drain then moves that
	// namespace's pods off a domain's nodes and leaves the others. Nodes
	// are always seen whole. A rollout with an upgrade step needs the
	// whole domain drained, so it refuses a namespace scope.
	Namespace string

	// ConnectTimeout bounds how long a call waits for its informers to
	// list the cluster while the API server cannot be reached (connection
	// refused, DNS, TLS, timeouts); the call then fails with an
	// *RetryError (ReasonUnreachable) naming the server. Zero means
	// DefaultConnectTimeout. A deadline in the context bounds every wait
	// as well.
	ConnectTimeout time.Duration

	// RequestTimeout bounds each write udrain makes itself (an eviction, a
	// node patch, a Lease update): an API server that accepts the request
	// and never answers (a black hole: a dead load balancer, a firewall
	// that drops) would hold it, and the call, forever. A write that runs
	// out of it is retried like a refused connection; after
	// unansweredWrites of one object in a row, the call fails with an
	// *RetryError (ReasonUnreachable, ServerNoAnswer). Zero means
	// DefaultRequestTimeout; negative, no bound (the clientset's own
	// rest.Config.Timeout, if any, still applies).
	RequestTimeout time.Duration
}

// unansweredWrites is how many writes of one object in a row may run out
// of RequestTimeout before a call gives the server up.
const unansweredWrites = 3

// settings is Options validated and with defaults applied.
type settings struct {
	Options
	helper      drain.Helper
	podSelector labels.Selector
	filters     filterConfig
	dryRun      cmdutil.DryRunStrategy
	// recoveryEvery spaces the evaluations of a recovery wait (real time):
	// a burst of watch events costs one evaluation, not one each.
	recoveryEvery time.Duration
	// evaluated, if set, is called after each evaluation (tests).
	evaluated func()
	// readLWS, if set, reads LeaderWorkerSets instead of the API server
	// (tests: a fake clientset has no REST client).
	readLWS func(context.Context, workloadRef) (*lwsObject, error)
	// pace bounds the writes in flight across every drain of the Drainer
	// (nil: no bound; see queueBudget).
	pace *pacer
}

// recoveryEvery is how often, at most, a recovery wait evaluates the
// groups and budgets it waits for: with an event per pod change in the
// cluster, evaluating per event was half of the drainer's CPU at 800 pods.
const recoveryEvery = 100 * time.Millisecond

func configError(field, format string, args ...any) error {
	return &udrain.ConfigError{Field: "eviction." + field, Problem: fmt.Sprintf(format, args...)}
}

func (o Options) settle() (*settings, error) {
	s := &settings{Options: o, recoveryEvery: recoveryEvery}
	if o.Helper != nil {
		s.helper = *o.Helper
	} else {
		s.helper = *KubectlDefaults()
	}
	if err := o.checkValues(&s.helper); err != nil {
		return nil, err
	}
	if err := s.parseHelper(); err != nil {
		return nil, err
	}
	if err := o.checkNames(); err != nil {
		return nil, err
	}
	s.setDefaults()
	return s, nil
}

// checkValues refuses negative limits and options that exclude each other.
func (o Options) checkValues(h *drain.Helper) error {
	switch {
	case h.Timeout < 0:
		return configError("Options.Helper.Timeout", "%v is negative; use 0 for no limit", h.Timeout)
	case h.SkipWaitForDeleteTimeoutSeconds < 0:
		return configError("Options.Helper.SkipWaitForDeleteTimeoutSeconds", "%d is negative; use 0 to wait for every pod", h.SkipWaitForDeleteTimeoutSeconds)
	case h.ChunkSize < 0:
		return configError("Options.Helper.ChunkSize", "%d is negative; use 0", h.ChunkSize)
	case h.EvictErrorRetryDelay < 0:
		return configError("Options.Helper.EvictErrorRetryDelay", "%v is negative; use 0 for the default (%v)", h.EvictErrorRetryDelay, DefaultBackoff().Duration)
	case h.DisableEviction && o.Evictor != nil:
		return configError("Options.Evictor", "set together with Helper.DisableEviction, which asks for pod deletion; use one: an Evictor of your own, or DisableEviction (eviction.PodDeletion)")
	case o.Concurrency < 0:
		return configError("Options.Concurrency", "%d is negative; use 0 for the default (%d)", o.Concurrency, DefaultConcurrency)
	case o.ConnectTimeout < 0:
		return configError("Options.ConnectTimeout", "%v is negative; use 0 for the default (%v)", o.ConnectTimeout, DefaultConnectTimeout)
	case o.BudgetRecheck < 0:
		return configError("Options.BudgetRecheck", "%v is negative; use 0 for the default (%v)", o.BudgetRecheck, DefaultBudgetRecheck)
	case o.Backoff != (wait.Backoff{}) && o.Backoff.Duration <= 0:
		return configError("Options.Backoff.Duration", "%v is not positive; set the first retry delay, or leave Backoff zero for the default", o.Backoff.Duration)
	}
	return nil
}

// parseHelper reads the helper's pod selector and dry-run strategy.
func (s *settings) parseHelper() error {
	h := &s.helper
	sel, err := labels.Parse(h.PodSelector)
	if err != nil {
		return configError("Options.Helper.PodSelector", "%q: %v; write it as for kubectl -l, e.g. app=web", h.PodSelector, err)
	}
	s.podSelector = sel
	switch h.DryRunStrategy {
	case cmdutil.DryRunNone, cmdutil.DryRunClient, cmdutil.DryRunServer:
		s.dryRun = h.DryRunStrategy
	default:
		return configError("Options.Helper.DryRunStrategy", "%d is not DryRunNone, DryRunClient or DryRunServer", h.DryRunStrategy)
	}
	return nil
}

// checkNames refuses a domain label, namespace, informers or groupers that
// cannot be used.
func (o Options) checkNames() error {
	if o.DomainLabel != "" {
		if errs := validation.IsQualifiedName(o.DomainLabel); len(errs) > 0 {
			return configError("Options.DomainLabel", "%q is not a label key: %s; use e.g. %s", o.DomainLabel, strings.Join(errs, "; "), topology.DefaultDomainLabel)
		}
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return configError("Options.Namespace", "%q is not a namespace name: %v", o.Namespace, errs)
		}
	}
	if o.Informers != nil {
		if err := validateInformers(o.Informers); err != nil {
			return err
		}
	}
	for i, g := range o.Groupers {
		if g == nil {
			return configError(fmt.Sprintf("Options.Groupers[%d]", i), "nil; leave it out or use a grouper of package topology")
		}
	}
	return nil
}

// setDefaults fills in what was left zero.
func (s *settings) setDefaults() {
	o, h := s.Options, &s.helper
	if o.Concurrency == 0 {
		s.Concurrency = DefaultConcurrency
	}
	if o.ConnectTimeout == 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if o.RequestTimeout == 0 {
		s.RequestTimeout = DefaultRequestTimeout
	}
	if o.BudgetRecheck == 0 {
		s.BudgetRecheck = DefaultBudgetRecheck
	}
	if o.Backoff == (wait.Backoff{}) {
		s.Backoff = DefaultBackoff()
		if h.EvictErrorRetryDelay > 0 {
			s.Backoff.Duration = h.EvictErrorRetryDelay
		}
	}
	if s.Backoff.Steps <= 0 {
		s.Backoff.Steps = 1 << 30
	}
	if s.DomainLabel == "" {
		s.DomainLabel = topology.DefaultDomainLabel
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.GPU.Clock == nil {
		s.GPU.Clock = s.Clock
	}
	s.filters = filterConfig{
		force:              h.Force,
		ignoreDaemonSets:   h.IgnoreAllDaemonSets,
		deleteEmptyDirData: h.DeleteEmptyDirData,
		skipDeletedSeconds: h.SkipWaitForDeleteTimeoutSeconds,
		additional:         h.AdditionalFilters,
	}
}

// slimPods reports whether udrain's own pod cache may keep slimPods
// (podcache.go): not when Helper.AdditionalFilters or Options.Groupers,
// which may read any field of a pod, are set.
func (s *settings) slimPods() bool {
	return len(s.filters.additional) == 0 && s.Groupers == nil
}

// layoutOptions are the options topology.BuildLayout needs.
func (s *settings) layoutOptions() topology.LayoutOptions {
	return topology.LayoutOptions{LabelKey: s.DomainLabel, Unlabeled: s.Unlabeled}
}

// dryRunName is "client", "server" or "" for the settings' dry-run
// strategy.
func (s *settings) dryRunName() string {
	switch s.dryRun {
	case cmdutil.DryRunClient:
		return "client"
	case cmdutil.DryRunServer:
		return "server"
	}
	return ""
}

// Drainer plans and executes the drain of upgrade domains, rolls upgrades
// over them and reports their health. It keeps no state between calls but
// the serialisation of OnEvent, and is safe for concurrent use: a
// controller builds one and calls it as often as it likes. A caller that
// only reads needs no drain settings: NewReader returns a read-only
// Drainer, whose write methods return a *udrain.ConfigError.
type Drainer struct {
	client kubernetes.Interface
	s      *settings
	events *emitter
	// readOnly: made by NewReader; see writable.
	readOnly bool
}

// New returns a Drainer, or a *udrain.ConfigError for invalid options.
// Nothing is read from the cluster before a call.
func New(client kubernetes.Interface, opts Options) (*Drainer, error) {
	if client == nil {
		return nil, configError("New(client)", "nil; pass a clientset, e.g. from kubernetes.NewForConfig")
	}
	s, err := opts.settle()
	if err != nil {
		return nil, err
	}
	s.pace = newPacer(client)
	return &Drainer{client: client, s: s, events: &emitter{fn: opts.OnEvent}}, nil
}

// Validate checks the options without a cluster: it returns the
// *udrain.ConfigError that New would return for them, so that a caller
// (the CLI) can refuse bad input before it connects.
func (o Options) Validate() error {
	_, err := o.settle()
	return err
}

// Validate checks the options that need no cluster: the ID, the domains
// (none empty, none named twice), the order and steering, the timeouts and
// the lock's settings. It returns the *udrain.ConfigError that Rollout
// would return for them, so that a caller (the CLI) can refuse bad input
// before any request to the API server.
func (o RolloutOptions) Validate() error {
	_, err := o.withDefaults()
	return err
}

// write runs one write request within RequestTimeout. timedOut is true
// when the request ran out of it (while ctx itself goes on); its error
// then says so (errors.Is context.DeadlineExceeded), whatever the
// transport made of the cut, so that it is retried as a server that did
// not answer.
//
// The write first waits for a slot of the Drainer's pacer (see
// queueBudget), outside RequestTimeout: a write waiting its turn behind
// udrain's own is not a server that does not answer.
func (s *settings) write(ctx context.Context, request func(context.Context) error) (timedOut bool, err error) {
	if !s.pace.acquire(ctx) {
		return false, ctx.Err()
	}
	defer s.pace.release()
	if s.RequestTimeout < 0 {
		return false, request(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, s.RequestTimeout)
	defer cancel()
	err = request(rctx)
	timedOut = err != nil && ctx.Err() == nil && rctx.Err() != nil
	if timedOut && !errors.Is(err, context.DeadlineExceeded) {
		err = &unansweredError{err}
	}
	return timedOut, err
}

// unansweredError is the error of a write that ran out of RequestTimeout
// without its transport saying so: its own text, and
// context.DeadlineExceeded to errors.Is.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string   { return e.err.Error() }
func (e *unansweredError) Unwrap() []error { return []error{e.err, context.DeadlineExceeded} }
