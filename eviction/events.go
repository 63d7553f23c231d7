package eviction

import (
	"sync"
	"time"
)

// EventType names what happened.
type EventType string

// The events a drain and a rollout report, in the order they usually come.
const (
	EventPlanned          EventType = "Planned"          // a domain's plan is ready
	EventCordoned         EventType = "Cordoned"         // a node was cordoned
	EventPhaseStarted     EventType = "PhaseStarted"     // phase 1 or 2 begins
	EventEvicting         EventType = "Evicting"         // an eviction (or deletion) request is sent
	EventEvicted          EventType = "Evicted"          // the API accepted it; the pod is terminating
	EventBlocked          EventType = "Blocked"          // a PDB refused (429); sent again when its counts change
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
)

// Progress counts the pods of a domain drain.
type Progress struct {
	Phase1Total   int `json:"phase1Total"`
	Phase1Evicted int `json:"phase1Evicted"`
	Phase2Total   int `json:"phase2Total"`
	Phase2Evicted int `json:"phase2Evicted"`
	// Gone counts evicted pods that no longer exist.
	Gone int `json:"gone"`
}

// Event is one thing that happened during a drain, a rollout or a health
// wait. Events are structured so that a controller can act on them (record
// a Kubernetes Event on the pod or node, set a condition) without parsing
// Message.
type Event struct {
	Time time.Time `json:"time"`
	Type EventType `json:"type"`
	// ID is the drain's or rollout's ID (empty for a health wait).
	ID string `json:"id,omitempty"`
	// DryRun is "client" or "server" for the events of a dry run, where
	// nothing changed: a Cordoned event then says a cordon would be
	// accepted.
	DryRun string `json:"dryRun,omitempty"`
	Domain string `json:"domain,omitempty"`
	// Phase is the phase of the pod's plan on every pod event (Evicting,
	// Evicted, Blocked, Unblocked, Gone, Retrying, DryRun) and on
	// PhaseStarted and PhaseDone; zero otherwise.
	Phase Phase `json:"phase,omitempty"`
	// Pod is the pod of a pod event.
	Pod *PodRef `json:"pod,omitempty"`
	// Node is the node of a node event, and the pod's node on pod events.
	Node string `json:"node,omitempty"`
	// Block describes the refusing PDB for Blocked and Unblocked events.
	Block *BlockInfo `json:"block,omitempty"`
	// Health is what recovery waits for (WaitingRecovery) or found
	// (Recovered): the domain's groups and budgets, judged by package
	// health.
	Health *DomainHealth `json:"health,omitempty"`
	// Progress is the state of the domain's drain after the event.
	Progress Progress `json:"progress"`
	// Message is a human sentence about the event.
	Message string `json:"message,omitempty"`
	// Err is the error of Retrying events.
	Err error `json:"-"`
}

// emitter serialises calls to the caller's callback: one per Drainer, so
// that OnEvent never runs twice at once, whatever runs concurrently.
type emitter struct {
	mu sync.Mutex
	fn func(Event)
}

func (e *emitter) emit(ev Event) {
	if e == nil || e.fn == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fn(ev)
}
