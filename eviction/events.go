package eviction

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// EventType names what happened.
type EventType string

// The events a drain and a rollout report, in the order they usually come.
const (
	EventPlanned          EventType = "Planned"          // a domain's plan is ready
	EventCordoned         EventType = "Cordoned"         // a node was cordoned
	EventPhaseStarted     EventType = "PhaseStarted"     // phase 1 or 2 begins
	EventEvicting         EventType = "Evicting"         // an eviction (or deletion) request is sent
	EventEvicted          EventType = "Evicted"          // the API accepted it, or (RequestNamespaceTerminating) the pod goes with its namespace; the pod is terminating
	EventBlocked          EventType = "Blocked"          // a PDB refused (429); sent on every refusal, and when its counts change while waiting
	EventUnblocked        EventType = "Unblocked"        // the PDB let the pod go after a block
	EventGone             EventType = "Gone"             // the pod (that UID) no longer exists
	EventPhaseDone        EventType = "PhaseDone"        // every pod of the phase is evicted
	EventDrained          EventType = "Drained"          // every evicted pod is gone
	EventUpgradeStarted   EventType = "UpgradeStarted"   // the caller's upgrade step begins
	EventUpgradeDone      EventType = "UpgradeDone"      // it returned without error
	EventWaitingGPUs      EventType = "WaitingGPUs"      // upgraded GPU nodes do not advertise their GPUs yet
	EventUncordoned       EventType = "Uncordoned"       // a node was uncordoned
	EventWaitingRecovery  EventType = "WaitingRecovery"  // what recovery still waits for; sent when it changes
	EventRecovered        EventType = "Recovered"        // the domain's groups are healthy again
	EventDomainSkipped    EventType = "DomainSkipped"    // a resumed rollout found the domain done
	EventNodeGone         EventType = "NodeGone"         // a node of the domain was deleted mid-drain
	EventLeftCordoned     EventType = "LeftCordoned"     // a node cordoned before udrain stays cordoned
	EventRetrying         EventType = "Retrying"         // a transient API error; the request is retried
	EventDryRun           EventType = "DryRun"           // what a dry run would do for a pod
	EventRolloutStarted   EventType = "RolloutStarted"   // a rollout begins
	EventRolloutDone      EventType = "RolloutDone"      // a rollout ends
	EventDomainStarted    EventType = "DomainStarted"    // a rollout starts a domain
	EventDomainDone       EventType = "DomainDone"       // a rollout finished a domain
	EventContractFindings EventType = "ContractFindings" // the audit found problems (warnings, or errors that were allowed)
	EventEvictionFailed   EventType = "EvictionFailed"   // a pod's eviction failed for good (Err); its domain stops
	EventRolloutStopped   EventType = "RolloutStopped"   // a rollout stopped on an error (Err) in Domain
	EventRecoveryStarted  EventType = "RecoveryStarted"  // a domain is uncordoned; its recovery wait begins
	EventDrainStopped     EventType = "DrainStopped"     // a domain's drain stopped on an error (Err) before every evicted pod was gone
	EventLockAcquired     EventType = "LockAcquired"     // a rollout took its Lease
	EventLockLost         EventType = "LockLost"         // a rollout lost its Lease (Err); it stops
	EventLockReleased     EventType = "LockReleased"     // a rollout gave its Lease up (or let it expire)
	EventDomainHeld       EventType = "DomainHeld"       // a rollout with parallel domains holds the next domain back (Hold); sent when the domain or the reason changes
	EventWorkloadUpdating EventType = "WorkloadUpdating" // a workload on the domain rolls out its own update (Updates): the domain waits before its cordon; sent when it changes
	EventWorkloadUpdated  EventType = "WorkloadUpdated"  // the updates a domain waited for are done; it starts
)

// RequestResult is the answer to one eviction (or deletion) request, on
// the event sent after it (Event.Request), or what a dry run found for a
// pod (PlannedPod.DryRun: a Would* value, or RequestGone).
type RequestResult string

