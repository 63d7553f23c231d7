package eviction

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/clock"

	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain/topology"
)

// Defaults used when Options leaves a field at zero.
const (
	// DefaultConcurrency bounds the evictions (and node patches) in flight
	// at once.
	DefaultConcurrency = 32
)

// DefaultBackoff is the retry backoff after an eviction is refused with 429
// (a budget is spent) or fails transiently. A retry also happens as soon as
// the blocking PodDisruptionBudget's status allows a disruption, so the
// backoff only bounds how long udrain trusts a quiet watch.
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 30 * time.Second}
}

// KubectlDefaults returns the drain.Helper settings of a plain
// "kubectl drain": pods' own grace periods, no force, no timeout.
func KubectlDefaults() *drain.Helper {
	return &drain.Helper{GracePeriodSeconds: -1}
}

// Options configures a Drainer. The zero value drains like "kubectl drain"
// with its defaults, on domains named by topology.DefaultDomainLabel.
type Options struct {
	// Helper carries kubectl drain's settings; an existing *drain.Helper can
	// be handed over as is. Used: Force, IgnoreAllDaemonSets,
	// DeleteEmptyDirData, GracePeriodSeconds (0 means "delete immediately",
	// negative the pod's own grace period, as in kubectl), Timeout (per
	// domain; zero means no limit), PodSelector, DisableEviction, SkipWaitForDeleteTimeoutSeconds, DryRunStrategy,
	// AdditionalFilters, EvictErrorRetryDelay (the first retry delay when
	// Backoff is unset) and the OnPodDeletionOrEviction callbacks. Ignored:
	// Ctx, Client, Out, ErrOut, Selector (the domain selects the nodes),
	// ChunkSize (udrain lists through watch caches, which page their lists
	// themselves).
	// Nil means KubectlDefaults().
	Helper *drain.Helper

	// DomainLabel is the node label naming upgrade domains; empty means
	// topology.DefaultDomainLabel.
	DomainLabel string
	// Unlabeled says what to do with nodes that lack DomainLabel.
	Unlabeled topology.UnlabeledPolicy
	// Groupers find groups among pods; nil means
	// topology.DefaultGroupers() plus native PodGroups where the API
	// serves them.
	Groupers []topology.Grouper

	// Concurrency bounds the evictions in flight, and the node patches
	// (cordon, upgraded mark, uncordon) of a domain; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Backoff paces retries of refused or failed evictions; the zero value
	// means DefaultBackoff().
	Backoff wait.Backoff

	// AllowViolations lets a drain go on despite error findings of the
	// contract audit. Pods selected by more than one PDB stop a domain
	// regardless: the Eviction API cannot evict them.
	AllowViolations bool

	// OnEvent, if set, receives progress events. Calls are serialised.
	OnEvent func(Event)

	// Evictor performs evictions; nil means the Eviction API (or pod
	// deletion with Helper.DisableEviction).
	Evictor Evictor

	// Clock is used for timestamps and waiting; nil means the real clock.
	Clock clock.WithTicker
}

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
}

// recoveryEvery is how often, at most, a recovery wait evaluates the
// groups and budgets it waits for. Each evaluation groups every pod of the
// namespaces involved; with an event per pod change in the cluster, doing
// it per event was half of the drainer's CPU at 800 pods.
const recoveryEvery = 100 * time.Millisecond

// OptionsError reports invalid options; nothing has been changed in the
// cluster when it is returned.
type OptionsError struct {
	Field  string
	Value  any
	Reason string
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("invalid option %s=%v: %s", e.Field, e.Value, e.Reason)
}

func (o Options) settle() (*settings, error) {
	s := &settings{Options: o, recoveryEvery: recoveryEvery}
	if o.Helper != nil {
		s.helper = *o.Helper
	} else {
		s.helper = *KubectlDefaults()
	}
	h := &s.helper
	if h.Timeout < 0 {
		return nil, &OptionsError{"timeout", h.Timeout, "must be zero (no limit) or positive"}
	}
	if h.SkipWaitForDeleteTimeoutSeconds < 0 {
		return nil, &OptionsError{"skip-wait-for-delete-timeout", h.SkipWaitForDeleteTimeoutSeconds, "must be zero (off) or positive"}
	}
	if h.ChunkSize < 0 {
		return nil, &OptionsError{"chunk-size", h.ChunkSize, "must be zero (no paging) or positive"}
	}
	if h.EvictErrorRetryDelay < 0 {
		return nil, &OptionsError{"evict-error-retry-delay", h.EvictErrorRetryDelay, "must not be negative"}
	}
	sel, err := labels.Parse(h.PodSelector)
	if err != nil {
		return nil, &OptionsError{"pod-selector", h.PodSelector, err.Error()}
	}
	s.podSelector = sel
	switch h.DryRunStrategy {
	case cmdutil.DryRunNone, cmdutil.DryRunClient, cmdutil.DryRunServer:
		s.dryRun = h.DryRunStrategy
	default:
		return nil, &OptionsError{"dry-run", h.DryRunStrategy, "must be none, client or server"}
	}
	if o.Concurrency < 0 {
		return nil, &OptionsError{"concurrency", o.Concurrency, "must be zero (default) or positive"}
	}
	if o.Concurrency == 0 {
		s.Concurrency = DefaultConcurrency
	}
	if o.Backoff == (wait.Backoff{}) {
		s.Backoff = DefaultBackoff()
		if h.EvictErrorRetryDelay > 0 {
			s.Backoff.Duration = h.EvictErrorRetryDelay
		}
	} else if o.Backoff.Duration <= 0 {
		return nil, &OptionsError{"backoff.duration", o.Backoff.Duration, "must be positive"}
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
	s.filters = filterConfig{
		force:              h.Force,
		ignoreDaemonSets:   h.IgnoreAllDaemonSets,
		deleteEmptyDirData: h.DeleteEmptyDirData,
		skipDeletedSeconds: h.SkipWaitForDeleteTimeoutSeconds,
		additional:         h.AdditionalFilters,
	}
	return s, nil
}

// Drainer plans and executes the drain of upgrade domains. It holds no state
// between calls and is safe for concurrent use.
type Drainer struct {
	client kubernetes.Interface
	s      *settings
}

// New returns a Drainer, or an *OptionsError for invalid options.
func New(client kubernetes.Interface, opts Options) (*Drainer, error) {
	if client == nil {
		return nil, &OptionsError{"client", nil, "a Kubernetes client is required"}
	}
	s, err := opts.settle()
	if err != nil {
		return nil, err
	}
	return &Drainer{client: client, s: s}, nil
}
