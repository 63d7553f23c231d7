package eviction

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain/topology"
)

// rollout is one run of Drainer.Rollout, as a state machine: start (look
// at the cluster, check, order, lock, taint), then a domainRun per domain,
// then finish. Each stage is a method; what one stage learns for the next
// is a field.
type rollout struct {
	d      *Drainer
	sink   *callSink      // RolloutOptions.OnEvent
	opts   RolloutOptions // settled
	id     string
	logger klog.Logger
	res    *RolloutResult

	v      *view
	layout *topology.Layout
	// nodes are the nodes of the first look; only they are kept, not its
	// pods (materialized from a slim cache).
	nodes   []corev1.Node
	domains []string
	// holding: a domain of the rollout is cordoned by it, the one a
	// stopped run was in.
	holding bool
	// lastUpgraded are the domains a stopped run upgraded last, when it
	// held none cordoned: their groups may still have been recovering.
	lastUpgraded map[string]bool
	// tainted are the nodes that carry the rollout's pending-upgrade
	// taint (put on by this run or an earlier one), until uncordoned.
	tainted map[string]bool
	// firstPlans are the plans of the first look, by domain, for the
	// order and the destinations (made once; nil for upgraded domains).
	firstPlans map[string]*Plan
	// planning: a PlanRollout, which looks at everything before it
	// reports the contract's errors.
	planning bool
	// lock is what the rollout knows of its Lease, for its status (nil
	// without a lock); running is false once it returns.
	lock *RolloutLockStatus
	// expect is what the rollout wrote and saw, which its history guard
	// checks stays so.
	expect expected
	// historyLost: the rollout stopped because its history changed.
	historyLost bool
}

// firstPlan returns the plan of the domain from the first look, made once.
func (r *rollout) firstPlan(snap *Snapshot, name string) (*Plan, error) {
	if p, ok := r.firstPlans[name]; ok {
		return p, nil
	}
	p, err := newPlan(name, snap, r.d.s)
	if err != nil {
		return nil, err
	}
	if r.firstPlans == nil {
		r.firstPlans = map[string]*Plan{}
	}
	r.firstPlans[name] = p
	return p, nil
}

// status is the rollout's status as its view shows it now, as
// Drainer.RolloutStatus would read it (in the rollout's order, the Lease
// as the rollout holds it), or nil if it cannot be read (a status is
// information, not a reason to stop). A dry run has none: it changes
// nothing a status could show.
func (r *rollout) status(ctx context.Context, running bool) *RolloutStatus {
	if r.dryRun() || r.v == nil {
		return nil
	}
	st := &RolloutStatus{ID: r.id, Time: r.d.s.Clock.Now(), Running: running}
	if r.lock != nil {
		lock := *r.lock
		lock.Held = running
		st.Lock = &lock
	}
	ro := r.opts
	ro.Domains, ro.Order = r.domains, OrderGiven
	// Read also after a cancel: the view is still there; let it show the
	// rollout's own patches of the domains it finished first.
	ctx = context.WithoutCancel(ctx)
	// Not after a change of history: the marks may be gone for good.
	if !r.historyLost {
		r.v.waitFor(ctx, 5*time.Second, r.finishedShown)
	}
	finished := map[string]bool{}
	for _, out := range r.res.Domains {
		finished[out.Domain] = out.Status == DomainDone || out.Status == DomainSkipped
	}
	if err := r.d.statusFrom(ctx, r.v, ro, st, r.lock != nil, finished); err != nil {
		r.logger.V(2).Info("Could not read the rollout's status", "err", err)
		return nil
	}
	return st
}

// noUnschedulableTaint says whether the view shows the nodes (just
// uncordoned) uncordoned and without the node lifecycle controller's
// unschedulable taint.
func noUnschedulableTaint(v *view, names []string) bool {
	for _, name := range names {
		n, ok := v.node(name)
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

// finishedShown says whether the view shows every node of the domains the
// rollout finished (done, not skipped) marked upgraded by it and released
// from its cordon.
func (r *rollout) finishedShown() bool {
	for _, out := range r.res.Domains {
		if out.Status != DomainDone {
			continue
		}
		for _, name := range mustDomain(r.layout, out.Domain).Nodes {
			n, ok := r.v.node(name)
			if ok && (n.Annotations[UpgradedByAnnotation] != r.id || n.Annotations[CordonedByAnnotation] == r.id) {
				return false
			}
		}
	}
	return true
}

// emit sends a rollout event to the caller's callback.
func (r *rollout) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = r.d.s.Clock.Now()
	}
	e.ID, e.DryRun = r.id, r.d.s.dryRunName()
	r.d.events.emit(r.sink, e)
}

