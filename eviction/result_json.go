package eviction

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// resultJSON is Result's JSON: its pod counts and phase durations as an
// object per phase, its dry run's pods as outcomes.
type resultJSON struct {
	ID              string              `json:"id"`
	Domain          string              `json:"domain"`
	DryRun          string              `json:"dryRun,omitempty"`
	Cordoned        []string            `json:"cordoned,omitempty"`
	AlreadyCordoned []string            `json:"alreadyCordoned,omitempty"`
	NodesGone       []string            `json:"nodesGone,omitempty"`
	Phase1          phaseJSON           `json:"phase1"`
	Phase2          phaseJSON           `json:"phase2"`
	Blocks          []BlockInfo         `json:"blocks,omitempty"`
	GroupsDisrupted []topology.GroupID  `json:"groupsDisrupted,omitempty"`
	DryRunOutcomes  []dryRunOutcomeJSON `json:"dryRunOutcomes,omitempty"`
	Completed       bool                `json:"completed"`
	Started         time.Time           `json:"started"`
	Duration        udrain.Seconds      `json:"durationSeconds"`
}

// phaseJSON is one phase of a Result's JSON.
type phaseJSON struct {
	Pods               int            `json:"pods"`
	Evicted            int            `json:"evicted"`
	AlreadyGone        int            `json:"alreadyGone"`
	AlreadyTerminating int            `json:"alreadyTerminating"`
	Duration           udrain.Seconds `json:"durationSeconds"`
}

