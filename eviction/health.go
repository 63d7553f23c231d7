package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// reportWaiting says in a line each what is not healthy in r, prefixed
// with the domain ("unscheduled" for groups on no node).
func reportWaiting(r *health.Report) []string {
	var out []string
	for i := range r.Domains {
		for _, w := range domainWaiting(&r.Domains[i]) {
			out = append(out, r.Domains[i].Domain+": "+w)
		}
	}
	for _, g := range r.Unscheduled {
		out = append(out, fmt.Sprintf("unscheduled: group %s: %s", g.ID, g.Message))
	}
	return out
}

// Health reports, without waiting, the health of the groups with a pod on
// the named domains (every domain when none is named), of the budgets over
// their members, and of the groups of the same workloads that have no pod
// on any node. It changes nothing. Every pod counts, whatever a drain
// would do with it. An empty name among domains is a *udrain.ConfigError,
// before any request.
func (d *Drainer) Health(ctx context.Context, domains ...string) (*health.Report, error) {
	if slices.Contains(domains, "") {
		return nil, emptyDomainError("Drainer.Health(domains)")
	}
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	return d.healthNow(ctx, v, domains)
}

func (d *Drainer) healthNow(ctx context.Context, v *view, domains []string) (*health.Report, error) {
	snap, targets, unscheduled, err := d.healthTargetsNow(ctx, v, domains)
	if err != nil {
		return nil, err
	}
	groupers := groupersFor(d.s, snap)
	r := &health.Report{Healthy: true}
	for _, t := range targets {
		h := v.evaluate(t, groupers, snap.Now)
		r.Healthy = r.Healthy && h.Healthy
		r.Domains = append(r.Domains, *h)
	}
	if len(unscheduled.groups) > 0 {
		h := v.evaluate(unscheduled, groupers, snap.Now)
		r.Healthy = r.Healthy && h.Healthy
		r.Unscheduled = h.Groups
	}
	return r, nil
}

// WaitHealthy waits, on its watch, until Health would report every named
// domain (every domain when none is named) healthy, and returns that
// report: groups that appear while it waits (another drain's replacements,
// Pending) are waited for too, so a report returned without an error is
// healthy. It changes nothing. A deadline or cancel of ctx ends the wait
// with a *RetryError (ReasonNotHealthy) saying what was still missing. An empty name
// among domains is a *udrain.ConfigError, before any request.
func (d *Drainer) WaitHealthy(ctx context.Context, domains ...string) (*health.Report, error) {
	if slices.Contains(domains, "") {
		return nil, emptyDomainError("Drainer.WaitHealthy(domains)")
	}
	start := d.s.Clock.Now()
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	emit := func(e Event) {
		e.Time = d.s.Clock.Now()
		d.events.emit(callSinkFrom(ctx), e)
	}
	notHealthy := func(r *health.Report, err error) error {
		return &RetryError{Reason: ReasonNotHealthy, Domains: domains, Waited: d.s.Clock.Since(start), Report: r, Err: err}
	}
	// Each round waits for what is not healthy now; groups that appear
	// meanwhile (another drain's replacements, Pending) are seen by the
	// next round, so the report returned is always a healthy one.
	for round := 0; ; round++ {
		changed := v.Changed()
		r, err := d.healthNow(ctx, v, domains)
		if err != nil || r.Healthy {
			return r, err
		}
		if round > 0 {
			// What the last round waited for is healthy, the report is
			// not: wait for the cluster to change before the next round
			// rather than spin.
			select {
			case <-ctx.Done():
				return r, notHealthy(r, ctx.Err())
			case <-changed:
			}
		}
		_, targets, unscheduled, err := d.healthTargetsNow(ctx, v, domains)
		if err != nil {
			return nil, err
		}
		// One wait over every domain, so that a domain that falls ill
		// again while another recovers is not missed.
		all := recoveryTarget{domain: strings.Join(domains, ",")}
		for _, t := range append(targets, unscheduled) {
			for _, g := range t.groups {
				if !all.has(g.id) {
					all.groups = append(all.groups, g)
				}
			}
			for _, nn := range t.pdbs {
				all.addPDB(nn)
			}
		}
		if _, err := d.waitRecovered(ctx, v, all, emit, 0); err != nil {
			rctx := context.WithoutCancel(ctx)
			r, rerr := d.healthNow(rctx, v, domains)
			if rerr != nil {
				return nil, errors.Join(err, rerr)
			}
			if r.Healthy {
				return r, nil
			}
			return r, notHealthy(r, err)
		}
	}
}