func (r *rollout) dryRun() bool { return r.d.s.dryRun != cmdutil.DryRunNone }

// run runs the rollout's stages in order.
func (r *rollout) run(ctx context.Context) (err error) {
	v, err := r.d.startView(ctx)
	if err != nil {
		return err
	}
	defer v.stop()
	r.v = v
	if err := r.check(ctx); err != nil {
		return err
	}
	if !r.opts.Lock.Disabled {
		held, lerr := r.d.acquireLock(ctx, r.id, r.opts.Lock)
		if lerr != nil {
			return lerr
		}
		r.lock = &RolloutLockStatus{Namespace: r.opts.Lock.Namespace, Name: held.name, Holder: r.opts.Lock.Identity, Held: true, Duration: r.opts.Lock.Duration}
		var release func(error) error
		ctx, release = r.hold(ctx, held)
		defer func() { err = release(err) }()
	}
	// From here on the rollout changes the cluster: stop it if the
	// cluster's history changes under it (an etcd restore).
	ctx, unguard := r.guardHistory(ctx)
	defer unguard()
	defer r.untaint(ctx)
	if err := r.taint(ctx); err != nil {
		return err
	}
	r.logger.Info("Rollout started", "domains", len(r.domains))
	r.emit(Event{Type: EventRolloutStarted, Domains: r.domains, Status: r.status(ctx, true), Message: fmt.Sprintf("rollout %s over %d domain(s)", r.id, len(r.domains))})
	for i := range r.res.Domains {
		out := &r.res.Domains[i]
		if err := r.domain(out).run(ctx); err != nil {
			err = causeOf(ctx, err)
			r.historyLost = errors.As(err, new(*HistoryChangedError))
			out.Status = DomainFailed
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				out.Status = DomainInterrupted
			}
			r.logger.Info("Rollout stopped", "domain", out.Domain, "err", err)
			r.res.Status = r.status(ctx, false)
			r.emit(Event{Type: EventRolloutStopped, Domain: out.Domain, Err: err, Error: err.Error(), Status: r.res.Status, Message: string(out.Status)})
			return err
		}
	}
	r.res.Completed = true
	r.res.Status = r.status(ctx, false)
	s := r.res.Summary()
	r.logger.Info("Rollout done", "domainsDone", s.DomainsDone, "domainsSkipped", s.DomainsSkipped, "groupsDisrupted", s.GroupsDisrupted)
	r.emit(Event{Type: EventRolloutDone, Status: r.res.Status, Message: fmt.Sprintf("%d domain(s) done, %d skipped, %d group(s) disrupted",
		s.DomainsDone, s.DomainsSkipped, s.GroupsDisrupted)})
	return nil
}

