package eviction

import (
	"fmt"
	"strings"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// The results of this package are plain Go values and, as they are, the
// wire schema of udrain's JSON and YAML output: the CLI prints them with an
// apiVersion and a kind around them and nothing copied field by field
// (RolloutStatus and Result write a few of their fields nested, in their
// MarshalJSON).
// JSON conventions: names in lowerCamelCase; an empty list or optional
// object is omitted; a duration is a udrain.Seconds (a number of seconds, written
// even when 0) in a field whose name ends in "Seconds"; times are RFC 3339.

// BlockReason says what blocks a domain's drain.
type BlockReason string

// The reasons of a BlockInfo: a PodDisruptionBudget refusing the domain's
// evictions (BlockRefused), or what holds back a domain that a rollout
// with parallel domains does not start yet, before its cordon (a hold:
// BlockBudget, BlockRoom, BlockLimit). A hold clears when a domain in
// flight finishes (or its groups recover), or what is down elsewhere
// recovers.
const (
	// BlockRefused: a PodDisruptionBudget refuses the domain's evictions
	// (the Eviction API's 429). Every block of a drain, its events'
	// (Blocked, Unblocked), its Result.Blocks' and a DomainError's.
	BlockRefused BlockReason = "Refused"
	// BlockBudget: a PodDisruptionBudget over the groups the domain's
	// drain evicts would allow, by its spec, fewer groups down than those
	// down now, those of the domains in flight and the domain's own.
	BlockBudget BlockReason = "Budget"
	// BlockRoom: a group the domain's drain evicts would find no room in
	// an upgraded domain while the domains in flight are closed, and
	// would land on a domain not upgraded yet (to be disrupted again).
	BlockRoom BlockReason = "Room"
	// BlockLimit: RolloutOptions.Parallel domains are in flight.
	BlockLimit BlockReason = "Limit"
)

// BlockInfo is what blocks a domain's drain: a PodDisruptionBudget
// refusing its evictions (Reason BlockRefused) now (an event's or a
// DomainError's block) or, once its Until is set, over a stretch of time
// (a block's record: Result.Blocks, report.Summary.LongestBlock); or,
// before the cordon, why a rollout with parallel domains does not start
// the domain yet (a hold: Reason BlockBudget, BlockRoom or BlockLimit, in
// a DomainHeld event's Hold and RolloutDomain.HeldBy).
//
// A refusal that lasts has the budget, its counts, since when it refuses,
// the pods waiting on it, the API server's message and the pods it does
// not count healthy. A block's record has the budget, Since, the pods that
// waited on it during the block, Until and Duration. A hold has the
// Domain held, the budget (BlockBudget) with its Rule, Allowed, Down and
// Needed, the Group without room and the domain To it would land on
// (BlockRoom), the limit in Allowed (BlockLimit), the domains InFlight
// and a Message. The other fields of each are empty.
type BlockInfo struct {
	// Reason says what blocks; empty is BlockRefused.
	Reason BlockReason `json:"-"`
	// Domain is the domain a hold holds back.
	Domain string `json:"-"`
	health.BudgetRef
	// The budget's status counts, as udrain's watch sees them.
	health.BudgetCounts
	// Since is when the budget first refused one of the domain's pods.
	Since time.Time `json:"since"`
	// Pods are the pods waiting on it; in a record, every pod that waited
	// on it during the block.
	Pods []topology.PodRef `json:"pods,omitempty"`
	// Message is the API server's explanation, if it gave one; a hold's
	// reason in a sentence.
	Message string `json:"message,omitempty"`
	// Unhealthy are the pods the budget selects that it does not count
	// healthy (package health: not Ready, or being deleted), with their
	// node: why it allows no disruption. At most maxBlockPods; a group down
	// on a node gone offline shows here with NodeNotReady.
	Unhealthy []health.BudgetPod `json:"unhealthy,omitempty"`
	// Rule is, in a hold of BlockBudget, what the budget's spec promises
	// over the groups (or pods of no group) udrain sees it select, e.g.
	// "maxUnavailable 2" or "minAvailable 3 of 4".
	Rule string `json:"-"`
	// Allowed is how many of them may be down at once by Rule (for
	// BlockLimit, the limit); Down counts those down now or evicted by the
	// domains in flight; Needed those the domain's drain would add.
	Allowed int `json:"-"`
	Down    int `json:"-"`
	Needed  int `json:"-"`
	// Group is the group that would find no upgraded room (BlockRoom),
	// and To the domain not upgraded yet it would land on.
	Group *topology.GroupID `json:"-"`
	To    string            `json:"-"`
	// InFlight are the domains in flight when a hold held the domain.
	InFlight []string `json:"-"`
	// Until is, in a record, when the block ended: its last waiting pod
	// was let go, or the drain ended. Zero while the block lasts.
	Until time.Time `json:"-"`
	// Duration is, in a record, Until - Since; 0 while the block lasts.
	Duration udrain.Seconds `json:"-"`
}

// Held reports whether b is a hold: a domain a rollout with parallel
// domains does not start yet (BlockBudget, BlockRoom, BlockLimit).
func (b BlockInfo) Held() bool {
	return b.Reason == BlockBudget || b.Reason == BlockRoom || b.Reason == BlockLimit
}

// maxBlockPods bounds BlockInfo.Unhealthy.
const maxBlockPods = 10

// String returns e.g. "PodDisruptionBudget ns/leaders allows 0
// disruption(s): 2 healthy, 2 needed, 3 expected; not healthy: ns/llm-1
// on node gpu-7 (NotReady)"; for a record, "PodDisruptionBudget
// ns/leaders refused evictions for 1m30s (2 pod(s) waited)"; for a hold,
// its Message.
func (b BlockInfo) String() string {
	if b.Held() {
		return b.Message
	}
	if !b.Until.IsZero() {
		return fmt.Sprintf("PodDisruptionBudget %s/%s refused evictions for %s (%d pod(s) waited)", b.Namespace, b.PDB, b.Duration, len(b.Pods))
	}
	s := fmt.Sprintf("PodDisruptionBudget %s/%s %s", b.Namespace, b.PDB, b.BudgetCounts)
	if len(b.Unhealthy) > 0 {
		parts := make([]string, len(b.Unhealthy))
		for i, p := range b.Unhealthy {
			parts[i] = p.String()
		}
		s += "; not healthy: " + strings.Join(parts, ", ")
	}
	return s
}

// Result is what draining one domain did.
type Result struct {
	// ID is the drain's or rollout's ID.
	ID     string `json:"id"`
	Domain string `json:"domain"`
	// DryRun is "client" or "server" for dry runs, empty otherwise.
	DryRun string `json:"dryRun,omitempty"`
	// Cordoned lists the nodes udrain cordoned; AlreadyCordoned those that
	// were cordoned before it came.
	Cordoned        []string `json:"cordoned,omitempty"`
	AlreadyCordoned []string `json:"alreadyCordoned,omitempty"`
	// NodesGone lists nodes deleted while the domain drained.
	NodesGone []string `json:"nodesGone,omitempty"`
	// Pods counts the plan's pods per phase and what became of them: the
	// counts of the drain's last event. Its JSON is an object per phase,
	// "phase1" and "phase2": pods (PhaseNTotal), evicted,
	// alreadyGone, alreadyTerminating and durationSeconds (PhaseNDuration).
	Pods PodCounts `json:"-"`
	// Phase1Duration and Phase2Duration are the times from each phase's
	// start to its last eviction.
	Phase1Duration udrain.Seconds `json:"-"`
	Phase2Duration udrain.Seconds `json:"-"`
	// Blocks are the records of the times a PDB refused the domain's
	// evictions (BlockInfo with Until set), in the order they ended.
	Blocks []BlockInfo `json:"blocks,omitempty"`
	// GroupsDisrupted are the groups that lost pods in this drain (a pod
	// evicted, or found terminating and waited for), in the order their
	// first pod went.
	GroupsDisrupted []topology.GroupID `json:"groupsDisrupted,omitempty"`
	// DryRunPods are, for a dry run, the plan's pods with what the dry
	// run found for each (PlannedPod's Stage and DryRun fields), in the
	// plan's order. Their JSON is "dryRunOutcomes": each pod's reference,
	// "phase" (1 or 2), "verdict" (DryRun; "AlreadyGone" for RequestGone),
	// "block" and "message".
	DryRunPods []PlannedPod `json:"-"`
	// Completed is true when every planned pod is gone (or, in a dry run,
	// was checked).
	Completed bool           `json:"completed"`
	Started   time.Time      `json:"started"`
	Duration  udrain.Seconds `json:"durationSeconds"`
}
