package eviction

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain/topology"
)

// UpgradedByAnnotation marks the nodes of a domain whose upgrade step has
// succeeded, with the rollout's ID as value. A rollout run again with the
// same ID skips those domains: they are never drained twice.
const UpgradedByAnnotation = "udrain.dev/upgraded-by"

// DefaultRolloutID is the ID of a rollout whose options name none.
const DefaultRolloutID = "udrain"

// UpgradeFunc upgrades the nodes of a drained domain (reboot, replace,
// kubelet upgrade). It runs while the domain is cordoned and empty. An
// error stops the rollout with a *DomainError (StageUpgrade) that unwraps
// to it; the domain stays cordoned, and the rollout run again with the
// same ID runs the step again.
type UpgradeFunc func(ctx context.Context, domain topology.Domain) error

// RolloutOptions configures a rollout.
type RolloutOptions struct {
	// ID names the rollout. It is recorded on the nodes of each upgraded
	// domain, and a rollout run again with the same ID (after a crash, a
	// cancel, a failure) continues where the first stopped. Use a new ID for
	// a new upgrade. Empty means DefaultRolloutID.
	ID string
	// Domains limits and orders the domains; empty means every domain in
	// natural order.
	Domains []string
	// Upgrade is the upgrade step; nil means none (drain, uncordon,
	// recover: useful to exercise a rollout or to move workloads).
	Upgrade UpgradeFunc
	// RecoveryTimeout bounds the wait for a domain's groups to be healthy
	// again; zero means no limit.
	RecoveryTimeout time.Duration
	// GPUCheck checks, after each upgrade step, that the domain's GPU
	// nodes advertise their GPUs again; on by default.
	GPUCheck GPUCheck
	// Lock makes the rollout hold a Lease named after its ID while it
	// runs (in DefaultLockNamespace unless set), so that the same rollout
	// never runs twice at once; on by default, except for dry runs.
	Lock RolloutLock
}

// DomainStatus is where a rollout left a domain.
type DomainStatus string

// The statuses of a domain in a rollout.
const (
	// DomainDone: drained, upgraded, uncordoned and recovered.
	DomainDone DomainStatus = "Done"
	// DomainSkipped: an earlier run with the same ID had upgraded it.
	DomainSkipped DomainStatus = "Skipped"
	// DomainDryRun: planned and dry-run; nothing changed.
	DomainDryRun DomainStatus = "DryRun"
	// DomainFailed: the rollout stopped here on an error.
	DomainFailed DomainStatus = "Failed"
	// DomainInterrupted: the rollout was cancelled here.
	DomainInterrupted DomainStatus = "Interrupted"
	// DomainPending: the rollout stopped before reaching it.
	DomainPending DomainStatus = "Pending"
)

// DomainOutcome is what a rollout did in one domain.
type DomainOutcome struct {
	Domain string       `json:"domain"`
	Status DomainStatus `json:"status"`
	// Plan is the domain's plan (nil when skipped or not reached).
	Plan *Plan `json:"plan,omitempty"`
	// Drain is the drain's result (nil when skipped or not reached).
	Drain *Result `json:"drain,omitempty"`
	// Recovery is the health of the domain's groups when recovery ended.
	Health   *DomainHealth `json:"health,omitempty"`
	Upgrade  time.Duration `json:"-"`
	Recovery time.Duration `json:"-"`
	Duration time.Duration `json:"-"`
}

// RolloutResult is what a rollout did: an outcome for every domain it was
// asked for, in order.
type RolloutResult struct {
	ID string `json:"id"`
	// DryRun is "client" or "server" for dry runs, empty otherwise.
	DryRun  string          `json:"dryRun,omitempty"`
	Domains []DomainOutcome `json:"domains"`
	// Findings are the contract warnings (and allowed errors) found before
	// the rollout started.
	Findings []topology.Finding `json:"findings,omitempty"`
	// Completed is true when every domain is done, skipped or dry-run.
	Completed bool          `json:"completed"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"-"`
}

