package metrics

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
)

// Recorder turns the events of package eviction into Prometheus metrics.
// Give its Record method to an event hook (eviction.Options.OnEvent,
// DrainOptions.OnEvent or RolloutOptions.OnEvent: one signature), or call
// it from your own. It is safe for concurrent use: one Recorder may serve
// every Drainer of a process.
type Recorder struct {
	requests      *prometheus.CounterVec
	budgetWait    prometheus.Histogram
	blockedPods   prometheus.Gauge
	phaseDuration *prometheus.HistogramVec
	domainPhase   *prometheus.GaugeVec
	domainState   *prometheus.GaugeVec
	domains       *prometheus.GaugeVec
	groupsDown    *prometheus.GaugeVec
	lockHeld      prometheus.Gauge
	lockLost      prometheus.Counter
	events        *prometheus.CounterVec

	mu       sync.Mutex
	blocked  map[types.UID]blockedPod // pods waiting for their budget
	byDomain map[string]*domainTrack
	locks    map[string]bool // IDs of the rollouts holding their Lease
}

// blockedPod is a pod refused by its budget and not let go yet.
type blockedPod struct {
	since  time.Time
	domain string
}

// domainTrack is what the Recorder knows of a domain.
type domainTrack struct {
	state State
	last  time.Time           // the domain's last event
	start map[Phase]time.Time // phases begun and not ended
}

// DurationBuckets are the buckets of PhaseDuration and BudgetWait: 1 s to
// about 4.5 h, doubling.
func DurationBuckets() []float64 { return prometheus.ExponentialBuckets(1, 2, 15) }

// New returns a Recorder whose metrics are registered with reg: a
// controller-runtime manager's sigs.k8s.io/controller-runtime/pkg/metrics.Registry,
// a prometheus.NewRegistry of your own, or prometheus.DefaultRegisterer.
// Nothing is registered anywhere else. A nil reg is a *udrain.ConfigError;
// a metric already registered with reg (a second Recorder on it) is the
// registry's error (prometheus.AlreadyRegisteredError). One Recorder
// serves any number of Drainers; to tell Recorders apart on one registry,
// wrap it for each with a label value of its own:
// prometheus.WrapRegistererWith(prometheus.Labels{"pool": "a"}, reg).
func New(reg prometheus.Registerer) (*Recorder, error) {
	if reg == nil {
		return nil, &udrain.ConfigError{Field: "metrics.New(reg)", Problem: "nil; pass a prometheus.Registerer, e.g. prometheus.NewRegistry() or controller-runtime's metrics.Registry"}
	}
	r := &Recorder{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: EvictionRequests,
			Help: "Eviction (or deletion) requests sent, by the API server's answer."}, []string{"result"}),
		budgetWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: BudgetWait,
			Help:    "Time pods waited for their PodDisruptionBudget, from its first refusal to the request that let them go.",
			Buckets: DurationBuckets()}),
		blockedPods: prometheus.NewGauge(prometheus.GaugeOpts{Name: BudgetBlockedPods,
			Help: "Pods whose eviction a PodDisruptionBudget refuses now."}),
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: PhaseDuration,
			Help:    "Duration of the phases of domain drains and rollouts.",
			Buckets: DurationBuckets()}, []string{"phase"}),
		domainPhase: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: DomainPhaseDuration,
			Help: "Duration of the last completed phase of each upgrade domain."}, []string{"domain", "phase"}),
		domainState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: DomainState,
			Help: "1 for the state each upgrade domain is in; one series per domain."}, []string{"domain", "state"}),
		domains: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Domains,
			Help: "Upgrade domains in each state."}, []string{"state"}),
		groupsDown: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: GroupsDown,
			Help: "Groups of the domain not healthy at the last evaluation of its recovery."}, []string{"domain"}),
		lockHeld: prometheus.NewGauge(prometheus.GaugeOpts{Name: RolloutLockHeld,
			Help: "Rollout Leases this process holds."}),
		lockLost: prometheus.NewCounter(prometheus.CounterOpts{Name: RolloutLockLost,
			Help: "Rollout Leases lost while held; the rollout stopped."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Events,
			Help: "Events of package eviction received, by type."}, []string{"type"}),
		blocked:  map[types.UID]blockedPod{},
		byDomain: map[string]*domainTrack{},
		locks:    map[string]bool{},
	}
	for _, c := range []prometheus.Collector{r.requests, r.budgetWait, r.blockedPods, r.phaseDuration, r.domainPhase,
		r.domainState, r.domains, r.groupsDown, r.lockHeld, r.lockLost, r.events} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Series that exist from the start, so that rate() and sum() see
	// zeros rather than nothing.
	for _, res := range results {
		r.requests.WithLabelValues(string(res))
	}
	for _, s := range states {
		r.domains.WithLabelValues(string(s))
	}
	return r, nil
}

