package eviction

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// ParallelAuto, as RolloutOptions.Parallel, has a rollout start as many
// domains at once as the budgets over their groups and the upgraded room
// allow, with no fixed limit.
const ParallelAuto = -1

// demand is what a domain's drain takes: the units it charges to each
// budget (those of its phase-1 pods), and the pods it evicts, its groups'
// and the others, for the room they need elsewhere.
type demand struct {
	domain string
	units  map[health.BudgetRef][]unit
	groups []*simGroup
	others []*corev1.Pod
}

func (d *demand) empty() bool {
	return len(d.units) == 0 && len(d.groups) == 0 && len(d.others) == 0
}

// flight is a domain in flight: its demand, and whether it is
// recovering (uncordoned: its units count as down only while they are).
type flight struct {
	demand     *demand
	recovering bool
	// back are the groups that wait for the domain itself (simulation).
	back []*simGroup
}

func (f *flight) name() string { return f.demand.domain }

// admission decides which domains of a rollout may be in flight at once,
// from the budgets over the groups (their spec and what is down now) and
// the room the destination simulation finds.
type admission struct {
	sim      *destSim
	budgets  map[health.BudgetRef]*budgetCount
	groupOf  map[*corev1.Pod]*topology.Group
	groups   map[topology.GroupID]*topology.Group
	pdbs     *topology.PDBIndex
	steering Steering
	// inPlace: lack of upgraded room holds no domain back
	// (RolloutOptions.InPlace).
	inPlace bool
}

// newAdmission counts the budgets over the snapshot's pods and builds
// the room's simulation (in the states of in).
func newAdmission(in destinationInput, pdbs []policyv1.PodDisruptionBudget, groupers []topology.Grouper) *admission {
	a := &admission{sim: newDestSim(in), budgets: map[health.BudgetRef]*budgetCount{}, groupOf: map[*corev1.Pod]*topology.Group{},
		groups: map[topology.GroupID]*topology.Group{}, pdbs: topology.NewPDBIndex(pdbs), steering: in.steering}
	groups := topology.FindGroups(in.pods, groupers...)
	healthy := make(map[topology.GroupID]bool, len(groups))
	for i := range groups {
		g := &groups[i]
		a.groups[g.ID] = g
		for _, m := range g.Members {
			a.groupOf[m] = g
		}
	}
	for _, p := range in.pods {
		selected := a.pdbs.For(p)
		if len(selected) == 0 {
			continue
		}
		u, down := a.unitOf(p), false
		if g := a.groupOf[p]; g != nil {
			h, seen := healthy[g.ID]
			if !seen {
				h = health.Evaluate(g, health.Options{}).Healthy
				healthy[g.ID] = h
			}
			down = !h
		} else {
			down = !health.CountsForBudget(p)
		}
		for _, b := range selected {
			ref := health.BudgetRef{Namespace: b.Namespace, PDB: b.Name}
			bc := a.budgets[ref]
			if bc == nil {
				bc = &budgetCount{pdb: b, units: map[unit]bool{}}
				a.budgets[ref] = bc
			}
			bc.pods++
			bc.units[u] = bc.units[u] || down
		}
	}
	return a
}

func (a *admission) unitOf(p *corev1.Pod) unit {
	if g := a.groupOf[p]; g != nil {
		return unit{group: g.ID}
	}
	return unit{pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}}
}

// demandOfPlan is the demand of a domain's plan: the units of its
// phase-1 pods per budget, and its pods as the simulation knows them.
func (a *admission) demandOfPlan(plan *Plan) *demand {
	d := &demand{domain: plan.Domain, units: map[health.BudgetRef][]unit{}}
	for _, p := range plan.Phase1 {
		u := unit{pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}}
		if p.Group != nil {
			u = unit{group: *p.Group}
		}
		for _, name := range p.PDBs {
			ref := health.BudgetRef{Namespace: p.Namespace, PDB: name}
			if !slices.Contains(d.units[ref], u) {
				d.units[ref] = append(d.units[ref], u)
			}
		}
	}
	d.groups, d.others = a.sim.evictedBy(plan)
	return d
}

