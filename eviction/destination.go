package eviction

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

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
	// a FindingDisruptedAgain.
	DestinationDisruptedAgain DestinationKind = "DisruptedAgain"
	// DestinationNoRoom: not even its own domain has room for it after
	// the upgrade (GPUs lost, taints added, another group took the
	// room): it stays Pending. The rollout reports it as a FindingNoRoom.
	DestinationNoRoom DestinationKind = "NoRoom"
)

// The codes of the findings a rollout adds to the contract's (see
// RolloutResult.Findings).
const (
	// FindingDisruptedAgain: a group evicted from one domain can only go
	// to a domain not upgraded yet, where the rollout disrupts it again.
	// A warning.
	FindingDisruptedAgain topology.FindingCode = "DisruptedAgain"
	// FindingNoRoom: a group evicted from a domain finds no room, not
	// even in its own domain after the upgrade. An error with
	// SteerStrict (the rollout refuses to start unless violations are
	// allowed), a warning otherwise.
	FindingNoRoom topology.FindingCode = "NoRoom"
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
}

// destinations simulates a rollout, domain by domain in its order, and
// says for each group each domain's drain evicts where it can go: to an
// upgraded domain (or a domain outside the rollout) with room, only to a
// domain not upgraded yet (disrupted again: it is evicted again, and
// reported again, when that domain's turn comes), back to its own domain
// after the upgrade, or nowhere. The steering decides which domains a
// group may use: SteerPreferUpgraded takes a pending domain only when no
// upgraded one has room; SteerStrict never does (the group waits for its
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
//   - ordinary pods (of no group) leave their nodes when their domain
//     drains but are not placed anywhere: they may take room in the
//     cluster that the model gives to groups;
//   - the candidate domains are tried in the rollout's order, then the
//     domains outside it in natural order; the scheduler may pick
//     another one with room.
func destinations(in destinationInput) []GroupDestination {
	s := newDestSim(in)
	var out []GroupDestination
	movedIn := map[string][]*simGroup{}
	for _, name := range in.order {
		plan := in.plans[name]
		if in.upgraded[name] || plan == nil {
			continue
		}
		d := s.domains[name]
		d.state = simDraining
		groups := s.groupsOf(plan)
		for _, p := range plan.Pods() {
			if pod := s.podOf(p.PodRef); pod != nil {
				s.remove(pod)
			}
		}
		for _, g := range movedIn[name] {
			for _, p := range g.pods {
				s.remove(p)
			}
			groups = append(groups, g)
		}
		var back []*simGroup
		for _, g := range groups {
			dest, to := s.destination(g, name)
			switch dest.Kind {
			case DestinationOwnDomain:
				back = append(back, g)
				continue
			case DestinationDisruptedAgain:
				movedIn[to] = append(movedIn[to], g)
			}
			out = append(out, dest)
		}
		d.state = simUpgraded
		for _, g := range back {
			dest := GroupDestination{Group: g.id, From: name, To: name, Kind: DestinationOwnDomain}
			if pod := s.place(g, d, true); pod != nil {
				dest.To, dest.Kind = "", DestinationNoRoom
				dest.Message = fmt.Sprintf("no room anywhere, not even back in its own domain %s after the upgrade: pod %s/%s fits no node there (resources, taints, node affinity); it stays Pending", name, pod.Namespace, pod.Name)
			} else {
				dest.Message = fmt.Sprintf("back to its own domain %s after the upgrade: %s; it waits, Pending, through the drain and upgrade of %s", name, g.why, name)
			}
			out = append(out, dest)
		}
	}
	return out
}

