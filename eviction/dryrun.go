package eviction

import (
	"context"

	"github.com/udrain/udrain/topology"
)

// dryRunOutcome records what a dry run found for one pod and reports it.
func (ex *execution) dryRunOutcome(phase Stage, p PlannedPod, verdict RequestResult, block *BlockInfo, msg string) {
	p.Stage, p.DryRun, p.DryRunBlock, p.DryRunMessage = phase, verdict, block, msg
	ex.res.DryRunPods = append(ex.res.DryRunPods, p)
	ev := podEvent(EventDryRun, phase, p.PodRef)
	ev.Block, ev.Message = block, msg
	ex.emit(ev)
}

// accepted is the verdict for a pod the API would let go.
func (ex *execution) accepted() (RequestResult, string) {
	if !ex.usingEviction {
		return WouldDelete, "would delete"
	}
	return WouldEvict, "would evict"
}

func (ex *execution) phases() []struct {
	phase Stage
	pods  []PlannedPod
} {
	return []struct {
		phase Stage
		pods  []PlannedPod
	}{{StagePhase1, ex.plan.Phase1}, {StagePhase2, ex.plan.Phase2}}
}

// dryRunClient reports what would happen without calling the API.
func (ex *execution) dryRunClient() {
	verdict, msg := ex.accepted()
	for _, ph := range ex.phases() {
		for _, p := range ph.pods {
			if p.Terminating {
				ex.dryRunOutcome(ph.phase, p, WouldWait, nil, "already terminating; would wait")
				continue
			}
			ex.dryRunOutcome(ph.phase, p, verdict, nil, msg)
		}
	}
}

// dryRunServer sends every request with dryRun=All, once, without waiting:
// the API server validates cordons and checks each eviction against the
// budgets as they are now.
func (ex *execution) dryRunServer(ctx context.Context) error {
	if err := ex.chooseEvictor(ctx); err != nil {
		return err
	}
	if err := ex.cordon(ctx, true); err != nil {
		return err
	}
	for _, ph := range ex.phases() {
		ex.setStage(StagePhase1)
		if ph.phase == StagePhase2 {
			ex.setStage(StagePhase2)
		}
		for _, p := range ph.pods {
			if p.Terminating {
				ex.dryRunOutcome(ph.phase, p, WouldWait, nil, "already terminating; would wait")
				continue
			}
			_, err := ex.d.s.write(ctx, func(ctx context.Context) error { return ex.evict(ctx, p, ex.deleteOptions(p, true)) })
			switch classifyEvictionError(err) {
			case outcomeAccepted:
				verdict, msg := ex.accepted()
				ex.dryRunOutcome(ph.phase, p, verdict, nil, msg)
			case outcomeBlocked:
				info := ex.blockInfo(p, err)
				info.Pods = []topology.PodRef{p.PodRef}
				ex.dryRunOutcome(ph.phase, p, WouldBlock, &info, "blocked by "+info.String())
			case outcomeGone:
				ex.dryRunOutcome(ph.phase, p, RequestGone, nil, "already gone")
			case outcomeNamespaceTerminating:
				ex.dryRunOutcome(ph.phase, p, WouldWait, nil, "its namespace is being deleted; would wait for it to go with it")
			default:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				ex.dryRunOutcome(ph.phase, p, WouldFail, nil, err.Error())
			}
		}
	}
	return nil
}
