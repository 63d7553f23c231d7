package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// readmitEvery is how often a rollout with a domain held back by a budget
// checks whether it may start, besides when a domain in flight begins its
// recovery or ends: a group down elsewhere may have recovered. The check
// reads the holding budgets' groups alone (budgetWatch); a whole look,
// which reads every pod, follows only when they changed. Room and the
// limit change only with the domains in flight: a domain held back by
// them waits for those wake-ups.
const readmitEvery = 5 * time.Second

// runDomains runs the rollout's domains, as many at once as
// RolloutOptions.Parallel and the admission allow (one at a time, in
// order, by default). The first domain that stops on an error stops the
// rollout: the others in flight are interrupted where they are (cordoned
// ones stay cordoned, for the rollout run again to resume), and it
// returns that domain's outcome and error.
func (r *rollout) runDomains(ctx context.Context) (*RolloutDomain, error) {
	type end struct {
		s   *domainRun
		err error
	}
	ends := make(chan end)
	r.changed = make(chan struct{}, 1)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	pending := make([]int, len(r.res.Domains))
	for i := range pending {
		pending[i] = i
	}
	var flying []*domainRun
	var failed *RolloutDomain
	var failure error
	held, look := false, true
	for {
		// Without look, the budgets hold the same domains back as at the
		// last decision (stillHeld): no decision now.
		if look && failure == nil && ctx.Err() == nil && len(pending) > 0 {
			starts, heldBack := r.admit(ctx, pending, flying)
			held = heldBack
			var runs []*domainRun
			for _, st := range starts {
				s := r.domain(st.idx, st.demand)
				s.roomy = st.roomy
				runs = append(runs, s)
				pending = slices.DeleteFunc(pending, func(i int) bool { return i == st.idx })
			}
			// The steering is decided as domains start, for them and
			// those in flight that still evict.
			if err := r.steer(ctx, pending, flying, runs); err != nil {
				// The domains do not start: the steering they need is
				// not in place.
				failed, failure = runs[0].out, runs[0].stop(StagePlan, err)
				failed.State = StateFailed
				r.publish(runs[0].idx, failed)
				runs = nil
				stop()
			}
			for _, s := range runs {
				flying = append(flying, s)
				go func() { ends <- end{s, s.run(runCtx)} }()
			}
		} else if look {
			held = false
		}
		if len(flying) == 0 {
			return failed, failure
		}
		var wake <-chan time.Time
		var timer interface{ Stop() bool }
		if held && failure == nil {
			t := r.d.s.Clock.NewTimer(readmitEvery)
			timer, wake = t, t.C()
		}
		look = true
		select {
		case e := <-ends:
			flying = slices.DeleteFunc(flying, func(s *domainRun) bool { return s == e.s })
			if err := r.ended(ctx, runCtx, e.s, e.err); err != nil && failure == nil {
				failed, failure = e.s.out, err
				if len(flying) > 0 {
					r.logger.Info("A domain stopped; interrupting the others in flight", "domain", e.s.out.Domain, "inFlight", len(flying), "err", err)
				}
				stop()
			}
		case <-r.changed:
		case <-wake:
			look = !r.stillHeld(ctx)
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// ended records the outcome of domain s, whose run (under runCtx) returned
// err, and returns the error it stops the rollout with (nil: none): a
// domain interrupted because another stopped is StateInterrupted, not
// StateFailed.
func (r *rollout) ended(ctx, runCtx context.Context, s *domainRun, err error) error {
	if err != nil {
		err = causeOf[*udrain.HistoryChangedError](ctx, err)
		s.out.State = StateFailed
		if runCtx.Err() != nil && errors.Is(err, runCtx.Err()) {
			s.out.State = StateInterrupted
		}
	}
	r.publish(s.idx, s.out)
	return err
}

// wake tells the loop of domains that one in flight began its recovery.
func (r *rollout) wake() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// publish records a domain's outcome in the rollout's result.
func (r *rollout) publish(i int, out *RolloutDomain) {
	r.mu.Lock()
	r.res.Domains[i] = *out
	r.mu.Unlock()
}

// start is a domain the rollout starts, with the demand it was admitted
// for, and whether upgraded room takes every pod it evicts (roomy).
type start struct {
	idx    int
	demand *demand
	roomy  bool
}

// admit decides which of the pending domains (indexes into res.Domains,
// in order) start now beside those flying: one at a time without
// Parallel (and in a dry run); else a domain the rollout holds cordoned (a stopped run was
// in it) at once, and the others as the admission allows over the
// cluster as it is now. held reports that a domain was held back by a
// budget: the rollout looks again later.
func (r *rollout) admit(ctx context.Context, pending []int, flying []*domainRun) (starts []start, held bool) {
	r.watch = nil
	// A dry run changes nothing a decision could wait for: its plan's
	// schedule says what the parallelism would do.
	if r.opts.serial() || r.dryRun() {
		if len(flying) == 0 {
			return []start{{idx: pending[0], roomy: r.roomy[r.domains[pending[0]]]}}, false
		}
		return nil, false
	}
	r.looking.Lock()
	defer r.looking.Unlock()
	snap, err := r.v.snapshot(ctx)
	if err != nil {
		// Nothing to decide from: go on one at a time.
		if len(flying) == 0 {
			return []start{{idx: pending[0]}}, false
		}
		return nil, true
	}
	layout, err := topology.BuildLayout(snap.Nodes, r.d.s.layoutOptions())
	if err != nil {
		layout = r.layout
	}
	a, flights, upgraded := r.admission(snap, layout, flying)
	defer r.requests.turn()
	var demands []*demand
	byName := map[string]int{}
	for _, i := range pending {
		name := r.domains[i]
		byName[name] = i
		dom, err := layout.Domain(name)
		switch {
		case err != nil || upgraded[name]:
			demands = append(demands, &demand{domain: name})
		case cordonedBy(snap.Nodes, dom, r.id):
			// A stopped run was draining it: it is in flight already.
			d := a.demandOn(name)
			_, ad := a.roomHold(d, nil, false)
			starts = append(starts, start{idx: i, demand: d, roomy: ad.roomy})
			flights = append(flights, &flight{demand: d})
		default:
			demands = append(demands, a.demandOn(name))
		}
	}
	admitted, holds := a.next(demands, flights, r.opts.limit(), false)
	for _, ad := range admitted {
		starts = append(starts, start{idx: byName[ad.demand.domain], demand: ad.demand, roomy: ad.roomy})
	}
	for _, h := range holds {
		if h.Reason == BlockBudget {
			held = true
		}
	}
	if held {
		r.watch = a.watchHolds(holds, r.d.s.Clock.Now())
	}
	r.reportHold(holds)
	return starts, held
}

// admission is the admission over snap (and layout) beside the domains
// flying, with their flights; the domains marked upgraded by the rollout
// are upgraded in the simulation, those flying draining, or upgraded
// once recovering; the flights' groups have their room reserved.
func (r *rollout) admission(snap *Snapshot, layout *topology.Layout, flying []*domainRun) (*admission, []*flight, map[string]bool) {
	if r.requests == nil {
		r.requests = newRequestCache()
	}
	in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: r.domains, upgraded: map[string]bool{}, steering: r.opts.Steering, known: r.requests}
	for _, name := range r.domains {
		if dom, err := layout.Domain(name); err == nil && upgradedBy(snap.Nodes, dom, r.id) {
			in.upgraded[name] = true
		}
	}
	a := newAdmission(in, snap.PDBs, groupersFor(r.d.s, snap))
	a.sim.noRoom, a.inPlace = true, r.opts.InPlace
	var flights []*flight
	for _, s := range flying {
		f := &flight{demand: s.demand, recovering: s.recovering.Load()}
		if f.demand == nil {
			f.demand = &demand{domain: s.out.Domain}
		}
		a.fly(f)
		flights = append(flights, f)
	}
	a.reserve(flights)
	return a, flights, in.upgraded
}

// fly puts flight f in the simulation: a domain recovering is upgraded;
// one draining is closed and empty of what its drain takes away (vacate),
// whose room reserve then takes.
func (a *admission) fly(f *flight) {
	sd := a.sim.domains[f.name()]
	switch {
	case sd == nil:
	case f.recovering:
		a.sim.setState(sd, simUpgraded)
	default:
		a.sim.setState(sd, simDraining)
		a.sim.vacate(sd)
	}
}

// reportHold reports the first domain held back, when it or its reason
// changed since the last report.
func (r *rollout) reportHold(holds []*BlockInfo) {
	if len(holds) == 0 {
		r.held = ""
		return
	}
	h := holds[0]
	if key := h.Domain + "\x00" + h.Message; key != r.held {
		r.held = key
		r.logger.Info("Domain held back", "domain", h.Domain, "reason", h.Reason, "why", h.Message)
		r.emit(Event{Type: EventDomainHeld, Domain: h.Domain, Hold: h, Message: h.Message})
	}
}

// reserve takes, in the simulation, the room the groups of the flights
// will need and do not hold yet: a group with no member scheduled outside
// the domains closed by a drain goes where it would go now (back to its
// own domain, when it waits for it); one with some, gets the rest of its
// members beside them.
func (a *admission) reserve(flights []*flight) {
	s := a.sim
	closed := map[string]bool{}
	for _, f := range flights {
		if !f.recovering {
			closed[f.name()] = true
		}
	}
	for _, f := range flights {
		for _, g := range f.demand.groups {
			placed, at := 0, ""
			if cur := a.groups[g.id]; cur != nil {
				for _, m := range cur.Members {
					if m.Spec.NodeName == "" || m.DeletionTimestamp != nil {
						continue
					}
					if dom, ok := s.in.layout.DomainOf(m.Spec.NodeName); ok && !closed[dom] {
						placed, at = placed+1, dom
					}
				}
			}
			missing := len(g.pods) - placed
			if missing <= 0 {
				continue
			}
			rest := &simGroup{id: g.id, pods: g.pods[len(g.pods)-missing:]}
			if d := s.domains[at]; d != nil {
				s.place(rest, d, true)
				continue
			}
			if dest, _ := s.destination(rest, f.name()); dest.Kind == DestinationOwnDomain {
				s.place(rest, s.domains[f.name()], true)
			}
		}
	}
}

// steer sets the effect of the pending-upgrade taint with SteerAuto as
// domains start, from those flying and those starting (see SteerAuto): NoSchedule when each that is not uncordoned yet found
// upgraded room for every pod it evicts as it started, PreferNoSchedule
// otherwise; when the effect changes, it patches the nodes of the
// pending domains (indexes into res.Domains) that the rollout tainted.
func (r *rollout) steer(ctx context.Context, pending []int, flying, starting []*domainRun) error {
	if len(starting) == 0 || r.opts.Steering != SteerAuto || r.dryRun() || r.effect == "" {
		return nil
	}
	roomy := true
	for _, s := range append(slices.Clone(flying), starting...) {
		if !s.recovering.Load() && !s.roomy {
			roomy = false
		}
	}
	effect := r.opts.Steering.effect(roomy)
	if effect == r.effect {
		return nil
	}
	var names []string
	for _, i := range pending {
		dom, err := r.layout.Domain(r.domains[i])
		if err != nil {
			continue
		}
		for _, n := range dom.Nodes {
			if r.tainted[n] {
				names = append(names, n)
			}
		}
	}
	done, err := r.d.setPendingTaints(ctx, r.emit, r.v.Node, names, r.id, effect)
	r.logger.Info("Steering the pending domains", "effect", effect, "nodes", len(done), "roomy", roomy)
	if err != nil {
		return fmt.Errorf("steering evicted pods to upgraded nodes (%s): %w", effect, err)
	}
	r.effect = effect
	return nil
}
