package eviction

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// kubelet upgrade). It runs while the domain is cordoned and empty.
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
}

// DomainOutcome is what a rollout did in one domain.
type DomainOutcome struct {
	Domain string `json:"domain"`
	// Skipped is true when an earlier run with the same ID upgraded it.
	Skipped bool `json:"skipped,omitempty"`
	// Plan is the domain's plan (nil when skipped).
	Plan *Plan `json:"plan,omitempty"`
	// Drain is the drain's result (nil when skipped).
	Drain    *Result       `json:"drain,omitempty"`
	Upgrade  time.Duration `json:"upgrade"`
	Recovery time.Duration `json:"recovery"`
	Duration time.Duration `json:"duration"`
	// Done is true once the domain is drained, upgraded and recovered (or,
	// in a dry run, dry-run); false for the domain a rollout stopped in.
	Done bool `json:"done"`
}

// RolloutResult summarises a rollout.
type RolloutResult struct {
	ID       string          `json:"id"`
	Domains  []DomainOutcome `json:"domains"`
	Started  time.Time       `json:"started"`
	Duration time.Duration   `json:"duration"`
	// Findings are the contract warnings (and allowed errors) found before
	// the rollout started.
	Findings []topology.Finding `json:"findings,omitempty"`
}

// LongestBlock returns the longest block of any domain (the first of the
// longest, a block that lasted no time included), or false if nothing
// blocked, as Result.LongestBlock does for one domain.
func (r *RolloutResult) LongestBlock() (BlockRecord, bool) {
	all := Result{}
	for _, d := range r.Domains {
		if d.Drain != nil {
			all.Blocks = append(all.Blocks, d.Drain.Blocks...)
		}
	}
	return all.LongestBlock()
}

// Totals sums the outcome: domains done, pods evicted per phase, groups
// disrupted, and the longest block that lasted some time (see
// RolloutResult.LongestBlock to tell "none" apart).
func (r *RolloutResult) Totals() RolloutTotals {
	var t RolloutTotals
	groups := map[string]bool{}
	for _, d := range r.Domains {
		if d.Skipped {
			t.DomainsSkipped++
			continue
		}
		if d.Drain == nil {
			continue
		}
		if d.Done {
			t.DomainsDone++
		}
		t.Phase1Evicted += d.Drain.Phase1.Evicted
		t.Phase2Evicted += d.Drain.Phase2.Evicted
		for _, g := range d.Drain.GroupsDisrupted {
			if !groups[g] {
				groups[g] = true
				t.GroupsDisrupted++
			}
		}
		if b, ok := d.Drain.LongestBlock(); ok && b.Duration > t.LongestBlock.Duration {
			t.LongestBlock = b
		}
	}
	return t
}

// RolloutTotals are the sums of a rollout.
type RolloutTotals struct {
	DomainsDone     int         `json:"domainsDone"`
	DomainsSkipped  int         `json:"domainsSkipped"`
	Phase1Evicted   int         `json:"phase1Evicted"`
	Phase2Evicted   int         `json:"phase2Evicted"`
	GroupsDisrupted int         `json:"groupsDisrupted"`
	LongestBlock    BlockRecord `json:"longestBlock"`
}