// Summary sums up the rollout.
func (r *RolloutResult) Summary() Summary {
	s := Summary{DomainsTotal: len(r.Domains), Duration: r.Duration}
	seen := map[topology.GroupID]bool{}
	for _, d := range r.Domains {
		switch d.Status {
		case DomainSkipped:
			s.DomainsSkipped++
		case DomainDone, DomainDryRun:
			s.DomainsDone++
		}
		if d.Drain != nil {
			s.add(d.Drain, seen)
		}
	}
	return s
}

// Rollout drains, upgrades and recovers every domain in turn: plan, execute,
// upgrade step, mark upgraded (one node, then every node with its uncordon
// patch: two patches per node), uncordon, wait until the domain's groups are
// healthy and their budgets caught up, then the next domain. It stops at the
// first error, a *DomainError naming the domain and the stage. Run again
// with the same ID, it continues from the cluster's state: domains marked
// upgraded are skipped, a half-drained domain is planned again from what is
// left on it, and only pods its new plan names are evicted. The recovery of
// the domain a stopped run was in also waits for the groups that run left
// Pending or incomplete (of workloads placed in the domains, with no member
// in another domain): the cluster does not say which domain a Pending pod
// came from, so a group that is down elsewhere for another reason is waited
// for too, unless every pod of its namespace is gone (its workload was
// deleted). With a dry-run strategy it plans and dry-runs each domain and
// changes nothing.
func (d *Drainer) Rollout(ctx context.Context, opts RolloutOptions) (_ *RolloutResult, err error) {
	id := opts.ID
	if id == "" {
		id = DefaultRolloutID
	}
	if opts.RecoveryTimeout < 0 {
		return nil, configError("RolloutOptions.RecoveryTimeout", "%v is negative; use 0 for no limit", opts.RecoveryTimeout)
	}
	if opts.GPUCheck.Grace < 0 {
		return nil, configError("RolloutOptions.GPUCheck.Grace", "%v is negative; use 0 for the default (%v)", opts.GPUCheck.Grace, DefaultGPUGrace)
	}
	if opts.Upgrade != nil && d.s.Namespace != "" {
		return nil, configError("Options.Namespace", "%q set for a rollout with an upgrade step: the step needs the whole domain drained; drop the namespace scope, or the upgrade step", d.s.Namespace)
	}
	seen := map[string]bool{}
	for _, name := range opts.Domains {
		if name == "" {
			return nil, emptyDomainError()
		}
		if seen[name] {
			return nil, configError("RolloutOptions.Domains", "%q is named twice", name)
		}
		seen[name] = true
	}
	var lock RolloutLock
	if !opts.Lock.Disabled && d.s.dryRun == cmdutil.DryRunNone {
		var err error
		if lock, err = opts.Lock.settle(); err != nil {
			return nil, err
		}
	}
	clk := d.s.Clock
	logger := klog.FromContext(ctx).WithValues("rollout", id)
	emit := func(e Event) {
		if e.Time.IsZero() {
			e.Time = clk.Now()
		}
		e.ID, e.DryRun = id, d.s.dryRunName()
		d.events.emit(e)
	}
	res := &RolloutResult{ID: id, DryRun: d.s.dryRunName(), Started: clk.Now()}
	defer func() { res.Duration = clk.Since(res.Started) }()

	v, err := d.startView(ctx)
	if err != nil {
		return res, err
	}
	defer v.stop()

	// Check everything before touching anything: the domains exist, no
	// other rollout holds them, and the contract holds.
	snap, err := v.snapshot(ctx)
	if err != nil {
		return res, err
	}
	layout, err := topology.BuildLayout(snap.Nodes, d.s.layoutOptions())
	if err != nil {
		return res, err
	}
	domains := opts.Domains
	if len(domains) == 0 {
		domains = layout.Names()
	}
	for _, name := range domains {
		dom, err := layout.Domain(name)
		if err != nil {
			return res, err
		}
		if err := cordonedByOther(snap.Nodes, dom, id); err != nil {
			return res, &DomainError{ID: id, Domain: name, Stage: StagePlan, Err: err}
		}
	}
	for _, name := range domains {
		res.Domains = append(res.Domains, DomainOutcome{Domain: name, Status: DomainPending})
	}
	// Audit what this rollout will drain: findings about other domains
	// (other pools, other teams' workloads) do not stop it.
	report := topology.Audit(topology.AuditInput{Layout: layout, Groups: topology.FindGroups(snap.Pods, groupersFor(d.s, snap)...),
		PDBs: snap.PDBs, Pods: snap.Pods, Only: domains})
	res.Findings = report.Findings
	if err := report.Err(); err != nil && !d.s.AllowViolations {
		return res, err
	}
	if len(report.Findings) > 0 {
		logger.Info("Contract findings", "findings", len(report.Findings), "errors", len(report.Errors()))
		emit(Event{Type: EventContractFindings, Message: fmt.Sprintf("%d contract finding(s), %d error(s)", len(report.Findings), len(report.Errors()))})
	}
	// Only the nodes of this first look are read from here on, so that its
	// pods (materialized from a slim cache) are not held for the rollout.
	nodes := snap.Nodes
	if lock.Namespace != "" {
		held, lerr := d.acquireLock(ctx, id, lock)
		if lerr != nil {
			return res, lerr
		}
		logger.V(2).Info("Holding the rollout's Lease", "lease", lock.Namespace+"/"+held.name, "identity", lock.Identity)
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		go held.keep(ctx, cancel)
		defer func() {
			cancel(nil)
			rctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer stop()
			held.release(rctx)
		}()
		defer func() {
			// A lost Lease stopped the rollout: say so, not "canceled".
			var lost *LockLostError
			var de *DomainError
			if errors.As(context.Cause(ctx), &lost) && errors.As(err, &de) && errors.Is(de.Err, context.Canceled) {
				de.Err = lost
			}
		}()
	}

	logger.Info("Rollout started", "domains", len(domains))
	emit(Event{Type: EventRolloutStarted, Message: fmt.Sprintf("rollout %s over %d domain(s)", id, len(domains))})

	// A domain this rollout still holds cordoned is the one a stopped run
	// was in; without one, the last domain it upgraded may have been
	// recovering.
	holding := false
	for _, name := range domains {
		holding = holding || cordonedBy(nodes, mustDomain(layout, name), id)
	}
	for i := range res.Domains {
		out := &res.Domains[i]
		last := !holding && (i == len(domains)-1 || !upgradedBy(nodes, mustDomain(layout, domains[i+1]), id))
		err := d.rolloutDomain(ctx, v, emit, out, id, opts, last)
		if err != nil {
			out.Status = DomainFailed
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				out.Status = DomainInterrupted
			}
			logger.Info("Rollout stopped", "domain", out.Domain, "err", err)
			return res, err
		}
	}
	res.Completed = true
	s := res.Summary()
	logger.Info("Rollout done", "domainsDone", s.DomainsDone, "domainsSkipped", s.DomainsSkipped, "groupsDisrupted", s.GroupsDisrupted)
	emit(Event{Type: EventRolloutDone, Message: fmt.Sprintf("%d domain(s) done, %d skipped, %d group(s) disrupted",
		s.DomainsDone, s.DomainsSkipped, s.GroupsDisrupted)})
	return res, nil
}