// destinationFindings are the findings of the groups that are disrupted
// again or find no room; NoRoom is an error with SteerStrict.
func destinationFindings(dests []GroupDestination, steering Steering) []topology.Finding {
	var out []topology.Finding
	for _, d := range dests {
		f := topology.Finding{Severity: udrain.SeverityWarning, Namespace: d.Group.Namespace, Group: d.Group.Name, Domains: []string{d.From}}
		switch d.Kind {
		case DestinationDisruptedAgain:
			f.Code, f.Domains = FindingDisruptedAgain, append(f.Domains, d.To)
			f.Message = fmt.Sprintf("group %s, evicted from %s, can go %s; make room in an upgraded domain (a spare domain upgraded first), or use --steering Strict to make it wait for its own domain", d.Group, d.From, d.Message)
		case DestinationNoRoom:
			f.Code = FindingNoRoom
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

type simState int

const (
	// simOther: a domain outside the rollout.
	simOther simState = iota
	simPending
	simDraining
	simUpgraded
)

type simDomain struct {
	name  string
	state simState
	nodes []*simNode
}

type simNode struct {
	node   *corev1.Node
	domain *simDomain
	// free is allocatable less requests, in milli-units; countPods says
	// the node advertises a pod count (under corev1.ResourcePods).
	free      map[corev1.ResourceName]int64
	countPods bool
	// closed: cordoned by someone else than udrain.
	closed bool
	pods   []*corev1.Pod
}

// simGroup is a group's evicted pods; why says why it waits for its own
// domain, once known.
type simGroup struct {
	id   topology.GroupID
	pods []*corev1.Pod
	why  string
}

type destSim struct {
	in      destinationInput
	domains map[string]*simDomain
	// candidates are the domains in the order they are tried.
	candidates []*simDomain
	nodeOf     map[*corev1.Pod]*simNode
	byRef      map[PodRef]*corev1.Pod
	requests   map[*corev1.Pod]map[corev1.ResourceName]int64
	static     map[podNode]bool
	affinity   map[*corev1.Pod]nodeaffinity.RequiredNodeAffinity
	anti       map[*corev1.Pod][]antiTerm
}

type podNode struct {
	p *corev1.Pod
	n *simNode
}

type antiTerm struct {
	owner      *corev1.Pod
	namespaces []string
	allNS      bool
	selector   labels.Selector
}

func newDestSim(in destinationInput) *destSim {
	s := &destSim{in: in, domains: map[string]*simDomain{}, nodeOf: map[*corev1.Pod]*simNode{}, byRef: map[PodRef]*corev1.Pod{},
		requests: map[*corev1.Pod]map[corev1.ResourceName]int64{}, static: map[podNode]bool{}, affinity: map[*corev1.Pod]nodeaffinity.RequiredNodeAffinity{}, anti: map[*corev1.Pod][]antiTerm{}}
	inOrder := map[string]bool{}
	for _, name := range in.order {
		inOrder[name] = true
	}
	byName := map[string]*simNode{}
	for _, dom := range in.layout.Domains {
		d := &simDomain{name: dom.Name, state: simOther}
		switch {
		case inOrder[dom.Name] && in.upgraded[dom.Name]:
			d.state = simUpgraded
		case inOrder[dom.Name]:
			d.state = simPending
		}
		s.domains[dom.Name] = d
		for _, n := range dom.Nodes {
			byName[n] = &simNode{domain: d}
		}
	}
	for i := range in.nodes {
		n := &in.nodes[i]
		sn := byName[n.Name]
		if sn == nil {
			continue
		}
		sn.node = n
		sn.closed = n.Spec.Unschedulable && n.Annotations[CordonedByAnnotation] == ""
		sn.free = map[corev1.ResourceName]int64{}
		for r, q := range n.Status.Allocatable {
			sn.free[r] = q.MilliValue()
		}
		_, sn.countPods = n.Status.Allocatable[corev1.ResourcePods]
	}
	for _, dom := range in.layout.Domains {
		d := s.domains[dom.Name]
		for _, n := range dom.Nodes {
			if sn := byName[n]; sn.node != nil {
				d.nodes = append(d.nodes, sn)
			}
		}
	}
	for _, name := range in.order {
		s.candidates = append(s.candidates, s.domains[name])
	}
	for _, dom := range in.layout.Domains {
		if !inOrder[dom.Name] {
			s.candidates = append(s.candidates, s.domains[dom.Name])
		}
	}
	for _, p := range in.pods {
		s.byRef[PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}] = p
		sn := byName[p.Spec.NodeName]
		if sn == nil || sn.node == nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		s.add(p, sn)
	}
	return s
}

func (s *destSim) podOf(ref PodRef) *corev1.Pod {
	return s.byRef[PodRef{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}]
}

// groupsOf returns the groups of plan with their evicted pods, in the
// plan's order of groups.
func (s *destSim) groupsOf(plan *Plan) []*simGroup {
	byID := map[topology.GroupID]*simGroup{}
	var out []*simGroup
	for _, ag := range plan.Groups {
		g := &simGroup{id: ag.ID}
		byID[ag.ID] = g
		out = append(out, g)
	}
	for _, p := range plan.Pods() {
		if p.Group == nil || byID[*p.Group] == nil {
			continue
		}
		if pod := s.podOf(p.PodRef); pod != nil {
			byID[*p.Group].pods = append(byID[*p.Group].pods, pod)
		}
	}
	return slices.DeleteFunc(out, func(g *simGroup) bool { return len(g.pods) == 0 })
}

func (s *destSim) requestsOf(p *corev1.Pod) map[corev1.ResourceName]int64 {
	if r, ok := s.requests[p]; ok {
		return r
	}
	r := map[corev1.ResourceName]int64{}
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		if v := q.MilliValue(); v > 0 {
			r[name] = v
		}
	}
	s.requests[p] = r
	return r
}

func (s *destSim) add(p *corev1.Pod, n *simNode) {
	for r, v := range s.requestsOf(p) {
		n.free[r] -= v
	}
	if n.countPods {
		n.free[corev1.ResourcePods] -= 1000
	}
	n.pods = append(n.pods, p)
	s.nodeOf[p] = n
}

func (s *destSim) remove(p *corev1.Pod) {
	n := s.nodeOf[p]
	if n == nil {
		return
	}
	for r, v := range s.requestsOf(p) {
		n.free[r] += v
	}
	if n.countPods {
		n.free[corev1.ResourcePods] += 1000
	}
	n.pods = slices.DeleteFunc(n.pods, func(q *corev1.Pod) bool { return q == p })
	delete(s.nodeOf, p)
}

// destination finds where group g, evicted from domain from, goes, and
// places it there; for DestinationOwnDomain it only records why in g.
func (s *destSim) destination(g *simGroup, from string) (GroupDestination, string) {
	dest := GroupDestination{Group: g.id, From: from}
	var upgraded, pending *simDomain
	firstFit := func(state ...simState) *simDomain {
		for _, d := range s.candidates {
			if slices.Contains(state, d.state) && s.place(g, d, false) == nil {
				return d
			}
		}
		return nil
	}
	if s.in.steering != SteerOff {
		upgraded = firstFit(simUpgraded, simOther)
	}
	if upgraded == nil || s.in.steering == SteerOff {
		pending = firstFit(simPending)
	}
	if s.in.steering == SteerOff && pending == nil {
		upgraded = firstFit(simUpgraded, simOther)
	}
	switch {
	case pending != nil && s.in.steering != SteerStrict:
		dest.To, dest.Kind, dest.Room = pending.name, DestinationDisruptedAgain, s.room(g, pending)
		dest.Message = fmt.Sprintf("only to a domain not upgraded yet (%s): it will be disrupted again when %s drains", pending.name, pending.name)
		if s.in.steering == SteerOff {
			dest.Message = fmt.Sprintf("to a domain not upgraded yet (%s), since steering is Off and nothing keeps it off there: it will be disrupted again when %s drains", pending.name, pending.name)
		}
		s.place(g, pending, true)
	case upgraded != nil:
		dest.To, dest.Kind, dest.Room = upgraded.name, DestinationUpgraded, s.room(g, upgraded)
		what := "upgraded domain " + upgraded.name
		if upgraded.state == simOther {
			what = "domain " + upgraded.name + ", outside this rollout"
		}
		room := fmt.Sprint(dest.Room)
		if dest.Room == maxRoomCounted {
			room += " or more"
		}
		dest.Message = fmt.Sprintf("to %s (room for %s group%s)", what, room, plural(dest.Room))
		s.place(g, upgraded, true)
	default:
		dest.To, dest.Kind = from, DestinationOwnDomain
		g.why = "no other domain has room"
		if s.in.steering == SteerStrict {
			if p := firstFit(simPending); p != nil {
				g.why = fmt.Sprintf("no upgraded domain has room, and Strict steering keeps it off %s (not upgraded yet)", p.name)
			}
		}
	}
	return dest, dest.To
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// room counts how many groups like g fit in d now, g included.
func (s *destSim) room(g *simGroup, d *simDomain) int {
	if s.repels(g) {
		return 1
	}
	free := map[*simNode]map[corev1.ResourceName]int64{}
	count := 0
	for count < maxRoomCounted && s.fitInto(g, d, free) == nil {
		count++
	}
	return count
}

func cloneFree(m map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// place fits g's pods into d, first fit, and returns the first pod that
// finds no node (nil: all fit; with commit they are placed).
func (s *destSim) place(g *simGroup, d *simDomain, commit bool) *corev1.Pod {
	// The cheap test only when looking: a group placed back home names
	// the pod that does not fit.
	if !commit && !s.roomy(g, d) || s.blocked(g, d) {
		return g.pods[0]
	}
	free := map[*simNode]map[corev1.ResourceName]int64{}
	at := map[*corev1.Pod]*simNode{}
	for _, p := range g.pods {
		n := s.fitPod(p, d, free)
		if n == nil {
			return p
		}
		at[p] = n
	}
	if commit {
		for _, p := range g.pods {
			s.add(p, at[p])
		}
	}
	return nil
}

// roomy reports whether d's nodes together have the room g's pods
// request: a cheap test before the node-by-node fit.
func (s *destSim) roomy(g *simGroup, d *simDomain) bool {
	need := map[corev1.ResourceName]int64{}
	for _, p := range g.pods {
		for r, v := range s.requestsOf(p) {
			need[r] += v
		}
	}
	for r, v := range need {
		var have int64
		for _, n := range d.nodes {
			have += max(n.free[r], 0)
		}
		if have < v {
			return false
		}
	}
	return true
}

// fitInto fits g's pods into d's free (changing it); the first pod that
// fits no node is returned.
func (s *destSim) fitInto(g *simGroup, d *simDomain, free map[*simNode]map[corev1.ResourceName]int64) *corev1.Pod {
	for _, p := range g.pods {
		if s.fitPod(p, d, free) == nil {
			return p
		}
	}
	return nil
}

// fitPod takes p's requests from the first node of d where it fits;
// free holds the nodes' room where it differs from theirs (a copy made
// on the first change).
func (s *destSim) fitPod(p *corev1.Pod, d *simDomain, free map[*simNode]map[corev1.ResourceName]int64) *simNode {
	req := s.requestsOf(p)
	for _, n := range d.nodes {
		if !s.allows(n, p) {
			continue
		}
		f, changed := free[n]
		if !changed {
			f = n.free
		}
		fits := !n.countPods || f[corev1.ResourcePods] >= 1000
		for r, v := range req {
			fits = fits && f[r] >= v
		}
		if !fits {
			continue
		}
		if !changed {
			f = cloneFree(n.free)
			free[n] = f
		}
		for r, v := range req {
			f[r] -= v
		}
		if n.countPods {
			f[corev1.ResourcePods] -= 1000
		}
		return n
	}
	return nil
}

// allows reports whether node n takes pod p at all: not cordoned by
// someone else, no taint p does not tolerate, p's required node affinity.
func (s *destSim) allows(n *simNode, p *corev1.Pod) bool {
	key := podNode{p, n}
	if ok, seen := s.static[key]; seen {
		return ok
	}
	ok := !n.closed
	if ok {
		aff, seen := s.affinity[p]
		if !seen {
			aff = nodeaffinity.GetRequiredNodeAffinity(p)
			s.affinity[p] = aff
		}
		ok = mayRunOn(n.node, p, &aff)
	}
	s.static[key] = ok
	return ok
}

// mayRunOn reports whether node may take pod p once the rollout is done
// with it: p tolerates its taints but the cordon's, udrain's own and
// PreferNoSchedule ones, and matches its required node affinity and node
// selector (aff, if given, is p's, made once by the caller).
func mayRunOn(node *corev1.Node, p *corev1.Pod, aff *nodeaffinity.RequiredNodeAffinity) bool {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Key == PendingUpgradeTaint || t.Key == corev1.TaintNodeUnschedulable || t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(logr.Discard(), p.Spec.Tolerations, t, false) {
			return false
		}
	}
	if aff == nil {
		a := nodeaffinity.GetRequiredNodeAffinity(p)
		aff = &a
	}
	ok, _ := aff.Match(node)
	return ok
}

// antiTerms are p's required anti-affinity terms on the domain label.
func (s *destSim) antiTerms(p *corev1.Pod) []antiTerm {
	if ts, ok := s.anti[p]; ok {
		return ts
	}
	var out []antiTerm
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey != s.in.layout.LabelKey || t.LabelSelector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
			if err != nil {
				continue
			}
			at := antiTerm{owner: p, namespaces: t.Namespaces, allNS: t.NamespaceSelector != nil, selector: sel}
			if len(at.namespaces) == 0 && !at.allNS {
				at.namespaces = []string{p.Namespace}
			}
			out = append(out, at)
		}
	}
	s.anti[p] = out
	return out
}