// MarshalJSON writes the result with its counts and durations per phase,
// in "phase1" and "phase2".
func (r Result) MarshalJSON() ([]byte, error) {
	c := r.Pods
	return json.Marshal(resultJSON{ID: r.ID, Domain: r.Domain, DryRun: r.DryRun, Cordoned: r.Cordoned, AlreadyCordoned: r.AlreadyCordoned, NodesGone: r.NodesGone,
		Phase1: phaseJSON{c.Phase1Total, c.Phase1Evicted, c.Phase1AlreadyGone, c.Phase1AlreadyTerminating, r.Phase1Duration},
		Phase2: phaseJSON{c.Phase2Total, c.Phase2Evicted, c.Phase2AlreadyGone, c.Phase2AlreadyTerminating, r.Phase2Duration},
		Blocks: r.Blocks, GroupsDisrupted: r.GroupsDisrupted, DryRunOutcomes: dryRunOutcomesJSON(r.DryRunPods), Completed: r.Completed, Started: r.Started, Duration: r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes. Pods.Gone is not in it:
// it stays 0.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w resultJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	pods, err := dryRunPodsOf(w.DryRunOutcomes)
	if err != nil {
		return err
	}
	*r = Result{ID: w.ID, Domain: w.Domain, DryRun: w.DryRun, Cordoned: w.Cordoned, AlreadyCordoned: w.AlreadyCordoned, NodesGone: w.NodesGone,
		Pods: PodCounts{Phase1Total: w.Phase1.Pods, Phase1Evicted: w.Phase1.Evicted, Phase1AlreadyGone: w.Phase1.AlreadyGone, Phase1AlreadyTerminating: w.Phase1.AlreadyTerminating,
			Phase2Total: w.Phase2.Pods, Phase2Evicted: w.Phase2.Evicted, Phase2AlreadyGone: w.Phase2.AlreadyGone, Phase2AlreadyTerminating: w.Phase2.AlreadyTerminating},
		Phase1Duration: w.Phase1.Duration, Phase2Duration: w.Phase2.Duration,
		Blocks: w.Blocks, GroupsDisrupted: w.GroupsDisrupted, DryRunPods: pods, Completed: w.Completed, Started: w.Started, Duration: w.Duration}
	return nil
}

// dryRunOutcomeJSON is one of a Result's DryRunPods in its JSON: the
// pod's stage as its phase number, its DryRun as its verdict.
type dryRunOutcomeJSON struct {
	Pod     topology.PodRef `json:"pod"`
	Phase   int             `json:"phase"`
	Verdict RequestResult   `json:"verdict"`
	Block   *BlockInfo      `json:"block,omitempty"`
	Message string          `json:"message"`
}

// verdictAlreadyGone is RequestGone's verdict in a dry run's JSON, as
// udrain 0.1 wrote it.
const verdictAlreadyGone RequestResult = "AlreadyGone"

func dryRunOutcomesJSON(pods []PlannedPod) []dryRunOutcomeJSON {
	if pods == nil {
		return nil
	}
	out := make([]dryRunOutcomeJSON, len(pods))
	for i, p := range pods {
		verdict := p.DryRun
		if verdict == RequestGone {
			verdict = verdictAlreadyGone
		}
		out[i] = dryRunOutcomeJSON{Pod: p.PodRef, Phase: p.Stage.Phase(), Verdict: verdict, Block: p.DryRunBlock, Message: p.DryRunMessage}
	}
	return out
}

func dryRunPodsOf(outs []dryRunOutcomeJSON) ([]PlannedPod, error) {
	if outs == nil {
		return nil, nil
	}
	pods := make([]PlannedPod, len(outs))
	for i, o := range outs {
		st, err := stageOfPhase(o.Phase)
		if err != nil {
			return nil, err
		}
		verdict := o.Verdict
		if verdict == verdictAlreadyGone {
			verdict = RequestGone
		}
		pods[i] = PlannedPod{PodRef: o.Pod, Stage: st, DryRun: verdict, DryRunBlock: o.Block, DryRunMessage: o.Message}
	}
	return pods, nil
}

// stageOfPhase is the Stage of a phase number; 0 is none.
func stageOfPhase(n int) (Stage, error) {
	switch n {
	case 0:
		return "", nil
	case 1:
		return StagePhase1, nil
	case 2:
		return StagePhase2, nil
	}
	return "", fmt.Errorf("phase %d: a drain has phases 1 and 2", n)
}

// blockRecordJSON is a block's record in JSON (BlockInfo with Until set),
// as udrain 0.1's BlockRecord wrote it: its end is since plus the
// duration.
type blockRecordJSON struct {
	health.BudgetRef
	Since    time.Time         `json:"since"`
	Pods     []topology.PodRef `json:"pods,omitempty"`
	Duration udrain.Seconds    `json:"durationSeconds"`
}

// holdJSON is a hold in JSON (BlockInfo of BlockBudget, BlockRoom or
// BlockLimit), as udrain 0.1's Hold wrote it.
type holdJSON struct {
	Domain   string            `json:"domain"`
	Reason   BlockReason       `json:"reason"`
	Budget   *health.BudgetRef `json:"budget,omitempty"`
	Rule     string            `json:"rule,omitempty"`
	Allowed  int               `json:"allowed,omitempty"`
	Down     int               `json:"down,omitempty"`
	Needed   int               `json:"needed,omitempty"`
	Group    *topology.GroupID `json:"group,omitempty"`
	To       string            `json:"to,omitempty"`
	InFlight []string          `json:"inFlight,omitempty"`
	Message  string            `json:"message"`
}

// MarshalJSON writes a refusal that lasts with its fields' tags (no
// reason: every block of a drain is a refusal); a block's record (Until
// set) as the budget, "since", "pods" and "durationSeconds"; and a hold
// as the domain, "reason", "budget" (an object) and the hold's fields.
func (b BlockInfo) MarshalJSON() ([]byte, error) {
	switch {
	case b.Held():
		h := holdJSON{Domain: b.Domain, Reason: b.Reason, Rule: b.Rule, Allowed: b.Allowed, Down: b.Down, Needed: b.Needed,
			Group: b.Group, To: b.To, InFlight: b.InFlight, Message: b.Message}
		if b.BudgetRef != (health.BudgetRef{}) {
			h.Budget = &b.BudgetRef
		}
		return json.Marshal(h)
	case b.Until.IsZero():
		type live BlockInfo
		return json.Marshal(live(b))
	}
	return json.Marshal(blockRecordJSON{BudgetRef: b.BudgetRef, Since: b.Since, Pods: b.Pods, Duration: b.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes: an object with a hold's
// "reason" is a hold; one with "durationSeconds" a record, whose Until is
// since plus the duration; any other a refusal that lasts. Refusals and
// records read back with Reason BlockRefused.
func (b *BlockInfo) UnmarshalJSON(data []byte) error {
	var probe struct {
		Reason BlockReason `json:"reason"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return err
	}
	if held := (BlockInfo{Reason: probe.Reason}); held.Held() {
		var h holdJSON
		if err := json.Unmarshal(data, &h); err != nil {
			return err
		}
		*b = BlockInfo{Reason: h.Reason, Domain: h.Domain, Rule: h.Rule, Allowed: h.Allowed, Down: h.Down, Needed: h.Needed,
			Group: h.Group, To: h.To, InFlight: h.InFlight, Message: h.Message}
		if h.Budget != nil {
			b.BudgetRef = *h.Budget
		}
		return nil
	}
	type live BlockInfo
	var w struct {
		live
		Duration *udrain.Seconds `json:"durationSeconds"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = BlockInfo(w.live)
	b.Reason = BlockRefused
	if w.Duration != nil {
		b.Duration = *w.Duration
		b.Until = b.Since.Add(b.Duration.Duration())
	}
	return nil
}