func (d *Drainer) rolloutDomain(ctx context.Context, v *view, emit func(Event), out *DomainOutcome, id string, opts RolloutOptions, lastUpgraded bool) error {
	clk := d.s.Clock
	name := out.Domain
	logger := klog.FromContext(ctx).WithValues("rollout", id, "domain", name)
	start := clk.Now()
	defer func() { out.Duration = clk.Since(start) }()
	emitDomain := func(e Event) {
		e.Domain = name
		emit(e)
	}
	emitDomain(Event{Type: EventDomainStarted})
	stop := func(stage Stage, err error) error {
		return &DomainError{ID: id, Domain: name, Stage: stage, Err: err}
	}

	// The plan reads the domain's pods, their groups' and workloads' (a
	// slim cache materializes those only); the whole cluster is read only
	// to find the groups a stopped run left Pending.
	snap, err := v.planSnapshot(ctx, name)
	if err != nil {
		return stop(StagePlan, err)
	}
	layout, err := topology.BuildLayout(snap.Nodes, d.s.layoutOptions())
	if err != nil {
		return stop(StagePlan, err)
	}
	dom, err := layout.Domain(name)
	if err != nil {
		return stop(StagePlan, err)
	}
	stranded := func(t *recoveryTarget) error {
		all, err := v.snapshot(ctx)
		if err != nil {
			return err
		}
		t.addStranded(topology.FindGroups(all.Pods, groupersFor(d.s, all)...), topology.NewPDBIndex(all.PDBs), layout)
		return nil
	}

	var target recoveryTarget
	if upgradedBy(snap.Nodes, dom, id) {
		out.Status = DomainSkipped
		logger.Info("Domain already upgraded by this rollout; skipping its drain")
		emitDomain(Event{Type: EventDomainSkipped, Message: fmt.Sprintf("already upgraded by rollout %s", id)})
		plan, err := newPlan(name, snap, d.s)
		if err != nil {
			return stop(StagePlan, err)
		}
		target = targetFromPlan(plan)
		// The previous run stopped between the upgrade and the end of
		// this domain's recovery: still cordoned (its GPU check
		// included), or uncordoned but the last domain it upgraded. Its
		// evicted groups may be Pending, on no node: wait for them too.
		if cordonedBy(snap.Nodes, dom, id) || lastUpgraded {
			if err := stranded(&target); err != nil {
				return stop(StagePlan, err)
			}
		}
		if cordonedBy(snap.Nodes, dom, id) {
			if opts.Upgrade != nil {
				if err := d.checkGPUs(ctx, v, dom, nil, upgradeMark{}, opts.GPUCheck, emitDomain); err != nil {
					return stop(StageGPUCheck, err)
				}
			}
		}
	} else {
		resumed := cordonedBy(snap.Nodes, dom, id)
		plan, err := newPlan(name, snap, d.s)
		if err != nil {
			return stop(StagePlan, err)
		}
		out.Plan = plan
		before := gpusBefore(snap.Nodes, dom)
		emitDomain(Event{Type: EventPlanned, Progress: Progress{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)},
			Message: plan.withFitWarning(ctx, fmt.Sprintf("%d node(s); phase 1: %d pod(s), phase 2: %d pod(s)", len(plan.Nodes), len(plan.Phase1), len(plan.Phase2)))})
		drained, err := d.execute(ctx, v, plan, id)
		out.Drain = drained
		if err != nil {
			return err
		}
		if d.s.dryRun != cmdutil.DryRunNone {
			// A dry run shows each domain's plan and what the API would
			// say; it runs no upgrade step and changes no node.
			out.Status = DomainDryRun
			emitDomain(Event{Type: EventDomainDone, Message: "dry run"})
			return nil
		}
		if opts.Upgrade != nil {
			t0 := clk.Now()
			logger.Info("Upgrade step started", "nodes", len(dom.Nodes))
			emitDomain(Event{Time: t0, Type: EventUpgradeStarted})
			if err := opts.Upgrade(ctx, dom); err != nil {
				return stop(StageUpgrade, err)
			}
			out.Upgrade = clk.Since(t0)
			logger.Info("Upgrade step done", "took", out.Upgrade.Round(time.Millisecond))
			emitDomain(Event{Type: EventUpgradeDone, Message: fmt.Sprintf("took %s", out.Upgrade.Round(time.Millisecond))})
		}
		marked, err := d.markUpgraded(ctx, emitDomain, dom.Nodes, id)
		if err != nil {
			return stop(StageUncordon, err)
		}
		if opts.Upgrade != nil {
			if err := d.checkGPUs(ctx, v, dom, before, upgradeMark{node: marked, id: id}, opts.GPUCheck, emitDomain); err != nil {
				return stop(StageGPUCheck, err)
			}
		}
		target = targetFromPlan(plan)
		if resumed {
			if err := stranded(&target); err != nil {
				return stop(StageRecovery, err)
			}
		}
	}

	// Uncordon what udrain cordoned; leave nodes cordoned by others.
	var ours, others []string
	for _, n := range dom.Nodes {
		node, ok := v.node(n)
		if !ok {
			continue
		}
		if _, mine := node.Annotations[CordonedByAnnotation]; mine {
			ours = append(ours, n)
			continue
		}
		if node.Spec.Unschedulable {
			emitDomain(Event{Type: EventLeftCordoned, Node: n, Message: "cordoned before udrain came; left cordoned"})
		}
		if node.Annotations[UpgradedByAnnotation] != id {
			others = append(others, n)
		}
	}
	// The uncordon patches carry the upgraded mark; the nodes udrain does
	// not uncordon get the mark alone.
	if err := forEachNode(ctx, d.s.Concurrency, others, func(ctx context.Context, _ int, n string) error {
		_, err := d.patchNode(ctx, emitDomain, "mark upgraded", n, upgradedPatch(id), metav1.PatchOptions{})
		return err
	}); err != nil {
		return stop(StageUncordon, err)
	}
	if _, err := d.uncordonNodes(ctx, emitDomain, ours, id); err != nil {
		return stop(StageUncordon, err)
	}

	t0 := clk.Now()
	h, err := d.waitRecovered(ctx, v, target, emitDomain, opts.RecoveryTimeout)
	out.Health = h
	out.Recovery = clk.Since(t0)
	if err != nil {
		e := &DomainError{ID: id, Domain: name, Stage: StageRecovery, Health: h, Err: err}
		if ctx.Err() == nil {
			e.Timeout = opts.RecoveryTimeout
		}
		return e
	}
	if out.Status != DomainSkipped {
		out.Status = DomainDone
	}
	emitDomain(Event{Type: EventDomainDone, Message: fmt.Sprintf("done in %s", clk.Since(start).Round(time.Millisecond))})
	return nil
}