// Rollout drains, upgrades and recovers every domain in turn: plan, execute,
// upgrade step, mark upgraded, uncordon, wait until the domain's groups are
// healthy and their budgets caught up, then the next domain. It stops at the
// first error. Run again with the same ID, it continues from the cluster's
// state: domains marked upgraded are skipped, a half-drained domain is
// planned again from what is left on it, and only pods its new plan names
// are evicted. With a dry-run strategy it plans and dry-runs each domain and
// changes nothing.
func (d *Drainer) Rollout(ctx context.Context, opts RolloutOptions) (*RolloutResult, error) {
	id := opts.ID
	if id == "" {
		id = DefaultRolloutID
	}
	if opts.RecoveryTimeout < 0 {
		return nil, &OptionsError{"recovery-timeout", opts.RecoveryTimeout, "must be zero (no limit) or positive"}
	}
	clk := d.s.Clock
	em := &emitter{fn: d.s.OnEvent}
	res := &RolloutResult{ID: id, Started: clk.Now()}
	defer func() { res.Duration = clk.Since(res.Started) }()

	v, err := d.startView(ctx)
	if err != nil {
		return res, err
	}
	defer v.stop()

	// Check everything before touching anything: the domains exist, and the
	// contract holds across the cluster.
	snap, err := v.snapshot(ctx)
	if err != nil {
		return res, err
	}
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{LabelKey: d.s.DomainLabel, Unlabeled: d.s.Unlabeled})
	if err != nil {
		return res, err
	}
	domains := opts.Domains
	if len(domains) == 0 {
		domains = layout.Names()
	}
	seen := map[string]bool{}
	for _, name := range domains {
		if name == "" {
			return res, &EmptyDomainError{}
		}
		if seen[name] {
			return res, &OptionsError{"domains", name, "named twice"}
		}
		seen[name] = true
		if _, err := layout.Domain(name); err != nil {
			return res, err
		}
	}
	// One rollout at a time: a node cordoned by another rollout (or by a
	// drain) means that one is unfinished.
	for _, name := range domains {
		dom, _ := layout.Domain(name)
		if err := cordonedByOther(snap.Nodes, dom, id); err != nil {
			return res, err
		}
	}
	// Audit what this rollout will drain: findings about other domains
	// (other pools, other teams' workloads) do not stop it.
	report := topology.Audit(topology.AuditInput{Layout: layout, Groups: topology.FindGroups(snap.Pods, d.groupers(snap)...),
		PDBs: snap.PDBs, Pods: snap.Pods, Only: domains})
	res.Findings = report.Findings
	if err := report.Err(); err != nil && !d.s.AllowViolations {
		return res, err
	}
	if len(report.Findings) > 0 {
		em.emit(Event{Time: clk.Now(), Type: EventContractFindings, Message: fmt.Sprintf("%d contract finding(s), %d error(s)", len(report.Findings), len(report.Errors()))})
	}
	em.emit(Event{Time: clk.Now(), Type: EventRolloutStarted, Message: fmt.Sprintf("rollout %s over %d domain(s)", id, len(domains))})

	for _, name := range domains {
		out, err := d.rolloutDomain(ctx, v, em, name, id, opts)
		if out != nil {
			res.Domains = append(res.Domains, *out)
		}
		if err != nil {
			return res, err
		}
	}
	t := res.Totals()
	em.emit(Event{Time: clk.Now(), Type: EventRolloutDone, Message: fmt.Sprintf("%d domain(s) done, %d skipped, %d group(s) disrupted",
		t.DomainsDone, t.DomainsSkipped, t.GroupsDisrupted)})
	return res, nil
}