// The answers to an eviction request.
const (
	// RequestEvicted: the API accepted it (EventEvicted).
	RequestEvicted RequestResult = "Evicted"
	// RequestGone: the pod (that UID) no longer existed (EventGone).
	RequestGone RequestResult = "Gone"
	// RequestBudgetRefused: a PodDisruptionBudget refused it, 429
	// (EventBlocked).
	RequestBudgetRefused RequestResult = "BudgetRefused"
	// RequestWebhookRefused: an admission webhook refused it
	// (EventRetrying, or EventEvictionFailed after the last attempt).
	RequestWebhookRefused RequestResult = "WebhookRefused"
	// RequestNamespaceTerminating: the pod's namespace is being deleted
	// (403, cause NamespaceTerminating), which refuses every eviction; the
	// namespace takes the pod with it. Retried (EventRetrying) until the
	// pod is terminating, then waited for (EventEvicted), as kubectl drain
	// does.
	RequestNamespaceTerminating RequestResult = "NamespaceTerminating"
	// RequestError: any other failure, transient (EventRetrying) or not
	// (EventEvictionFailed).
	RequestError RequestResult = "Error"
)

// What a dry run finds for a pod (PlannedPod.DryRun), besides RequestGone
// (the pod no longer exists).
const (
	// WouldEvict: the eviction would be accepted (client dry runs assume
	// so).
	WouldEvict RequestResult = "WouldEvict"
	// WouldDelete: the deletion would be accepted
	// (Helper.DisableEviction).
	WouldDelete RequestResult = "WouldDelete"
	// WouldWait: the pod is terminating already; it would be waited for.
	WouldWait RequestResult = "WouldWait"
	// WouldBlock: its budget refuses a disruption now (server dry run;
	// PlannedPod.DryRunBlock says which).
	WouldBlock RequestResult = "WouldBlock"
	// WouldFail: the API refused it for another reason
	// (PlannedPod.DryRunMessage says it).
	WouldFail RequestResult = "WouldFail"
)

// PodCounts counts the pods of a domain drain, as an [Event] carries them
// after it and its [Result] at its end.
type PodCounts struct {
	// Phase1Total and Phase2Total are the pods the plan put in each
	// phase.
	Phase1Total int `json:"phase1Total"`
	// Phase1Evicted and Phase2Evicted count the evictions (or deletions)
	// of each phase the API accepted.
	Phase1Evicted int `json:"phase1Evicted"`
	Phase2Total   int `json:"phase2Total"`
	Phase2Evicted int `json:"phase2Evicted"`
	// Gone counts evicted pods that no longer exist.
	Gone int `json:"gone"`
	// Phase1AlreadyGone and Phase2AlreadyGone count the pods of each
	// phase that were gone before udrain evicted them;
	// Phase1AlreadyTerminating and Phase2AlreadyTerminating those that
	// were being deleted already and were only waited on. A phase is done
	// when its Evicted, AlreadyGone and AlreadyTerminating add up to its
	// Total.
	Phase1AlreadyGone        int `json:"phase1AlreadyGone,omitempty"`
	Phase1AlreadyTerminating int `json:"phase1AlreadyTerminating,omitempty"`
	Phase2AlreadyGone        int `json:"phase2AlreadyGone,omitempty"`
	Phase2AlreadyTerminating int `json:"phase2AlreadyTerminating,omitempty"`
}

// count counts a pod of the phase done with, by how.
func (c *PodCounts) count(phase Stage, kind outcomeKind) {
	evicted, gone, terminating := &c.Phase1Evicted, &c.Phase1AlreadyGone, &c.Phase1AlreadyTerminating
	if phase == StagePhase2 {
		evicted, gone, terminating = &c.Phase2Evicted, &c.Phase2AlreadyGone, &c.Phase2AlreadyTerminating
	}
	switch kind {
	case outcomeAccepted:
		*evicted++
	case outcomeGone:
		*gone++
	default:
		*terminating++
	}
}

