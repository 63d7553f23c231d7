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

// Event is one thing that happened during a drain or rollout.
type Event struct {
	Time   time.Time `json:"time"`
	Type   EventType `json:"type"`
	Domain string    `json:"domain,omitempty"`
	Phase  Phase     `json:"phase,omitempty"`
	// Pod is "namespace/name" for pod events; Node for node events.
	Pod  string `json:"pod,omitempty"`
	Node string `json:"node,omitempty"`
	// Block describes the refusing PDB for Blocked and Unblocked events.
	Block *BlockInfo `json:"block,omitempty"`
	// Progress is the state of the domain after the event.
	Progress Progress `json:"progress"`
	// Message is a human sentence about the event.
	Message string `json:"message,omitempty"`
	// Err is set for Retrying events.
	Err error `json:"-"`
}

// emitter serialises calls to the caller's callback.
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
