package metrics

// The names of the metrics a Recorder exports. docs/METRICS.md describes
// each; the dashboard in deploy/grafana queries only these.
const (
	// EvictionRequests counts eviction (or deletion) requests by the API
	// server's answer, label result: evicted, gone, budget_refused,
	// webhook_refused, error.
	EvictionRequests = "udrain_eviction_requests_total"
	// BudgetWait is the time pods waited for their PodDisruptionBudget,
	// from the first refusal to the request that let them go.
	BudgetWait = "udrain_budget_wait_seconds"
	// BudgetBlockedPods is the number of pods waiting for their budget
	// now.
	BudgetBlockedPods = "udrain_budget_blocked_pods"
	// PhaseDuration is the duration of the phases of domain drains and
	// rollouts, label phase.
	PhaseDuration = "udrain_phase_duration_seconds"
	// DomainPhaseDuration is the duration of the last completed phase of
	// each domain, labels domain and phase.
	DomainPhaseDuration = "udrain_domain_phase_duration_seconds"
	// DomainState is 1 for the state each domain is in (labels domain and
	// state); a domain has one series, of its current state.
	DomainState = "udrain_domain_state"
	// Domains counts the domains in each state, label state.
	Domains = "udrain_domains"
	// GroupsDown is the number of groups of a domain that are not healthy
	// in the last health evaluation of its recovery, label domain.
	GroupsDown = "udrain_groups_down"
	// RolloutLockHeld is the number of rollout Leases this process holds.
	RolloutLockHeld = "udrain_rollout_lock_held"
	// RolloutLockLost counts the rollout Leases lost while held.
	RolloutLockLost = "udrain_rollout_lock_lost_total"
	// Events counts the events received, label type (the EventType).
	Events = "udrain_events_total"
)

// Names returns the names of every metric this package exports (a
// Recorder's, Members' and GateWrites'), as they
// appear in a scrape (a histogram adds _bucket, _sum and _count to its
// name).
func Names() []string {
	return []string{EvictionRequests, BudgetWait, BudgetBlockedPods, PhaseDuration, DomainPhaseDuration,
		DomainState, Domains, GroupsDown, RolloutLockHeld, RolloutLockLost, Events,
		ReadinessMemberHealthy, GateConditionsWritten}
}

// Result is the value of the result label of EvictionRequests.
type Result string

// The answers to an eviction request, as label values.
const (
	ResultEvicted        Result = "evicted"
	ResultGone           Result = "gone"
	ResultBudgetRefused  Result = "budget_refused"
	ResultWebhookRefused Result = "webhook_refused"
	// ResultNamespaceTerminating: the pod's namespace is being deleted,
	// which refuses every eviction and takes the pod with it.
	ResultNamespaceTerminating Result = "namespace_terminating"
	ResultError                Result = "error"
)

// Phase is the value of the phase label of PhaseDuration and
// DomainPhaseDuration.
type Phase string

// The phases measured, each between two events of the domain.
const (
	// PhaseDrain: from the plan (Planned) to every evicted pod gone
	// (Drained): a whole Drain, or the drain of a rollout's domain.
	PhaseDrain Phase = "drain"
	// Phase1: eviction of the pods protected by a budget (PhaseStarted
	// to PhaseDone of phase 1).
	Phase1 Phase = "phase1"
	// Phase2: eviction of the other pods.
	Phase2 Phase = "phase2"
	// PhaseWaitGone: from the end of phase 2 to every evicted pod gone.
	PhaseWaitGone Phase = "wait_gone"
	// PhaseUpgrade: the caller's upgrade step (UpgradeStarted to
	// UpgradeDone).
	PhaseUpgrade Phase = "upgrade"
	// PhaseRecovery: from the domain's last event before its recovery wait
	// (its last uncordon) to Recovered.
	PhaseRecovery Phase = "recovery"
	// PhaseDomain: a rollout's whole domain (DomainStarted to DomainDone).
	PhaseDomain Phase = "domain"
)

// State is the value of the state label of DomainState and Domains.
type State string

// The states of a domain, as the events of drains and rollouts tell them.
const (
	// StatePending: a rollout that started has not reached the domain.
	StatePending State = "pending"
	// StateHeld: a rollout with parallel domains holds the domain back
	// (a budget or the upgraded room: DomainHeld), uncordoned, until it
	// may start.
	StateHeld State = "held"
	// StateDraining: a drain of the domain runs (planned, cordoning,
	// evicting, waiting for pods to go).
	StateDraining State = "draining"
	// StateDrained: a Drain finished; the domain stays cordoned.
	StateDrained State = "drained"
	// StateUpgrading: a rollout's upgrade step (and GPU check) runs.
	StateUpgrading State = "upgrading"
	// StateRecovering: waiting for the domain's groups to be healthy.
	StateRecovering State = "recovering"
	// StateSkipped: a resumed rollout found the domain upgraded.
	StateSkipped State = "skipped"
	// StateDone: the domain recovered (or a rollout finished it).
	StateDone State = "done"
	// StateFailed: the domain's drain, or a rollout in it, stopped on an
	// error.
	StateFailed State = "failed"
)

// states are every State, for the Domains gauge's series.
var states = []State{StatePending, StateHeld, StateDraining, StateDrained, StateUpgrading, StateRecovering, StateSkipped, StateDone, StateFailed}

var results = []Result{ResultEvicted, ResultGone, ResultBudgetRefused, ResultWebhookRefused, ResultNamespaceTerminating, ResultError}