// demandOn is the demand of a domain from the pods on its nodes now, as
// a drain would plan it (kubectl's filters aside): the pods that run or
// wait there, but mirror pods, DaemonSet pods, finished or terminating
// pods and the rollout's own upgrade step.
func (a *admission) demandOn(domain string) *demand {
	d := &demand{domain: domain, units: map[health.BudgetRef][]unit{}}
	sd := a.sim.domains[domain]
	if sd == nil {
		return d
	}
	byGroup := map[topology.GroupID]*simGroup{}
	for _, n := range sd.nodes {
		for _, p := range n.pods {
			if !movable(p) {
				continue
			}
			u := a.unitOf(p)
			for _, b := range a.pdbs.For(p) {
				ref := health.BudgetRef{Namespace: b.Namespace, PDB: b.Name}
				if !slices.Contains(d.units[ref], u) {
					d.units[ref] = append(d.units[ref], u)
				}
			}
			g := a.groupOf[p]
			if g == nil {
				d.others = append(d.others, p)
				continue
			}
			sg := byGroup[g.ID]
			if sg == nil {
				sg = &simGroup{id: g.ID}
				byGroup[g.ID] = sg
				d.groups = append(d.groups, sg)
			}
			sg.pods = append(sg.pods, p)
		}
	}
	slices.SortFunc(d.groups, func(x, y *simGroup) int { return topology.CompareGroupIDs(x.id, y.id) })
	return d
}