// check looks at the cluster before anything is touched: the domains
// exist, no other rollout holds them, the contract holds; and it puts the
// domains in their order.
func (r *rollout) check(ctx context.Context) error {
	snap, err := r.v.snapshot(ctx)
	if err != nil {
		return err
	}
	layout, err := topology.BuildLayout(snap.Nodes, r.d.s.layoutOptions())
	if err != nil {
		return err
	}
	r.layout, r.nodes = layout, snap.Nodes
	domains := r.opts.Domains
	for _, name := range domains {
		if _, err := layout.Domain(name); err != nil {
			return err
		}
	}
	if len(domains) == 0 {
		domains = layout.Names()
	}
	if r.opts.Order == OrderSpareFirst {
		if domains, err = r.order(snap, domains); err != nil {
			return err
		}
	}
	r.domains = domains
	for _, name := range domains {
		dom := mustDomain(layout, name)
		if err := cordonedByOther(snap.Nodes, dom, r.id); err != nil {
			return &DomainError{ID: r.id, Domain: name, Stage: StagePlan, Err: err}
		}
		r.holding = r.holding || cordonedBy(snap.Nodes, dom, r.id)
	}
	if !r.holding {
		r.lastUpgraded = lastUpgraded(snap.Nodes, layout, domains, r.id)
	}
	for _, name := range domains {
		r.res.Domains = append(r.res.Domains, DomainOutcome{Domain: name, Status: DomainPending})
	}
	// Audit what this rollout will drain: findings about other domains
	// (other pools, other teams' workloads) do not stop it.
	report := topology.Audit(topology.AuditInput{Layout: layout, Groups: topology.FindGroups(snap.Pods, groupersFor(r.d.s, snap)...),
		PDBs: snap.PDBs, Pods: snap.Pods, Only: domains})
	r.res.Findings = report.Findings
	if err := report.Err(); err != nil && !r.d.s.AllowViolations && !r.planning {
		return err
	}
	err = r.planDestinations(snap)
	r.firstPlans = nil // not held for the rollout
	if r.planning && errors.As(err, new(*topology.ContractError)) {
		err = nil // reported with the contract's errors
	}
	if err != nil {
		return err
	}
	if err := (topology.Report{Findings: r.res.Findings}).Err(); r.planning && err != nil && !r.d.s.AllowViolations {
		return err
	}
	if len(report.Findings) > 0 {
		r.logger.Info("Contract findings", "findings", len(report.Findings), "errors", len(report.Errors()))
		r.emit(Event{Type: EventContractFindings, Message: fmt.Sprintf("%d contract finding(s), %d error(s)", len(report.Findings), len(report.Errors()))})
	}
	return nil
}

// order puts the domains in OrderSpareFirst: those this rollout upgraded
// already (in the order it upgraded them), then those whose plan evicts
// nothing, then the rest, each in natural order. Evicted groups then find
// upgraded room (a spare domain is upgraded first) instead of landing on a
// domain still to drain.
func (r *rollout) order(snap *Snapshot, domains []string) ([]string, error) {
	type ranked struct {
		name string
		rank int
		at   time.Time
	}
	var out []ranked
	for _, name := range domains {
		dom := mustDomain(r.layout, name)
		switch {
		case upgradedBy(snap.Nodes, dom, r.id):
			out = append(out, ranked{name, 0, upgradedAt(snap.Nodes, dom)})
		default:
			plan, err := r.firstPlan(snap, name)
			if err != nil {
				return nil, err
			}
			rank := 2
			if len(plan.Phase1)+len(plan.Phase2) == 0 {
				rank = 1
			}
			out = append(out, ranked{name: name, rank: rank})
		}
	}
	slices.SortStableFunc(out, func(a, b ranked) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return a.at.Compare(b.at)
	})
	names := make([]string, len(out))
	for i, o := range out {
		names[i] = o.name
	}
	return names, nil
}

// hold keeps the rollout's Lease while it runs: the returned context is
// cancelled when the Lease is lost, and release gives the Lease up and
// turns a cancel caused by its loss into a *LockLostError.
func (r *rollout) hold(ctx context.Context, held *heldLock) (context.Context, func(error) error) {
	r.logger.V(2).Info("Holding the rollout's Lease", "lease", r.opts.Lock.Namespace+"/"+held.name, "identity", r.opts.Lock.Identity)
	ctx, cancel := context.WithCancelCause(ctx)
	go held.keep(ctx, cancel)
	return ctx, func(err error) error {
		// A lost Lease stopped the rollout: say so, not "canceled".
		var lost *LockLostError
		var de *DomainError
		if errors.As(context.Cause(ctx), &lost) && errors.As(err, &de) && errors.Is(de.Err, context.Canceled) {
			de.Err = lost
		}
		cancel(nil)
		rctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		held.release(rctx)
		return err
	}
}

