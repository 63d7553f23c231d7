package eviction

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// DestinationKind says where an evicted group can go.
type DestinationKind string

// The kinds of destination of an evicted group.
const (
	// DestinationOwnDomain: no domain the group may use has room, so it
	// waits, Pending, until its own domain is upgraded and uncordoned,
	// and comes back there: disrupted once, for the whole drain and
	// upgrade of its domain.
	DestinationOwnDomain DestinationKind = "OwnDomain"
	// DestinationUpgraded: an upgraded domain (or one outside the
	// rollout) has room; the group recovers there without waiting for
	// its own domain.
	DestinationUpgraded DestinationKind = "UpgradedDomain"
	// DestinationDisruptedAgain: only a domain not upgraded yet has room
	// (or, with SteerOff, nothing keeps the group off one): the group is
	// disrupted again when that domain drains. The rollout reports it as
	// a topology.FindingDisruptedAgain.
	DestinationDisruptedAgain DestinationKind = "DisruptedAgain"
	// DestinationNoRoom: not even its own domain has room for it after
	// the upgrade (GPUs lost, taints added, another group took the
	// room): it stays Pending. The rollout reports it as a topology.FindingNoRoom.
	DestinationNoRoom DestinationKind = "NoRoom"
)

// maxRoomCounted bounds GroupDestination.Room.
const maxRoomCounted = 100

// GroupDestination says where a group that a rollout evicts can go, as
// the rollout's simulation finds it before anything is touched.
type GroupDestination struct {
	Group topology.GroupID `json:"group"`
	// From is the domain it is evicted from (a domain it only landed on
	// during the rollout, for a group disrupted again).
	From string `json:"from"`
	// To is the domain it goes to; empty for NoRoom.
	To   string          `json:"to,omitempty"`
	Kind DestinationKind `json:"kind"`
	// Room is, for DestinationUpgraded and DestinationDisruptedAgain, how
	// many groups like it fit in To when it gets there, itself included
	// (counted up to 100; 1 for a group that repels other groups on the
	// domain label).
	Room int `json:"room,omitempty"`
	// Message says the same in a sentence.
	Message string `json:"message"`
}

// destinationInput is what destinations simulates.
type destinationInput struct {
	nodes  []corev1.Node
	pods   []*corev1.Pod
	layout *topology.Layout
	// order are the rollout's domains, in its order.
	order []string
	// upgraded are the domains of order upgraded already (by an earlier
	// run); plans holds the plan of each other domain of order.
	upgraded map[string]bool
	plans    map[string]*Plan
	steering Steering
	// known, if set, keeps pods' requests from one simulation to the
	// next.
	known *requestCache
}

// destinations simulates a rollout, domain by domain in its order, and
// says for each group each domain's drain evicts where it can go: to an
// upgraded domain (or a domain outside the rollout) with room, only to a
// domain not upgraded yet (disrupted again: it is evicted again, and
// reported again, when that domain's turn comes), back to its own domain
// after the upgrade, or nowhere. The steering decides which domains a
// group may use: SteerAuto and SteerPreferUpgraded take a pending domain
// only when no upgraded one has room (SteerAuto's taint is then
// PreferNoSchedule); SteerStrict never does (the group waits for its
// own domain); SteerOff takes the worst case, a pending domain whenever
// one has room, since nothing keeps the scheduler off it.
//
// Room is modelled simply, and so are the limits of the model:
//   - a node's room is its allocatable less the requests of the pods on it
//     (resourcehelper.PodRequests, every resource incl. extended ones like
//     nvidia.com/gpu, and the pod count); pods deleting or finished hold
//     none;
//   - a group's evicted pods go to one domain (the domain label is what
//     LeaderWorkerSet's and Ray's gangs pack on), first fit, each pod on
//     the first node in the domain's natural order with room, taints of
//     effect NoSchedule or NoExecute it does not tolerate, and its
//     required node affinity and nodeSelector; no packing order is
//     searched, so a group that fits only in another order is missed;
//   - required pod anti-affinity is honoured only for terms on the domain
//     label (LeaderWorkerSet's exclusive topology): a group whose pods
//     repel a pod of a domain, or are repelled by one, cannot go there; a
//     namespaceSelector term counts every namespace. Pod affinity,
//     topology spread and the scheduler's scoring are not modelled;
//   - udrain's cordons and its pending-upgrade taint are the simulation's
//     own (a domain is closed while it drains, pending ones are steered
//     around); a node cordoned by someone else stays closed throughout;
//   - the pods of no group a domain's drain evicts (a Deployment's) are
//     placed one by one after its groups (placeOther), first fit, on an
//     upgraded domain (or one outside the rollout) with room; one that
//     finds none takes no room (it lands on a pending domain, or waits);
//     a pod without a controller is not replaced and takes no room;
//   - the candidate domains are tried in the rollout's order, then the
//     domains outside it in natural order; the scheduler may pick
//     another one with room.
func destinations(in destinationInput) []GroupDestination {
	a := &admission{sim: newDestSim(in), steering: in.steering}
	_, dests, _, _ := a.schedule(in, 1, true)
	return dests
}

