package eviction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// domainRun is one domain's pass through the stages of a rollout: prepare
// (plan, or find it upgraded by an earlier run), drain, upgrade, mark,
// GPU check, uncordon, recover.
type domainRun struct {
	r *rollout
	// out is the domain's outcome, this run's own while it runs; idx is
	// its place in the rollout's result.
	out    *RolloutDomain
	idx    int
	demand *demand
	// recovering: the domain is uncordoned; its recovery runs.
	recovering atomic.Bool
	// roomy: as it started, upgraded room took every pod it evicts
	// (SteerAuto).
	roomy  bool
	dom    topology.Domain
	emit   func(Event)
	logger klog.Logger
	start  time.Time

	plan *Plan
	// upgraded: an earlier run with this ID upgraded the domain; its
	// drain and upgrade are skipped.
	upgraded bool
	// resumed: the domain is cordoned by this rollout: an earlier run
	// stopped in it.
	resumed bool
	// before are the GPUs of the domain's nodes before the drain.
	before map[string]int64
	// marked is the node that got the upgraded mark first, at markedAt.
	marked   string
	markedAt time.Time
	drain    *Result
	target   recoveryTarget
	// down follows the downtime of the groups the drain disrupts.
	down *downtimes
}

// domain returns the run of domain r.res.Domains[i], with the demand
// the rollout admitted it for.
func (r *rollout) domain(i int, d *demand) *domainRun {
	r.mu.Lock()
	out := r.res.Domains[i]
	r.mu.Unlock()
	s := &domainRun{r: r, out: &out, idx: i, demand: d, logger: r.logger.WithValues("domain", out.Domain)}
	s.emit = func(e Event) {
		e.Domain = out.Domain
		r.emit(e)
	}
	return s
}

// stop wraps err into the *DomainError of the stage.
func (s *domainRun) stop(stage Stage, err error) error {
	return &DomainError{ID: s.r.id, Domain: s.out.Domain, Stage: stage, Err: err}
}

// run takes the domain through its stages, stopping at the first error.
func (s *domainRun) run(ctx context.Context) error {
	clk := s.r.d.s.Clock
	s.start = clk.Now()
	defer func() { s.out.Duration = udrain.Seconds(clk.Since(s.start)) }()
	s.emit(Event{Type: EventDomainStarted})
	if err := s.r.d.waitForWorkloadUpdates(ctx, s.r.v, s.out.Domain, s.r.opts, s.emit); err != nil {
		return s.stop(StagePlan, err)
	}
	if err := s.prepare(ctx); err != nil {
		return s.stop(StagePlan, err)
	}
	if s.down != nil {
		fctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { s.down.follow(fctx) })
		defer wg.Wait()
		defer cancel()
	}
	if !s.upgraded {
		if err := s.drainDomain(ctx); err != nil {
			return err // a *DomainError already
		}
		if s.r.dryRun() {
			// A dry run shows each domain's plan and what the API would
			// say; it runs no upgrade step and changes no node.
			s.out.State = StateDryRun
			s.emit(Event{Type: EventDomainDone, Message: "dry run"})
			return nil
		}
		if err := s.upgrade(ctx); err != nil {
			return s.stop(StageUpgrade, err)
		}
		if err := s.mark(ctx); err != nil {
			return s.stop(StageUncordon, err)
		}
	}
	if err := s.checkGPUs(ctx); err != nil {
		return s.stop(StageGPUCheck, err)
	}
	if err := s.findStranded(ctx); err != nil {
		return s.stop(StageRecovery, err)
	}
	if err := s.uncordon(ctx); err != nil {
		return s.stop(StageUncordon, err)
	}
	return s.recover(ctx)
}

// prepare plans the domain from the pods its plan reads (its pods, their
// groups' and workloads'), or finds it upgraded by an earlier run.
func (s *domainRun) prepare(ctx context.Context) error {
	snap, err := s.r.v.planSnapshot(ctx, s.out.Domain)
	if err != nil {
		return err
	}
	layout, err := topology.BuildLayout(snap.Nodes, s.r.d.s.layoutOptions())
	if err != nil {
		return err
	}
	if s.dom, err = layout.Domain(s.out.Domain); err != nil {
		return err
	}
	s.upgraded = upgradedBy(snap.Nodes, s.dom, s.r.id)
	s.resumed = cordonedBy(snap.Nodes, s.dom, s.r.id)
	plan, err := newPlan(s.out.Domain, snap, s.r.d.s)
	if err != nil {
		return err
	}
	s.plan = plan
	s.target = targetFromPlan(plan)
	if s.upgraded {
		s.r.expect.addUpgraded(s.out.Domain)
		s.out.State = StateSkipped
		s.logger.Info("Domain already upgraded by this rollout; skipping its drain")
		s.emit(Event{Type: EventDomainSkipped, Message: fmt.Sprintf("already upgraded by rollout %s", s.r.id)})
		return nil
	}
	s.out.Plan = plan
	s.before = gpu.Advertised(domainNodes(snap.Nodes, s.dom), s.r.d.s.GPU)
	if !s.r.dryRun() && len(plan.Groups) > 0 {
		pgs, _ := s.r.v.PodGroups(ctx)
		s.down = newDowntimes(s.r.d, s.r.v, layout, plan, s.target, groupersFor(s.r.d.s, &Snapshot{PodGroups: pgs}))
	}
	s.emit(Event{Type: EventPlanned, Progress: PodCounts{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)},
		Message: plan.withFitWarning(ctx, fmt.Sprintf("%d node(s); phase 1: %d pod(s), phase 2: %d pod(s)", len(plan.Nodes), len(plan.Phase1), len(plan.Phase2)))})
	return nil
}