// taint puts the pending-upgrade taint on the nodes of the domains not
// upgraded yet (one patch per node that lacks it; a resumed rollout finds
// most in place). Dry runs and SteerOff put none.
func (r *rollout) taint(ctx context.Context) error {
	r.tainted = map[string]bool{}
	for _, n := range r.nodes {
		if hasPendingTaint(&n) {
			r.tainted[n.Name] = true
		}
	}
	effect := r.opts.Steering.effect()
	if r.dryRun() || effect == "" {
		return nil
	}
	var names []string
	for _, name := range r.domains {
		dom := mustDomain(r.layout, name)
		if !upgradedBy(r.nodes, dom, r.id) {
			names = append(names, dom.Nodes...)
		}
	}
	done, err := r.d.setPendingTaints(ctx, r.emit, r.v.node, names, r.id, effect)
	for _, n := range names {
		r.tainted[n] = true
	}
	r.logger.V(2).Info("Tainted the nodes of the domains still to upgrade", "nodes", len(done), "effect", effect)
	if err != nil {
		return &DomainError{ID: r.id, Domain: r.domains[0], Stage: StagePlan, Err: fmt.Errorf("steering evicted pods to upgraded nodes: %w", err)}
	}
	return nil
}

// untaint takes the pending-upgrade taint off the nodes that still carry
// it when the rollout stops early (on completion every node lost it with
// its uncordon). It runs even when ctx is cancelled.
func (r *rollout) untaint(ctx context.Context) {
	if r.res.Completed || r.dryRun() {
		return
	}
	var names []string
	for _, name := range r.domains {
		for _, n := range mustDomain(r.layout, name).Nodes {
			if node, ok := r.v.node(n); ok && hasPendingTaint(node) && node.Spec.Taints[slices.IndexFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == PendingUpgradeTaint })].Value == r.id {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	done, err := r.d.clearPendingTaints(ctx, r.emit, r.v.node, names)
	r.logger.Info("Took the pending-upgrade taint off the nodes still to upgrade", "nodes", len(done), "err", err)
}

// domainRun is one domain's pass through the stages of a rollout: prepare
// (plan, or find it upgraded by an earlier run), drain, upgrade, mark,
// GPU check, uncordon, recover.
type domainRun struct {
	r      *rollout
	out    *DomainOutcome
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

func (r *rollout) domain(out *DomainOutcome) *domainRun {
	s := &domainRun{r: r, out: out, logger: r.logger.WithValues("domain", out.Domain)}
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
	defer func() { s.out.Duration = clk.Since(s.start) }()
	s.emit(Event{Type: EventDomainStarted})
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
			s.out.Status = DomainDryRun
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
		s.out.Status = DomainSkipped
		s.logger.Info("Domain already upgraded by this rollout; skipping its drain")
		s.emit(Event{Type: EventDomainSkipped, Message: fmt.Sprintf("already upgraded by rollout %s", s.r.id)})
		return nil
	}
	s.out.Plan = plan
	s.before = gpusBefore(snap.Nodes, s.dom)
	if !s.r.dryRun() && len(plan.Groups) > 0 {
		pgs, _ := s.r.v.listPodGroups(ctx)
		s.down = newDowntimes(s.r.d, s.r.v, layout, plan, s.target, groupersFor(s.r.d.s, &Snapshot{PodGroups: pgs}))
	}
	s.emit(Event{Type: EventPlanned, Progress: Progress{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)},
		Message: plan.withFitWarning(ctx, fmt.Sprintf("%d node(s); phase 1: %d pod(s), phase 2: %d pod(s)", len(plan.Nodes), len(plan.Phase1), len(plan.Phase2)))})
	return nil
}