// cordonedByOther returns an *InProgressError when a node of the domain
// carries another rollout's (or a drain's) cordon mark.
func cordonedByOther(nodes []corev1.Node, dom topology.Domain, id string) error {
	for _, n := range domainNodes(nodes, dom) {
		if by := n.Annotations[CordonedByAnnotation]; by != "" && by != id {
			return &InProgressError{Domain: dom.Name, Node: n.Name, By: by, ID: id}
		}
	}
	return nil
}

// cordonedBy reports whether a node of the domain was cordoned by this
// rollout: a previous run stopped while draining it.
func cordonedBy(nodes []corev1.Node, dom topology.Domain, id string) bool {
	for _, n := range domainNodes(nodes, dom) {
		if n.Annotations[CordonedByAnnotation] == id {
			return true
		}
	}
	return false
}

// upgradedBy reports whether the rollout id upgraded the domain: every
// node carries its upgraded mark, or is still cordoned by it while another
// node of the domain carries the mark (markUpgraded marks one node before
// the uncordon patches, which carry the mark, so a rollout stopped in the
// middle of the uncordon left the rest cordoned). A node with neither mark
// (one that joined the domain since) means not upgraded.
func upgradedBy(nodes []corev1.Node, dom topology.Domain, id string) bool {
	in := domainNodes(nodes, dom)
	marked := false
	for _, n := range in {
		switch {
		case n.Annotations[UpgradedByAnnotation] == id:
			marked = true
		case n.Annotations[CordonedByAnnotation] == id:
		default:
			return false
		}
	}
	return marked
}

// mustDomain returns the domain name of a layout already checked to have
// it.
func mustDomain(l *topology.Layout, name string) topology.Domain {
	d, _ := l.Domain(name)
	return d
}