func (d *Drainer) rolloutDomain(ctx context.Context, v *view, em *emitter, name, id string, opts RolloutOptions) (*DomainOutcome, error) {
	clk := d.s.Clock
	start := clk.Now()
	out := &DomainOutcome{Domain: name}
	defer func() { out.Duration = clk.Since(start) }()
	em.emit(Event{Time: start, Type: EventDomainStarted, Domain: name})

	snap, err := v.snapshot(ctx)
	if err != nil {
		return out, err
	}
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{LabelKey: d.s.DomainLabel, Unlabeled: d.s.Unlabeled})
	if err != nil {
		return out, err
	}
	dom, err := layout.Domain(name)
	if err != nil {
		return out, err
	}

	var target recoveryTarget
	if upgradedBy(snap.Nodes, dom, id) {
		out.Skipped = true
		em.emit(Event{Time: clk.Now(), Type: EventDomainSkipped, Domain: name, Message: fmt.Sprintf("already upgraded by rollout %s", id)})
		plan, err := newPlan(name, snap, d.s)
		if err != nil {
			return out, err
		}
		target = targetFromPlan(plan)
		// Still cordoned: the previous run stopped between the upgrade
		// and the recovery of this domain.
		if cordonedBy(snap.Nodes, dom, id) {
			target.addStranded(snap, layout, d.groupers(snap), name)
		}
	} else {
		resumed := cordonedBy(snap.Nodes, dom, id)
		plan, err := newPlan(name, snap, d.s)
		if err != nil {
			return out, err
		}
		out.Plan = plan
		em.emit(Event{Time: clk.Now(), Type: EventPlanned, Domain: name,
			Progress: Progress{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)},
			Message:  fmt.Sprintf("%d node(s); phase 1: %d pod(s), phase 2: %d pod(s)", len(plan.Nodes), len(plan.Phase1), len(plan.Phase2))})
		drained, err := d.execute(ctx, v, plan, id)
		out.Drain = drained
		if err != nil {
			return out, err
		}
		if d.s.dryRun != cmdutil.DryRunNone {
			// A dry run shows each domain's plan and what the API would
			// say; it runs no upgrade step and changes no node.
			em.emit(Event{Time: clk.Now(), Type: EventDomainDone, Domain: name, Message: "dry run"})
			out.Done = true
			return out, nil
		}
		if opts.Upgrade != nil {
			t0 := clk.Now()
			em.emit(Event{Time: t0, Type: EventUpgradeStarted, Domain: name})
			if err := opts.Upgrade(ctx, dom); err != nil {
				return out, fmt.Errorf("upgrade step for domain %s: %w", name, err)
			}
			out.Upgrade = clk.Since(t0)
			em.emit(Event{Time: clk.Now(), Type: EventUpgradeDone, Domain: name, Message: fmt.Sprintf("took %s", out.Upgrade.Round(time.Millisecond))})
		}
		if err := d.markUpgraded(ctx, em, dom.Nodes, id); err != nil {
			return out, err
		}
		target = targetFromPlan(plan)
		if resumed {
			target.addStranded(snap, layout, d.groupers(snap), name)
		}
	}

	// Uncordon what udrain cordoned; leave nodes cordoned by others.
	var ours []string
	for _, n := range dom.Nodes {
		node, ok := v.node(n)
		if !ok {
			continue
		}
		if _, mine := node.Annotations[CordonedByAnnotation]; mine {
			ours = append(ours, n)
		} else if node.Spec.Unschedulable {
			em.emit(Event{Time: clk.Now(), Type: EventLeftCordoned, Domain: name, Node: n, Message: "cordoned before udrain came; left cordoned"})
		}
	}
	err = forEachNode(ctx, d.s.Concurrency, ours, func(ctx context.Context, _ int, n string) error {
		if err := d.uncordonNode(ctx, em, n); err != nil {
			return err
		}
		em.emit(Event{Time: clk.Now(), Type: EventUncordoned, Domain: name, Node: n})
		return nil
	})
	if err != nil {
		return out, err
	}

	t0 := clk.Now()
	if err := d.waitRecovered(ctx, v, target, em, opts.RecoveryTimeout); err != nil {
		return out, err
	}
	out.Recovery = clk.Since(t0)
	out.Done = true
	em.emit(Event{Time: clk.Now(), Type: EventDomainDone, Domain: name, Message: fmt.Sprintf("done in %s", clk.Since(start).Round(time.Millisecond))})
	return out, nil
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

// upgradedBy reports whether every node of the domain carries the rollout's
// upgraded mark.
func upgradedBy(nodes []corev1.Node, dom topology.Domain, id string) bool {
	in := domainNodes(nodes, dom)
	for _, n := range in {
		if n.Annotations[UpgradedByAnnotation] != id {
			return false
		}
	}
	return len(in) > 0
}

// domainNodes returns the nodes of the domain, in the order of nodes.
func domainNodes(nodes []corev1.Node, dom topology.Domain) []*corev1.Node {
	in := map[string]bool{}
	for _, n := range dom.Nodes {
		in[n] = true
	}
	var out []*corev1.Node
	for i := range nodes {
		if in[nodes[i].Name] {
			out = append(out, &nodes[i])
		}
	}
	return out
}

func (d *Drainer) markUpgraded(ctx context.Context, em *emitter, nodes []string, id string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{UpgradedByAnnotation: id}}})
	// Every node is marked before any is uncordoned: a rollout stopped in
	// between finds the domain upgraded and only finishes the uncordon.
	return forEachNode(ctx, d.s.Concurrency, nodes, func(ctx context.Context, _ int, n string) error {
		err := retryTransient(ctx, d.s, func(e Event) { e.Time, e.Node = d.s.Clock.Now(), n; em.emit(e) }, "mark node "+n+" upgraded", func() error {
			_, err := d.client.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("marking node %s upgraded: %w", n, err)
		}
		return nil
	})
}
