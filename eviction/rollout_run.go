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

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/podcache"
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
	// recovering are the domains a stopped run upgraded but did not mark
	// recovered (udrain.RecoveredByAnnotation): their groups may still have
	// been recovering.
	recovering map[string]bool
	// mu guards res.Domains, written as domains end while others run.
	mu sync.Mutex
	// looking is held while the rollout reads the whole cluster (a
	// status, a decision of the parallelism): one such look at a time,
	// so that domains in flight do not each hold a snapshot of every pod
	// at once.
	looking sync.Mutex
	// changed wakes the loop of domains: one in flight began its
	// recovery.
	changed chan struct{}
	// held is the last hold the rollout reported (EventDomainHeld).
	held string
	// requests keeps the pods' requests between the parallelism's
	// decisions.
	requests *requestCache
	// watch is what the budgets that held domains back at the last
	// decision counted (nil: none did), and watchMemo the pods of their
	// groups between checks (stillHeld).
	watch     *budgetWatch
	watchMemo *podcache.Memo
	// tainted are the nodes that carry the rollout's pending-upgrade
	// taint (put on by this run or an earlier one), until uncordoned.
	tainted map[string]bool
	// effect is the taint's effect on the pending domains now; roomy
	// says, by domain, whether the first look's simulation found
	// upgraded room for every pod the domain evicts as it starts, and
	// firstWave are the domains it starts first (SteerAuto).
	effect    corev1.TaintEffect
	roomy     map[string]bool
	firstWave []string
	// firstPlans are the plans of the first look, by domain, for the
	// order and the destinations (made once; nil for upgraded domains).
	firstPlans map[string]*Plan
	// planning: a PlanRollout, which looks at everything before it
	// reports the contract's errors.
	planning bool
	// lockName is the name of the Lease the rollout holds, for its status
	// ("" without a lock).
	lockName string
	// expect is what the rollout wrote and saw, which its history guard
	// checks stays so.
	expect expected
	// historyLost: the rollout stopped because its history changed.
	historyLost bool
	// patched are the nodes this run cordoned (true) or released from
	// its cordon (false), guarded by mu: its status waits for its view
	// to show them so, also of a domain it stopped part-way.
	patched map[string]bool
}

// notePatched records that this run cordoned (true) or released (false)
// the nodes.
func (r *rollout) notePatched(cordoned bool, nodes ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.patched == nil {
		r.patched = map[string]bool{}
	}
	for _, n := range nodes {
		r.patched[n] = cordoned
	}
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
	if r.lockName != "" {
		st.LockNamespace, st.LockName, st.LockHolder = r.opts.lock.Namespace, r.lockName, r.opts.lock.Identity
		st.LockDuration = udrain.Seconds(r.opts.lock.Duration)
	}
	ro := r.opts
	ro.Domains, ro.Order = r.domains, OrderGiven
	// Read also after a cancel: the view is still there; let it show the
	// rollout's own patches of the domains it finished first.
	ctx = context.WithoutCancel(ctx)
	// Not after a change of history: the marks may be gone for good.
	if !r.historyLost {
		r.v.WaitFor(ctx, 5*time.Second, r.finishedShown)
	}
	finished := map[string]bool{}
	r.mu.Lock()
	for _, out := range r.res.Domains {
		finished[out.Domain] = out.State == StateDone || out.State == StateSkipped
	}
	r.mu.Unlock()
	r.looking.Lock()
	err := r.d.statusFrom(ctx, r.v, ro, st, r.lockName != "", finished)
	r.looking.Unlock()
	if err != nil {
		r.logger.V(2).Info("Could not read the rollout's status", "err", err)
		return nil
	}
	return st
}