// WaitRecovered waits, on its watch, until the groups a plan disrupts are
// healthy again (with the size and leader they had when it was made) and
// the budgets over its phase-1 pods have caught up, as a rollout's
// recovery does: call it after Drain (or Execute), the upgrade and
// Uncordon, before draining the next domain. Unlike WaitHealthy of the
// domain, it also waits for groups none of whose pods exists yet (a
// StatefulSet has not recreated them). A cancel or deadline of ctx ends it
// with a *DomainError at StageRecovery holding what was still missing.
func (d *Drainer) WaitRecovered(ctx context.Context, plan *Plan) (*health.DomainStatus, error) {
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	emit := func(e Event) {
		e.Time, e.Domain = d.s.Clock.Now(), plan.Domain
		d.events.emit(callSinkFrom(ctx), e)
	}
	h, err := d.waitRecovered(ctx, v, targetFromPlan(plan), emit, 0)
	if err != nil {
		return h, &DomainError{Domain: plan.Domain, Stage: StageRecovery, Health: h, Err: err}
	}
	return h, nil
}

// healthTargetsNow is healthTargets of the view's snapshot now, with it.
func (d *Drainer) healthTargetsNow(ctx context.Context, v *view, domains []string) (*Snapshot, []recoveryTarget, recoveryTarget, error) {
	snap, err := v.snapshot(ctx)
	if err != nil {
		return nil, nil, recoveryTarget{}, err
	}
	targets, unscheduled, err := d.healthTargets(snap, domains)
	return snap, targets, unscheduled, err
}

// healthTargets returns, per domain, its groups (every group with a pod on
// its nodes) and the PDBs over their members, and the groups of workloads
// placed in the layout that have no pod on any node.
func (d *Drainer) healthTargets(snap *Snapshot, domains []string) ([]recoveryTarget, recoveryTarget, error) {
	unscheduled := recoveryTarget{domain: "unscheduled"}
	// A rollout plan's look has built the layout and found the groups
	// already (as newPlanner reads them).
	layout, err := snap.layoutOf(d.s)
	if err != nil {
		return nil, unscheduled, err
	}
	if domains, err = layout.Select(domains); err != nil {
		return nil, unscheduled, err
	}
	groups := snap.groupsOf(d.s)
	pdbs := topology.NewPDBIndex(snap.PDBs)
	byDomain := map[string]*recoveryTarget{}
	targets := make([]recoveryTarget, len(domains))
	for i, name := range domains {
		targets[i].domain = name
		byDomain[name] = &targets[i]
	}
	// Unscheduled groups count only for workloads placed in the layout.
	placed := placedWorkloads(groups, layout)
	for i := range groups {
		g := &groups[i]
		scheduled := false
		for _, m := range g.Members {
			if m.Spec.NodeName == "" {
				continue
			}
			scheduled = true
			dom, ok := layout.DomainOf(m.Spec.NodeName)
			if t := byDomain[dom]; ok && t != nil {
				if !t.has(g.ID) {
					t.addGroup(g, nil)
				}
				for _, b := range pdbs.For(m) {
					t.addPDB(types.NamespacedName{Namespace: b.Namespace, Name: b.Name})
				}
			}
		}
		if !scheduled && placed[workloadOf(g.ID, g.Workload)] {
			unscheduled.addGroup(g, nil)
		}
	}
	return targets, unscheduled, nil
}