// destinationFindings are the findings of the groups that are disrupted
// again or find no room; NoRoom is an error with SteerStrict.
func destinationFindings(dests []GroupDestination, steering Steering) []topology.Finding {
	var out []topology.Finding
	for _, d := range dests {
		f := topology.Finding{Severity: udrain.SeverityWarning, Namespace: d.Group.Namespace, Group: d.Group.Name, Domains: []string{d.From}}
		switch d.Kind {
		case DestinationDisruptedAgain:
			f.Code, f.Domains = topology.FindingDisruptedAgain, append(f.Domains, d.To)
			f.Message = fmt.Sprintf("group %s, evicted from %s, can go %s; make room in an upgraded domain (a spare domain upgraded first), or steer strictly (SteerStrict) to make it wait for its own domain", d.Group, d.From, d.Message)
		case DestinationNoRoom:
			f.Code = topology.FindingNoRoom
			if steering == SteerStrict {
				f.Severity = udrain.SeverityError
			}
			f.Message = fmt.Sprintf("group %s, evicted from %s, finds %s; check the domain's nodes (GPUs advertised, taints) or make room elsewhere before the rollout", d.Group, d.From, d.Message)
		default:
			continue
		}
		out = append(out, f)
	}
	return out
}

// planDestinations fills RolloutResult.Destinations, and with
// parallel domains the schedule (the Domains' After, With and HeldBy), from the first look at the cluster, in
// the rollout's order, and adds their findings to RolloutResult.Findings.
// With SteerStrict, a group that finds no room at all stops the rollout
// before anything is touched (a *topology.ContractError), unless
// violations are allowed.
func (r *rollout) planDestinations(snap *Snapshot) error {
	in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: r.layout, order: r.domains,
		upgraded: map[string]bool{}, plans: map[string]*Plan{}, steering: r.opts.Steering}
	for _, name := range r.domains {
		if upgradedBy(snap.Nodes, mustDomain(r.layout, name), r.id) {
			in.upgraded[name] = true
			continue
		}
		plan, err := r.firstPlan(snap, name)
		if err != nil {
			return err
		}
		in.plans[name] = plan
	}
	a := &admission{sim: newDestSim(in), steering: in.steering}
	if !r.opts.serial() {
		a = newAdmission(in, snap.PDBs, groupersFor(r.d.s, snap))
		a.inPlace = r.opts.InPlace
	}
	sched, dests, peak, roomy := a.schedule(in, r.opts.limit(), r.opts.serial())
	r.res.Destinations, r.res.Parallel, r.res.MaxInFlight, r.res.InPlace = dests, r.opts.Parallel, peak, r.opts.InPlace
	r.roomy, r.firstWave = roomy, nil
	for _, s := range sched {
		if s.After == "" {
			r.firstWave = append(r.firstWave, s.Domain)
		}
	}
	if !r.opts.serial() {
		for _, s := range sched {
			if i := slices.IndexFunc(r.res.Domains, func(d RolloutDomain) bool { return d.Domain == s.Domain }); i >= 0 {
				d := &r.res.Domains[i]
				d.After, d.With, d.HeldBy = s.After, s.With, s.HeldBy
			}
		}
	}
	found := destinationFindings(r.res.Destinations, r.opts.Steering)
	if f, ok := parallelLimited(r.opts.limit(), peak, len(in.plans), sched); ok {
		found = append(found, f)
	}
	r.res.Findings = append(r.res.Findings, found...)
	if len(found) == 0 {
		return nil
	}
	r.logger.Info("Some evicted groups find no upgraded room, or fewer domains can run at once than asked", "findings", len(found))
	r.emit(Event{Type: EventContractFindings, Message: fmt.Sprintf("%d group(s) disrupted again or without room once evicted, or parallelism limited", len(found))})
	if err := (topology.Report{Findings: found}).Err(); err != nil && !r.d.s.AllowViolations {
		return err
	}
	return nil
}

// parallelLimited is the finding of a rollout asked for limit domains at
// once (of domains to drain) whose schedule never has more than peak in
// flight: what held its domains back, each reason once.
func parallelLimited(limit, peak, domains int, sched []RolloutDomain) (topology.Finding, bool) {
	if limit <= 1 || peak >= min(limit, domains) {
		return topology.Finding{}, false
	}
	var why, held []string
	for _, s := range sched {
		if h := s.HeldBy; h != nil && h.Reason != BlockLimit {
			held = append(held, s.Domain)
			if len(why) < 3 && !slices.Contains(why, h.Message) {
				why = append(why, h.Message)
			}
		}
	}
	return topology.Finding{Severity: udrain.SeverityWarning, Code: topology.FindingParallelLimited, Domains: held,
		Message: fmt.Sprintf("%d domains at once asked for, but the budgets and the upgraded room allow at most %d: %s; the rollout runs as many as they allow",
			limit, peak, strings.Join(why, "; "))}, true
}