// finishedShown says whether the view shows every node of the domains the
// rollout finished (done, not skipped) marked upgraded by it and released
// from its cordon, and every node this run cordoned or released as it
// left it (a domain stopped part-way: cordoned, or upgraded and
// released).
func (r *rollout) finishedShown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, cordoned := range r.patched {
		n, ok := r.v.Node(name)
		switch {
		case !ok:
		case cordoned && n.Annotations[udrain.CordonedByAnnotation] != r.id:
			return false
		case !cordoned && (n.Annotations[udrain.UpgradedByAnnotation] != r.id || n.Annotations[udrain.CordonedByAnnotation] == r.id):
			return false
		}
	}
	for _, out := range r.res.Domains {
		if out.State != StateDone {
			continue
		}
		for _, name := range mustDomain(r.layout, out.Domain).Nodes {
			n, ok := r.v.Node(name)
			if ok && (n.Annotations[udrain.UpgradedByAnnotation] != r.id || n.Annotations[udrain.CordonedByAnnotation] == r.id) {
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
	// The view outlives a cancel of ctx until run returns: a stopped
	// rollout's status reads its last patches (the cordons of a domain
	// it stopped part-way) from it, and its informers, stopped with ctx,
	// would miss those still on their way. A cancel while it starts
	// stops it.
	vctx, stopView := context.WithCancel(context.WithoutCancel(ctx))
	defer stopView()
	unlink := context.AfterFunc(ctx, stopView)
	v, err := r.d.startView(vctx)
	unlink()
	if err == nil && ctx.Err() != nil {
		v.Stop()
		err = ctx.Err()
	}
	if err != nil {
		return err
	}
	defer v.Stop()
	r.v = v
	if err := r.check(ctx); err != nil {
		return err
	}
	if !r.opts.lock.Disabled {
		held, lerr := r.d.acquireLock(ctx, r.id, r.opts.lock)
		if lerr != nil {
			return lerr
		}
		r.lockName = held.name
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
	if failed, err := r.runDomains(ctx); err != nil {
		r.historyLost = errors.As(err, new(*udrain.HistoryChangedError))
		r.logger.Info("Rollout stopped", "domain", failed.Domain, "err", err)
		r.res.Status = r.status(ctx, false)
		r.emit(Event{Type: EventRolloutStopped, Domain: failed.Domain, Err: err, Error: err.Error(), Status: r.res.Status, Message: string(failed.State)})
		return err
	}
	r.res.Completed = true
	r.res.Status = r.status(ctx, false)
	done, skipped, groups := r.res.tally()
	r.logger.Info("Rollout done", "domainsDone", done, "domainsSkipped", skipped, "groupsDisrupted", groups)
	r.emit(Event{Type: EventRolloutDone, Status: r.res.Status, Message: fmt.Sprintf("%d domain(s) done, %d skipped, %d group(s) disrupted",
		done, skipped, groups)})
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
	// The audit and the plans of every domain below read the same layout
	// and groups.
	snap.layout, snap.groups = layout, topology.FindGroups(snap.Pods, groupersFor(r.d.s, snap)...)
	domains, err := layout.Select(r.opts.Domains)
	if err != nil {
		return err
	}
	if r.opts.Order == OrderSpareFirst {
		if domains, err = r.order(snap, domains); err != nil {
			return err
		}
	}
	r.domains = domains
	r.recovering = map[string]bool{}
	for _, name := range domains {
		dom := mustDomain(layout, name)
		if err := cordonedByOther(snap.Nodes, dom, r.id); err != nil {
			return &DomainError{ID: r.id, Domain: name, Stage: StagePlan, Err: err}
		}
		if upgradedBy(snap.Nodes, dom, r.id) && !recoveredBy(snap.Nodes, dom, r.id) {
			r.recovering[name] = true
		}
	}
	for _, name := range domains {
		r.res.Domains = append(r.res.Domains, RolloutDomain{Domain: name, State: StatePending})
	}
	// Audit what this rollout will drain: findings about other domains
	// (other pools, other teams' workloads) do not stop it.
	report := topology.Audit(topology.AuditInput{Layout: layout, Groups: snap.groups,
		PDBs: snap.PDBs, Pods: snap.Pods, Only: domains})
	r.res.Findings = report.Findings
	if err := report.Err(); err != nil && !r.d.s.AllowViolations && !r.planning {
		return err
	}
	err = r.planDestinations(snap)
	if r.planning && errors.As(err, new(*topology.ContractError)) {
		err = nil // reported with the contract's errors
	}
	if r.planning && err == nil {
		err = r.planDomains(snap)
	}
	r.firstPlans = nil // not held for the rollout
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

// planDomains gives each domain of a rollout plan what the plan's look
// found: its drain's plan (the first look's, which the destinations were
// simulated from; none for a domain the rollout upgraded already) and
// the health of its groups, so that a caller lists, plans and rolls from
// one read.
func (r *rollout) planDomains(snap *Snapshot) error {
	targets, _, err := r.d.healthTargets(snap, r.domains)
	if err != nil {
		return err
	}
	groupers := groupersFor(r.d.s, snap)
	for i := range r.res.Domains {
		dom := &r.res.Domains[i]
		dom.Plan = r.firstPlans[dom.Domain]
		for _, t := range targets {
			if t.domain == dom.Domain {
				dom.Health = r.v.evaluate(t, groupers, snap.Now)
			}
		}
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
// turns a cancel caused by its loss into a *RetryError (ReasonLockLost).
func (r *rollout) hold(ctx context.Context, held *heldLock) (context.Context, func(error) error) {
	r.logger.V(2).Info("Holding the rollout's Lease", "lease", r.opts.lock.Namespace+"/"+held.name, "identity", r.opts.lock.Identity)
	ctx, cancel := context.WithCancelCause(ctx)
	go held.keep(ctx, cancel)
	return ctx, func(err error) error {
		// A lost Lease stopped the rollout: say so, not "canceled".
		err = causeOf[*RetryError](ctx, err)
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
	roomy := true
	for _, name := range r.firstWave {
		roomy = roomy && r.roomy[name]
	}
	effect := r.opts.Steering.effect(roomy)
	if r.dryRun() || effect == "" {
		return nil
	}
	r.effect = effect
	var names []string
	for _, name := range r.domains {
		// Not a domain a stopped run left cordoned: its cordon took the
		// taint off (see execution.cordon).
		dom := mustDomain(r.layout, name)
		if !upgradedBy(r.nodes, dom, r.id) && !cordonedBy(r.nodes, dom, r.id) {
			names = append(names, dom.Nodes...)
		}
	}
	done, err := r.d.setPendingTaints(ctx, r.emit, r.v.Node, names, r.id, effect)
	for _, n := range names {
		r.tainted[n] = true
	}
	// A domain's cordon takes the taint off as the view shows its nodes:
	// let it show the taint first, or it stays on the first domains.
	if err == nil && !r.v.WaitFor(ctx, 10*time.Second, func() bool {
		for _, n := range done {
			if node, ok := r.v.Node(n); ok && !hasPendingTaint(node) {
				return false
			}
		}
		return true
	}) && ctx.Err() == nil {
		r.logger.V(2).Info("The view does not show the pending-upgrade taint on every node yet; going on")
	}
	r.logger.V(2).Info("Tainted the nodes of the domains still to upgrade", "nodes", len(done), "effect", effect, "firstDomains", r.firstWave)
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
			if node, ok := r.v.Node(n); ok && hasPendingTaint(node) && node.Spec.Taints[slices.IndexFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == udrain.PendingUpgradeTaint })].Value == r.id {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	done, err := r.d.clearPendingTaints(ctx, r.emit, r.v.Node, names)
	r.logger.Info("Took the pending-upgrade taint off the nodes still to upgrade", "nodes", len(done), "err", err)
}
