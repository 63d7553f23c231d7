package eviction

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// resultJSON is Result's JSON: its pod counts and phase durations as an
// object per phase.
type resultJSON struct {
	ID              string             `json:"id"`
	Domain          string             `json:"domain"`
	DryRun          string             `json:"dryRun,omitempty"`
	Cordoned        []string           `json:"cordoned,omitempty"`
	AlreadyCordoned []string           `json:"alreadyCordoned,omitempty"`
	NodesGone       []string           `json:"nodesGone,omitempty"`
	Phase1          phaseJSON          `json:"phase1"`
	Phase2          phaseJSON          `json:"phase2"`
	Blocks          []BlockRecord      `json:"blocks,omitempty"`
	GroupsDisrupted []topology.GroupID `json:"groupsDisrupted,omitempty"`
	DryRunOutcomes  []DryRunOutcome    `json:"dryRunOutcomes,omitempty"`
	Completed       bool               `json:"completed"`
	Started         time.Time          `json:"started"`
	Duration        udrain.Seconds     `json:"durationSeconds"`
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
		Blocks: r.Blocks, GroupsDisrupted: r.GroupsDisrupted, DryRunOutcomes: r.DryRunOutcomes, Completed: r.Completed, Started: r.Started, Duration: r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes. Pods.Gone is not in it:
// it stays 0.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w resultJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result{ID: w.ID, Domain: w.Domain, DryRun: w.DryRun, Cordoned: w.Cordoned, AlreadyCordoned: w.AlreadyCordoned, NodesGone: w.NodesGone,
		Pods: PodCounts{Phase1Total: w.Phase1.Pods, Phase1Evicted: w.Phase1.Evicted, Phase1AlreadyGone: w.Phase1.AlreadyGone, Phase1AlreadyTerminating: w.Phase1.AlreadyTerminating,
			Phase2Total: w.Phase2.Pods, Phase2Evicted: w.Phase2.Evicted, Phase2AlreadyGone: w.Phase2.AlreadyGone, Phase2AlreadyTerminating: w.Phase2.AlreadyTerminating},
		Phase1Duration: w.Phase1.Duration, Phase2Duration: w.Phase2.Duration,
		Blocks: w.Blocks, GroupsDisrupted: w.GroupsDisrupted, DryRunOutcomes: w.DryRunOutcomes, Completed: w.Completed, Started: w.Started, Duration: w.Duration}
	return nil
}

// dryRunOutcomeJSON is DryRunOutcome's JSON: its stage as a phase number.
type dryRunOutcomeJSON struct {
	Pod     topology.PodRef `json:"pod"`
	Phase   int             `json:"phase"`
	Verdict DryRunVerdict   `json:"verdict"`
	Block   *BlockInfo      `json:"block,omitempty"`
	Message string          `json:"message"`
}

// MarshalJSON writes the outcome with its Stage as "phase": 1 or 2.
func (o DryRunOutcome) MarshalJSON() ([]byte, error) {
	return json.Marshal(dryRunOutcomeJSON{Pod: o.Pod, Phase: o.Stage.Phase(), Verdict: o.Verdict, Block: o.Block, Message: o.Message})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *DryRunOutcome) UnmarshalJSON(b []byte) error {
	var w dryRunOutcomeJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	st, err := stageOfPhase(w.Phase)
	if err != nil {
		return err
	}
	*o = DryRunOutcome{Pod: w.Pod, Stage: st, Verdict: w.Verdict, Block: w.Block, Message: w.Message}
	return nil
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