// Done counts the pods of each phase done with: evicted, found gone or
// found terminating.
func (c PodCounts) Done() (phase1, phase2 int) {
	return c.Phase1Evicted + c.Phase1AlreadyGone + c.Phase1AlreadyTerminating, c.Phase2Evicted + c.Phase2AlreadyGone + c.Phase2AlreadyTerminating
}

// Event is one thing that happened during a drain, a rollout or a health
// wait. Events are structured so that a controller can act on them (record
// a Kubernetes Event on the pod or node, set a condition) without parsing
// Message.
type Event struct {
	// Seq numbers the events of one Drainer, across all its calls: 1, 2,
	// 3, ... in the order OnEvent receives them, so that a sink that
	// stores events can drop one it has seen. A new Drainer (a restarted
	// process) starts again at 1: de-duplicate on (Time, Seq) or (ID,
	// Seq) across restarts.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type EventType `json:"type"`
	// ID is the drain's or rollout's ID (empty for a health wait).
	ID string `json:"id,omitempty"`
	// DryRun is "client" or "server" for the events of a dry run, where
	// nothing changed: a Cordoned event then says a cordon would be
	// accepted.
	DryRun string `json:"dryRun,omitempty"`
	Domain string `json:"domain,omitempty"`
	// Stage is the phase of the pod's plan, StagePhase1 or StagePhase2, on
	// every pod event (Evicting, Evicted, Blocked, Unblocked, Gone,
	// Retrying, DryRun) and on PhaseStarted and PhaseDone; "" otherwise.
	Stage Stage `json:"stage,omitempty"`
	// Pod is the pod of a pod event.
	Pod *topology.PodRef `json:"pod,omitempty"`
	// Node is the node of a node event, and the pod's node on pod events.
	Node string `json:"node,omitempty"`
	// Block describes the refusing PDB for Blocked and Unblocked events.
	Block *BlockInfo `json:"block,omitempty"`
	// Health is what recovery waits for (WaitingRecovery) or found
	// (Recovered): the domain's groups and budgets, judged by package
	// health.
	Health *health.DomainStatus `json:"health,omitempty"`
	// Updates are the workloads on the domain that roll out an update of
	// their own, on WorkloadUpdating (see
	// RolloutOptions.IgnoreWorkloadUpdates).
	Updates []WorkloadUpdate `json:"updates,omitempty"`
	// Domains are a rollout's domains in the order it takes them, on
	// RolloutStarted.
	Domains []string `json:"domains,omitempty"`
	// Progress is the state of the domain's drain after the event.
	Progress PodCounts `json:"progress"`
	// Request is the answer to the eviction (or deletion) request this
	// event reports: set on the one event sent after each request (Evicted,
	// Gone, Blocked, Retrying or EvictionFailed with a Pod), and on no
	// other, so that counting events by Request counts the requests.
	Request RequestResult `json:"request,omitempty"`
	// Status is the rollout's status (as Drainer.RolloutStatus reads it)
	// on the events RolloutStarted, DomainDone, RolloutStopped and
	// RolloutDone of a rollout that is not a dry run: a controller can
	// copy it into the status of its own resource.
	Status *RolloutStatus `json:"status,omitempty"`
	// Hold is why the domain of a DomainHeld event cannot start yet: a
	// BlockInfo of BlockBudget, BlockRoom or BlockLimit.
	Hold *BlockInfo `json:"hold,omitempty"`
	// Message is a human sentence about the event.
	Message string `json:"message,omitempty"`
	// Err is the error of Retrying, EvictionFailed, DrainStopped and
	// LockLost events.
	Err error `json:"-"`
	// Error is Err's message, for events written out as JSON (an error
	// value does not serialise); OnEvent receives it set whenever Err is.
	Error string `json:"error,omitempty"`
}

// emitter serialises calls to the caller's callback: one per Drainer, so
// that OnEvent never runs twice at once, whatever runs concurrently.
type emitter struct {
	mu  sync.Mutex
	fn  func(context.Context, Event)
	seq uint64 // the last Event.Seq sent
}