func (t antiTerm) matches(p *corev1.Pod) bool {
	return (t.allNS || slices.Contains(t.namespaces, p.Namespace)) && t.selector.Matches(labels.Set(p.Labels))
}

// repels reports whether g's pods repel other pods on the domain label.
func (s *destSim) repels(g *simGroup) bool {
	for _, p := range g.pods {
		if len(s.antiTerms(p)) > 0 {
			return true
		}
	}
	return false
}

// blocked reports whether required anti-affinity on the domain label
// keeps g out of d: a pod of g repels a pod in d, or the other way round.
func (s *destSim) blocked(g *simGroup, d *simDomain) bool {
	for _, n := range d.nodes {
		for _, q := range n.pods {
			if slices.Contains(g.pods, q) {
				continue
			}
			qTerms := s.antiTerms(q)
			for _, p := range g.pods {
				for _, t := range s.antiTerms(p) {
					if t.matches(q) {
						return true
					}
				}
				for _, t := range qTerms {
					if t.matches(p) {
						return true
					}
				}
			}
		}
	}
	return false
}

// planDestinations fills RolloutResult.Destinations from the first look
// at the cluster, in the rollout's order, and adds their findings to
// RolloutResult.Findings. With SteerStrict, a group that finds no room at
// all stops the rollout before anything is touched (a
// *topology.ContractError), unless violations are allowed.
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
	r.res.Destinations = destinations(in)
	found := destinationFindings(r.res.Destinations, r.opts.Steering)
	r.res.Findings = append(r.res.Findings, found...)
	if len(found) == 0 {
		return nil
	}
	r.logger.Info("Some evicted groups find no upgraded room", "findings", len(found))
	r.emit(Event{Type: EventContractFindings, Message: fmt.Sprintf("%d group(s) disrupted again or without room once evicted", len(found))})
	if err := (topology.Report{Findings: found}).Err(); err != nil && !r.d.s.AllowViolations {
		return err
	}
	return nil
}