// movable says whether a drain would evict p (kubectl's filters aside).
func movable(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	if ref := metav1.GetControllerOf(p); ref != nil && isDaemonSetRef(ref) {
		return false
	}
	if _, step := p.Labels[udrain.UpgradeStepLabel]; step {
		return false
	}
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// roomHold starts d in the simulation and keeps it started, unless a
// group it evicts finds no room in an upgraded domain now (it would land
// on a domain not upgraded yet, or wait for d's own upgrade) but would
// once the flights end, or, in place, a group that waits for d could take
// part of the room kept for another group (destSim.partRoom): then, with
// check, it undoes the start and returns why. It
// returns d as started: the destinations, the groups that wait for d
// itself, and whether upgraded room takes every pod it evicts.
func (a *admission) roomHold(d *demand, flights []*flight, check bool) (*BlockInfo, admitted) {
	var hold *BlockInfo
	ad := admitted{demand: d}
	a.sim.trial(func() bool {
		var roomy bool
		ad.dests, ad.back, roomy = a.sim.start(d.domain, d.groups, d.others)
		// The other pods take room only once the domain is kept.
		place := func() bool {
			ad.roomy = a.sim.placeOthers(d.others) && roomy
			return true
		}
		if check && a.inPlace {
			for _, g := range ad.back {
				for _, c := range a.sim.candidates {
					if (c.state != simUpgraded && c.state != simOther) || !a.sim.partRoom(g, c) {
						continue
					}
					id := g.id
					hold = &BlockInfo{Domain: d.domain, Reason: BlockRoom, Group: &id, InFlight: flightNames(flights), To: c.name,
						Message: fmt.Sprintf("group %s, evicted from %s now, would wait, Pending, for the upgrade of %s, but a pod of it fits in %s, where room is kept for groups evicted before it: the scheduler may put it there first and split the group between domains (in place, only groups that exclusive placement keeps out of such room wait)",
							id, d.domain, d.domain, c.name)}
					return false
				}
			}
			return place()
		}
		if !check {
			return place()
		}
		dests, back := ad.dests, ad.back
		late := map[topology.GroupID]string{} // group: where it goes now
		for _, dest := range dests {
			if dest.Kind == DestinationDisruptedAgain {
				late[dest.Group] = "land on " + dest.To + ", not upgraded yet"
			}
		}
		for _, g := range back {
			late[g.id] = "wait, Pending, for the upgrade of " + d.domain
		}
		for _, g := range append(slices.Clone(d.groups), a.sim.movedIn[d.domain]...) {
			how, ok := late[g.id]
			if !ok || !a.roomOnceLanded(g, flights) {
				continue
			}
			id := g.id
			hold = &BlockInfo{Domain: d.domain, Reason: BlockRoom, Group: &id, InFlight: flightNames(flights),
				Message: fmt.Sprintf("group %s, evicted from %s now, would %s: an upgraded domain has room for it once %s %s done",
					id, d.domain, how, strings.Join(flightNames(flights), ", "), isAre(len(flights)))}
			for _, dest := range dests {
				if dest.Group == id && dest.Kind == DestinationDisruptedAgain {
					hold.To = dest.To
				}
			}
			return false
		}
		return place()
	})
	return hold, ad
}

// roomOnceLanded says whether g would find room in an upgraded domain
// (or one outside the rollout) once the flights are upgraded and their
// groups that wait for them are back: a trial, undone.
func (a *admission) roomOnceLanded(g *simGroup, flights []*flight) bool {
	s := a.sim
	fits := false
	s.trial(func() bool {
		for _, p := range g.pods {
			s.remove(p)
		}
		for _, f := range flights {
			s.finish(f.name(), f.back)
		}
		for _, c := range s.candidates {
			if (c.state == simUpgraded || c.state == simOther) && s.place(g, c, false) == nil {
				fits = true
				break
			}
		}
		return false
	})
	return fits
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func flightNames(flights []*flight) []string {
	out := make([]string, len(flights))
	for i, f := range flights {
		out[i] = f.name()
	}
	return out
}

// admitted is a domain an admission decision starts, with what the
// simulation found for it.
type admitted struct {
	demand *demand
	dests  []GroupDestination
	back   []*simGroup
	// roomy: upgraded room takes every pod it evicts (see destSim.start).
	roomy bool
	// forced: started with nothing in flight although held (it waits on
	// its budgets' 429s, as a rollout of one domain at a time does).
	forced bool
}

// next decides which of the pending domains (in the rollout's order)
// start now beside flights, with at most limit in flight (0: no limit):
// in order, each one that no budget and no lack of room holds, passing
// those held. With nothing in flight and every pending domain held, the
// first starts anyway. serial takes the first pending domain only, once
// nothing is in flight (one domain at a time, in order, as a rollout
// without Parallel does). The started domains are started in the
// simulation; holds says why each pending domain not started waits.
func (a *admission) next(pending []*demand, flights []*flight, limit int, serial bool) ([]admitted, []*BlockInfo) {
	var out []admitted
	var holds []*BlockInfo
	if len(pending) == 0 {
		return nil, nil
	}
	if serial {
		if len(flights) > 0 {
			return nil, nil
		}
		_, ad := a.roomHold(pending[0], nil, false)
		return []admitted{ad}, nil
	}
	all := slices.Clone(flights)
	for _, d := range pending {
		if limit > 0 && len(all) >= limit {
			holds = append(holds, &BlockInfo{Domain: d.domain, Reason: BlockLimit, InFlight: flightNames(all), Allowed: limit,
				Message: fmt.Sprintf("%d domain(s) in flight, the most the rollout runs at once (%s)", len(all), strings.Join(flightNames(all), ", "))})
			continue
		}
		if h := a.budgetHold(d, all); h != nil {
			holds = append(holds, h)
			continue
		}
		h, ad := a.roomHold(d, all, len(all) > 0 && a.steering != SteerOff)
		if h != nil {
			holds = append(holds, h)
			continue
		}
		out = append(out, ad)
		all = append(all, &flight{demand: d, back: ad.back})
	}
	if len(flights) == 0 && len(out) == 0 {
		_, ad := a.roomHold(pending[0], nil, false)
		ad.forced = true
		out = append(out, ad)
		holds = slices.DeleteFunc(holds, func(h *BlockInfo) bool { return h.Domain == pending[0].domain })
	}
	return out, holds
}

// schedule simulates a rollout over in.order with at most limit domains
// in flight (0: no limit; serial: one at a time, in order), domains in
// flight ending in the order they started: it says when each domain
// starts (in start order: Domain, After, With and HeldBy set), where each group its drain evicts goes, the most domains in
// flight at once, and which domains find upgraded room for every pod
// they evict when they start (roomy). plans holds the plan of each
// domain not upgraded.
func (a *admission) schedule(in destinationInput, limit int, serial bool) ([]RolloutDomain, []GroupDestination, int, map[string]bool) {
	var pending []*demand
	for _, name := range in.order {
		if plan := in.plans[name]; plan != nil && !in.upgraded[name] {
			pending = append(pending, a.demandOfPlan(plan))
		}
	}
	var sched []RolloutDomain
	var dests []GroupDestination
	var flights []*flight
	held := map[string]*BlockInfo{}
	roomy := map[string]bool{}
	after, peak := "", 0
	for len(pending) > 0 || len(flights) > 0 {
		started, holds := a.next(pending, flights, limit, serial)
		for _, h := range holds {
			held[h.Domain] = h
		}
		for _, s := range started {
			sched = append(sched, RolloutDomain{Domain: s.demand.domain, After: after, With: flightNames(flights), HeldBy: held[s.demand.domain]})
			flights = append(flights, &flight{demand: s.demand, back: s.back})
			dests = append(dests, s.dests...)
			roomy[s.demand.domain] = s.roomy
			pending = slices.DeleteFunc(pending, func(d *demand) bool { return d == s.demand })
		}
		peak = max(peak, len(flights))
		if len(flights) == 0 {
			break
		}
		f := flights[0]
		flights = flights[1:]
		dests = append(dests, a.sim.finish(f.name(), f.back)...)
		after = f.name()
	}
	return sched, dests, peak, roomy
}