// drainDomain cordons the domain and evicts its plan's pods, phase 1
// first; its error is a *DomainError of the drain's stage.
func (s *domainRun) drainDomain(ctx context.Context) error {
	var deleted deletedNamespaces
	observe := func(e Event) {
		deleted.note(e)
		if e.Type == EventCordoned && !s.r.dryRun() {
			s.r.notePatched(true, e.Node)
		}
		if s.down != nil {
			s.down.observe(e)
		}
	}
	drained, err := s.r.d.execute(ctx, s.r.v, s.plan, s.r.id, observe, &deleted)
	s.out.Drain, s.drain = drained, drained
	s.target.forgetDeletedNamespaces(&deleted)
	if err == nil && s.down != nil {
		s.down.drainDone()
	}
	if err == nil && !s.r.dryRun() {
		// Until its uncordon, the domain stays cordoned by the rollout.
		var held []string
		for _, n := range s.dom.Nodes {
			if node, ok := s.r.v.Node(n); ok && node.Annotations[udrain.CordonedByAnnotation] == s.r.id {
				held = append(held, n)
			}
		}
		s.r.expect.setCordoned(s.out.Domain, held)
	}
	return err
}

// upgrade runs the caller's upgrade step, if any.
func (s *domainRun) upgrade(ctx context.Context) error {
	if s.r.opts.Upgrade == nil {
		return nil
	}
	clk := s.r.d.s.Clock
	t0 := clk.Now()
	s.logger.Info("Upgrade step started", "nodes", len(s.dom.Nodes))
	s.emit(Event{Time: t0, Type: EventUpgradeStarted})
	if err := s.r.opts.Upgrade(ctx, s.dom); err != nil {
		return err
	}
	s.out.Upgrade = udrain.Seconds(clk.Since(t0))
	s.logger.Info("Upgrade step done", "took", s.out.Upgrade.Duration().Round(time.Millisecond))
	s.emit(Event{Type: EventUpgradeDone, Message: fmt.Sprintf("took %s", s.out.Upgrade.Duration().Round(time.Millisecond))})
	return nil
}

// mark records on one node that the rollout upgraded the domain: from
// here on, a resumed rollout skips its drain and upgrade.
func (s *domainRun) mark(ctx context.Context) error {
	if e := s.r.confirmHistory(ctx, s.dom.Nodes); e != nil {
		return e
	}
	var err error
	s.markedAt = s.r.d.s.Clock.Now()
	s.marked, err = s.r.d.markUpgraded(ctx, s.emit, s.dom.Nodes, s.r.id, s.markedAt)
	return err
}

// checkGPUs checks, after an upgrade step, that the domain's GPU nodes
// advertise their GPUs again; also for a domain an earlier run upgraded
// but left cordoned (it stopped in this check or before the uncordon).
func (s *domainRun) checkGPUs(ctx context.Context) error {
	if s.r.opts.Upgrade == nil || s.upgraded && !s.resumed {
		return nil
	}
	mark := upgradeMark{node: s.marked, id: s.r.id}
	if s.upgraded {
		mark = upgradeMark{}
	}
	return s.r.d.checkGPUs(ctx, s.r.v, s.dom, s.before, mark, gpuCheck{Disabled: s.r.opts.SkipGPUCheck, Grace: s.r.opts.GPUCheckGrace}, s.emit)
}

// findStranded adds to the recovery target the groups a stopped run left
// Pending or incomplete: for a domain it held cordoned, or one it upgraded
// but did not mark recovered (it may have stopped in its recovery). Only
// then is the whole cluster read.
func (s *domainRun) findStranded(ctx context.Context) error {
	if !s.resumed && !(s.upgraded && s.r.recovering[s.out.Domain]) {
		return nil
	}
	all, err := s.r.v.snapshot(ctx)
	if err != nil {
		return err
	}
	s.target.addStranded(topology.FindGroups(all.Pods, groupersFor(s.r.d.s, all)...), topology.NewPDBIndex(all.PDBs), s.r.layout, all.Nodes)
	return nil
}