// Record updates the metrics with one event. It does not block on
// anything but the Recorder's own lock. It has the signature of the event
// hooks; ctx is not used.
func (r *Recorder) Record(_ context.Context, e eviction.Event) {
	r.events.WithLabelValues(string(e.Type)).Inc()
	if e.DryRun != "" {
		return // nothing happened
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.request(e)
	r.budget(e)
	r.lock(e)
	if e.Type == eviction.EventRolloutStarted {
		for _, d := range e.Domains {
			r.domain(eviction.Event{Type: e.Type, Time: e.Time, Domain: d})
		}
		return
	}
	r.domain(e)
}

// request counts the eviction request an event answers.
func (r *Recorder) request(e eviction.Event) {
	var res Result
	switch e.Request {
	case eviction.RequestEvicted:
		res = ResultEvicted
	case eviction.RequestGone:
		res = ResultGone
	case eviction.RequestBudgetRefused:
		res = ResultBudgetRefused
	case eviction.RequestWebhookRefused:
		res = ResultWebhookRefused
	case eviction.RequestNamespaceTerminating:
		res = ResultNamespaceTerminating
	case eviction.RequestError:
		res = ResultError
	default:
		return
	}
	r.requests.WithLabelValues(string(res)).Inc()
}

// budget follows the pods that wait for their budget.
func (r *Recorder) budget(e eviction.Event) {
	switch {
	case e.Request == eviction.RequestBudgetRefused && e.Pod != nil:
		if _, ok := r.blocked[e.Pod.UID]; !ok {
			r.blocked[e.Pod.UID] = blockedPod{since: e.Time, domain: e.Domain}
		}
	case e.Type == eviction.EventUnblocked && e.Pod != nil:
		if b, ok := r.blocked[e.Pod.UID]; ok {
			r.budgetWait.Observe(e.Time.Sub(b.since).Seconds())
			delete(r.blocked, e.Pod.UID)
		}
	case e.Type == eviction.EventEvictionFailed && e.Pod != nil:
		delete(r.blocked, e.Pod.UID)
	case e.Type == eviction.EventDrainStopped:
		// The drain's waits ended with it, unreported.
		for uid, b := range r.blocked {
			if b.domain == e.Domain {
				delete(r.blocked, uid)
			}
		}
	}
	r.blockedPods.Set(float64(len(r.blocked)))
}

// lock follows the rollout Leases held.
func (r *Recorder) lock(e eviction.Event) {
	switch e.Type {
	case eviction.EventLockAcquired:
		r.locks[e.ID] = true
	case eviction.EventLockLost:
		r.lockLost.Inc()
		delete(r.locks, e.ID)
	case eviction.EventLockReleased:
		delete(r.locks, e.ID)
	default:
		return
	}
	r.lockHeld.Set(float64(len(r.locks)))
}

// phaseEdges says which phases an event begins and ends.
func phaseEdges(e eviction.Event) (begins, ends []Phase) {
	switch e.Type {
	case eviction.EventDomainStarted:
		return []Phase{PhaseDomain}, nil
	case eviction.EventPlanned:
		return []Phase{PhaseDrain}, nil
	case eviction.EventPhaseStarted:
		if e.Stage == eviction.StagePhase1 {
			return []Phase{Phase1}, nil
		}
		return []Phase{Phase2}, nil
	case eviction.EventPhaseDone:
		if e.Stage == eviction.StagePhase1 {
			return nil, []Phase{Phase1}
		}
		return []Phase{PhaseWaitGone}, []Phase{Phase2}
	case eviction.EventDrained:
		return nil, []Phase{PhaseWaitGone, PhaseDrain}
	case eviction.EventUpgradeStarted:
		return []Phase{PhaseUpgrade}, nil
	case eviction.EventUpgradeDone:
		return nil, []Phase{PhaseUpgrade}
	case eviction.EventRecoveryStarted:
		return []Phase{PhaseRecovery}, nil
	case eviction.EventRecovered:
		return nil, []Phase{PhaseRecovery}
	case eviction.EventDomainDone:
		return nil, []Phase{PhaseDomain}
	}
	return nil, nil
}

// stateAfter is the state a domain is in after an event, if the event
// tells.
func stateAfter(e eviction.Event, cur State) (State, bool) {
	switch e.Type {
	case eviction.EventRolloutStarted:
		return StatePending, true
	case eviction.EventDomainHeld:
		return StateHeld, true
	case eviction.EventDomainStarted, eviction.EventPlanned, eviction.EventCordoned, eviction.EventPhaseStarted:
		return StateDraining, true
	case eviction.EventDrained:
		return StateDrained, true
	case eviction.EventUpgradeStarted, eviction.EventWaitingGPUs:
		return StateUpgrading, true
	case eviction.EventDomainSkipped:
		return StateSkipped, true
	case eviction.EventWaitingRecovery, eviction.EventRecoveryStarted:
		return StateRecovering, true
	case eviction.EventRecovered, eviction.EventDomainDone:
		return StateDone, true
	case eviction.EventDrainStopped, eviction.EventRolloutStopped:
		return StateFailed, true
	}
	return cur, false
}

// domain follows a domain's state, phases and groups.
func (r *Recorder) domain(e eviction.Event) {
	if e.Domain == "" || strings.Contains(e.Domain, ",") {
		return // a health wait over several domains
	}
	if e.Type == eviction.EventPlanned && strings.HasPrefix(e.ID, eviction.PlanIDPrefix) {
		return // Drainer.Plan: nothing runs
	}
	t := r.byDomain[e.Domain]
	if t == nil {
		t = &domainTrack{start: map[Phase]time.Time{}}
		r.byDomain[e.Domain] = t
	}
	if e.Type == eviction.EventWaitingRecovery || e.Type == eviction.EventRecovered {
		// Recovery begins right after the domain's last other event (its
		// uncordon).
		if _, ok := t.start[PhaseRecovery]; !ok && t.state != StateRecovering && !t.last.IsZero() {
			t.start[PhaseRecovery] = t.last
		}
		if e.Health != nil {
			down := 0
			for _, g := range e.Health.Groups {
				if !g.Healthy {
					down++
				}
			}
			r.groupsDown.WithLabelValues(e.Domain).Set(float64(down))
		}
	}
	begins, ends := phaseEdges(e)
	for _, p := range ends {
		if at, ok := t.start[p]; ok {
			d := e.Time.Sub(at).Seconds()
			r.phaseDuration.WithLabelValues(string(p)).Observe(d)
			r.domainPhase.WithLabelValues(e.Domain, string(p)).Set(d)
			delete(t.start, p)
		}
	}
	for _, p := range begins {
		t.start[p] = e.Time
	}
	if e.Type == eviction.EventDrainStopped || e.Type == eviction.EventRolloutStopped || e.Type == eviction.EventDomainStarted {
		clear(t.start) // a stopped drain's phases never end; a new domain run starts afresh
		if e.Type == eviction.EventDomainStarted {
			t.start[PhaseDomain] = e.Time
		}
	}
	t.last = e.Time
	if s, ok := stateAfter(e, t.state); ok && s != t.state {
		if t.state != "" {
			r.domainState.DeleteLabelValues(e.Domain, string(t.state))
		}
		t.state = s
		r.domainState.WithLabelValues(e.Domain, string(s)).Set(1)
		r.countStates()
	}
}

// countStates sets the Domains gauge from the domains' states.
func (r *Recorder) countStates() {
	n := map[State]int{}
	for _, t := range r.byDomain {
		n[t.state]++
	}
	for _, s := range states {
		r.domains.WithLabelValues(string(s)).Set(float64(n[s]))
	}
}