// callSink is the OnEvent of one call (DrainOptions.OnEvent,
// RolloutOptions.OnEvent): serialised per call, so a slow one holds back
// only its own call, and given the call's context. It travels in the
// call's context, so that every part of the call (its drains, its lock's
// renewals, its recovery waits) reaches it.
type callSink struct {
	mu  sync.Mutex
	ctx context.Context // the call's, without the sink: a callback that calls the Drainer again does not deadlock on its own sink
	fn  func(context.Context, Event)
}

type callSinkKey struct{}

// withCallSink returns ctx carrying fn as its call's sink; a nil fn leaves
// ctx as it is (an outer call's sink, if any, still receives the events).
func withCallSink(ctx context.Context, fn func(context.Context, Event)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, callSinkKey{}, &callSink{ctx: ctx, fn: fn})
}

// callSinkFrom returns the sink of the call ctx belongs to; without one
// (a call with no OnEvent of its own) a sink that calls nothing but gives
// Options.OnEvent the call's context.
func callSinkFrom(ctx context.Context) *callSink {
	if s, ok := ctx.Value(callSinkKey{}).(*callSink); ok {
		return s
	}
	return &callSink{ctx: ctx}
}

// emit numbers ev and hands it to the Drainer's callback, then to the
// call's own callback, both with the call's context (s, from
// callSinkFrom), and fills in Error from Err. The call's lock is taken
// first, so that a call's sink receives its events in Seq order.
func (e *emitter) emit(s *callSink, ev Event) {
	if s == nil { // a part made without a call's sink: no call's context to give
		s = &callSink{ctx: context.Background()}
	}
	if e == nil || (e.fn == nil && s.fn == nil) {
		return
	}
	if ev.Err != nil && ev.Error == "" {
		ev.Error = ev.Err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.mu.Lock()
	e.seq++
	ev.Seq = e.seq
	if e.fn != nil {
		e.fn(s.ctx, ev)
	}
	e.mu.Unlock()
	if s.fn != nil {
		s.fn(s.ctx, ev)
	}
}

// String is the event's progress line without its time, the words
// udrain prints for it (report.FormatEvent puts the time in front):
//
//	<Type> [dryRun=client|server] [domain=D] [phase=N] [pod=NS/NAME] [node=N]
//	  [pdb=NS/NAME allowed=A healthy=H desired=D expected=E]
//	  [phase1=DONE/TOTAL phase2=DONE/TOTAL gone=G] [msg="..."]
//
// where phase=N is 1 or 2 for Stage, and DONE counts a phase's pods
// evicted, found gone or found terminating (PodCounts).
// e.g. `DomainDone domain=ud-2 msg="done in 4.2s"`. The words and their
// order are stable: scripts grep them (docs/CLI.md). A message is quoted
// as a Go string, so that a line is always one line.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(string(e.Type))
	if e.DryRun != "" {
		fmt.Fprintf(&b, " dryRun=%s", e.DryRun)
	}
	if e.Domain != "" {
		fmt.Fprintf(&b, " domain=%s", e.Domain)
	}
	if n := e.Stage.Phase(); n != 0 {
		fmt.Fprintf(&b, " phase=%d", n)
	}
	if e.Pod != nil {
		fmt.Fprintf(&b, " pod=%s", e.Pod)
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " node=%s", e.Node)
	}
	if bl := e.Block; bl != nil {
		fmt.Fprintf(&b, " pdb=%s/%s allowed=%d healthy=%d desired=%d expected=%d",
			bl.Namespace, bl.PDB, bl.DisruptionsAllowed, bl.CurrentHealthy, bl.DesiredHealthy, bl.ExpectedPods)
	}
	if p := e.Progress; p.Phase1Total+p.Phase2Total > 0 {
		h1, h2 := p.Done()
		fmt.Fprintf(&b, " phase1=%d/%d phase2=%d/%d gone=%d", h1, p.Phase1Total, h2, p.Phase2Total, p.Gone)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, " msg=%q", e.Message)
	}
	return b.String()
}