// uncordon makes schedulable what udrain cordoned, and marks upgraded
// (and untaints) the nodes it leaves alone: one patch a node.
func (s *domainRun) uncordon(ctx context.Context) error {
	// The uncordon patches are made from the view's nodes (their taints
	// with the resourceVersion): let it show the mark first, or the
	// marked node's patch is refused as a conflict and made twice.
	if s.marked != "" {
		at := s.markedAt.UTC().Format(time.RFC3339Nano)
		if s.r.v.WaitFor(ctx, 10*time.Second, func() bool {
			n, ok := s.r.v.Node(s.marked)
			return !ok || n.Annotations[udrain.UpgradedAtAnnotation] == at
		}) {
			s.r.expect.addUpgraded(s.out.Domain)
		}
	}
	s.r.expect.setCordoned(s.out.Domain, nil)
	var ours, others []string
	for _, n := range s.dom.Nodes {
		node, ok := s.r.v.Node(n)
		if !ok {
			continue
		}
		if _, mine := node.Annotations[udrain.CordonedByAnnotation]; mine {
			ours = append(ours, n)
			continue
		}
		if node.Spec.Unschedulable {
			s.emit(Event{Type: EventLeftCordoned, Node: n, Message: "cordoned before udrain came; left cordoned"})
		}
		if node.Annotations[udrain.UpgradedByAnnotation] != s.r.id || hasPendingTaint(node) {
			others = append(others, n)
		}
	}
	at := s.r.d.s.Clock.Now()
	if err := forEach(ctx, s.r.d.s.Concurrency, others, func(ctx context.Context, _ int, n string) error {
		node, _ := s.r.v.Node(n)
		_, err := s.r.d.patchTaints(ctx, s.emit, "mark upgraded", n, node, upgradedFields(s.r.id, at), withoutPendingTaint)
		return err
	}); err != nil {
		return err
	}
	uncordoned, err := s.r.d.uncordonNodes(ctx, s.emit, s.r.v.Node, ours, s.r.id, at)
	s.r.notePatched(false, uncordoned...)
	if err != nil {
		return err
	}
	// The node lifecycle controller takes its node.kubernetes.io/
	// unschedulable taint off a moment after the uncordon: until then the
	// scheduler still filters the nodes out. Wait (briefly) for it, so
	// that the groups the next domain evicts find this domain open, and
	// do not wait, Pending, for their own (seen in CI: a group evicted
	// just after the spare domain's uncordon came back to its own domain).
	if !s.r.v.WaitFor(ctx, 10*time.Second, func() bool { return noUnschedulableTaint(s.r.v, uncordoned) }) && ctx.Err() == nil {
		s.logger.V(2).Info("Uncordoned nodes still carry the unschedulable taint; going on", "taint", corev1.TaintNodeUnschedulable)
	}
	s.recovering.Store(true)
	s.r.wake()
	s.emit(Event{Type: EventRecoveryStarted})
	return nil
}

// recover waits until the groups the domain's drain disrupted (and those
// a stopped run stranded) are healthy, wherever they run now, and their
// budgets caught up.
func (s *domainRun) recover(ctx context.Context) error {
	clk := s.r.d.s.Clock
	t0 := clk.Now()
	h, err := s.r.d.waitRecoveredOrStuck(ctx, s.r.v, s.target, s.emit, s.r.opts.RecoveryTimeout, s.r.opts.StuckAfter)
	s.out.Health = h
	s.out.Recovery = udrain.Seconds(clk.Since(t0))
	if s.down != nil {
		s.out.Groups = s.down.result(h)
	}
	if err != nil {
		e := &DomainError{ID: s.r.id, Domain: s.out.Domain, Stage: StageRecovery, Health: h, Err: err}
		if ctx.Err() == nil && !errors.Is(err, &ClusterError{Reason: ReasonStuck}) {
			e.Timeout = s.r.opts.RecoveryTimeout
		}
		return e
	}
	if err := s.markRecovered(ctx); err != nil {
		return s.stop(StageRecovery, err)
	}
	if s.out.State != StateSkipped {
		s.out.State = StateDone
	}
	s.r.expect.addUpgraded(s.out.Domain)
	s.r.publish(s.idx, s.out)
	s.emit(Event{Type: EventDomainDone, Status: s.r.status(ctx, true), Message: fmt.Sprintf("done in %s", clk.Since(s.start).Round(time.Millisecond))})
	return nil
}

// markRecovered records on one node of the domain (the one marked
// upgraded first, else the first of the domain) that its recovery ended,
// unless one carries the mark already.
func (s *domainRun) markRecovered(ctx context.Context) error {
	var first string
	for _, n := range s.dom.Nodes {
		node, ok := s.r.v.Node(n)
		if !ok {
			continue
		}
		if node.Annotations[udrain.RecoveredByAnnotation] == s.r.id {
			return nil
		}
		if first == "" {
			first = n
		}
	}
	if s.marked != "" {
		first = s.marked
	}
	if first == "" {
		return nil // every node is gone
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{udrain.RecoveredByAnnotation: s.r.id}}})
	_, err := s.r.d.patchNode(ctx, s.emit, "mark recovered", first, patch, metav1.PatchOptions{})
	return err
}

// noUnschedulableTaint says whether the view shows the nodes (just
// uncordoned) uncordoned and without the node lifecycle controller's
// unschedulable taint.
func noUnschedulableTaint(v *view, names []string) bool {
	for _, name := range names {
		n, ok := v.Node(name)
		if !ok {
			continue
		}
		if n.Spec.Unschedulable {
			return false
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeUnschedulable {
				return false
			}
		}
	}
	return true
}