// drainDomain cordons the domain and evicts its plan's pods, phase 1
// first; its error is a *DomainError of the drain's stage.
func (s *domainRun) drainDomain(ctx context.Context) error {
	var observe func(Event)
	if s.down != nil {
		observe = s.down.observe
	}
	drained, err := s.r.d.execute(ctx, s.r.v, s.plan, s.r.id, observe)
	s.out.Drain, s.drain = drained, drained
	if err == nil && s.down != nil {
		s.down.drainDone()
	}
	if err == nil && !s.r.dryRun() {
		// Until its uncordon, the domain stays cordoned by the rollout.
		var held []string
		for _, n := range s.dom.Nodes {
			if node, ok := s.r.v.node(n); ok && node.Annotations[CordonedByAnnotation] == s.r.id {
				held = append(held, n)
			}
		}
		s.r.expect.setCordoned(held)
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
	s.out.Upgrade = clk.Since(t0)
	s.logger.Info("Upgrade step done", "took", s.out.Upgrade.Round(time.Millisecond))
	s.emit(Event{Type: EventUpgradeDone, Message: fmt.Sprintf("took %s", s.out.Upgrade.Round(time.Millisecond))})
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
	return s.r.d.checkGPUs(ctx, s.r.v, s.dom, s.before, mark, s.r.opts.GPUCheck, s.emit)
}

// findStranded adds to the recovery target the groups a stopped run left
// Pending or incomplete: for the domain it held cordoned, or, when it held
// none, the domain it upgraded last (it may have stopped in its
// recovery). Only then is the whole cluster read.
func (s *domainRun) findStranded(ctx context.Context) error {
	if !s.resumed && !(s.upgraded && s.r.lastUpgraded[s.out.Domain]) {
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
		if s.r.v.waitFor(ctx, 10*time.Second, func() bool {
			n, ok := s.r.v.node(s.marked)
			return !ok || n.Annotations[UpgradedAtAnnotation] == at
		}) {
			s.r.expect.addUpgraded(s.out.Domain)
		}
	}
	s.r.expect.setCordoned(nil)
	var ours, others []string
	for _, n := range s.dom.Nodes {
		node, ok := s.r.v.node(n)
		if !ok {
			continue
		}
		if _, mine := node.Annotations[CordonedByAnnotation]; mine {
			ours = append(ours, n)
			continue
		}
		if node.Spec.Unschedulable {
			s.emit(Event{Type: EventLeftCordoned, Node: n, Message: "cordoned before udrain came; left cordoned"})
		}
		if node.Annotations[UpgradedByAnnotation] != s.r.id || hasPendingTaint(node) {
			others = append(others, n)
		}
	}
	at := s.r.d.s.Clock.Now()
	if err := forEachNode(ctx, s.r.d.s.Concurrency, others, func(ctx context.Context, _ int, n string) error {
		node, _ := s.r.v.node(n)
		_, err := s.r.d.patchTaints(ctx, s.emit, "mark upgraded", n, node, upgradedFields(s.r.id, at), withoutPendingTaint)
		return err
	}); err != nil {
		return err
	}
	uncordoned, err := s.r.d.uncordonNodes(ctx, s.emit, s.r.v.node, ours, s.r.id, at)
	if err != nil {
		return err
	}
	// The node lifecycle controller takes its node.kubernetes.io/
	// unschedulable taint off a moment after the uncordon: until then the
	// scheduler still filters the nodes out. Wait (briefly) for it, so
	// that the groups the next domain evicts find this domain open, and
	// do not wait, Pending, for their own (seen in CI: a group evicted
	// just after the spare domain's uncordon came back to its own domain).
	if !s.r.v.waitFor(ctx, 10*time.Second, func() bool { return noUnschedulableTaint(s.r.v, uncordoned) }) && ctx.Err() == nil {
		s.logger.V(2).Info("Uncordoned nodes still carry the unschedulable taint; going on", "taint", corev1.TaintNodeUnschedulable)
	}
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
	s.out.Recovery = clk.Since(t0)
	if s.down != nil {
		s.out.Groups = s.down.result(h)
	}
	if err != nil {
		e := &DomainError{ID: s.r.id, Domain: s.out.Domain, Stage: StageRecovery, Health: h, Err: err}
		var stuck *StuckError
		if ctx.Err() == nil && !errors.As(err, &stuck) {
			e.Timeout = s.r.opts.RecoveryTimeout
		}
		return e
	}
	if s.out.Status != DomainSkipped {
		s.out.Status = DomainDone
	}
	s.r.expect.addUpgraded(s.out.Domain)
	s.emit(Event{Type: EventDomainDone, Status: s.r.status(ctx, true), Message: fmt.Sprintf("done in %s", clk.Since(s.start).Round(time.Millisecond))})
	return nil
}
