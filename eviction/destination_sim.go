package eviction

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// The simulation of where evicted groups go, the rollout's destination
// plan: its domains (in the states the rollout will put them in), nodes
// with their free resources, and groups.

// simState is a domain's state in the simulation.
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
	// repelling counts its pods with required anti-affinity on the
	// domain label.
	repelling int
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
	// movedIn are the groups that landed on a pending domain, by domain:
	// its drain evicts them again.
	movedIn map[string][]*simGroup
	// journal, while not nil, records each change, so that a trial can
	// be undone (see trial).
	journal *[]simChange
	// noRoom: destinations leave Room zero (the parallelism's decisions
	// need where a group goes, not how many more would fit there).
	noRoom bool
	// candidates are the domains in the order they are tried.
	candidates []*simDomain
	nodeOf     map[*corev1.Pod]*simNode
	byRef      map[topology.PodRef]*corev1.Pod
	requests   map[*corev1.Pod]map[corev1.ResourceName]int64
	// shared are the requests of pods whose containers alone make them,
	// by their containers (see requestsKeyOf).
	shared   map[requestsKey]map[corev1.ResourceName]int64
	static   map[podNode]bool
	affinity map[*corev1.Pod]nodeaffinity.RequiredNodeAffinity
	anti     map[*corev1.Pod][]antiTerm
	// selectors are the anti-affinity terms' selectors parsed (nil: not
	// valid), by the term's own (antiTerms).
	selectors map[*metav1.LabelSelector]labels.Selector
	// others is where pods of no group are placed (see placeOther).
	others otherPlacement
}

type podNode struct {
	p *corev1.Pod
	n *simNode
}

// simChange is a change of the simulation a trial may undo: a pod added
// to or removed from a node, a domain's state changed, a group moved in.
type simChange struct {
	added   bool
	pod     *corev1.Pod
	node    *simNode
	domain  *simDomain
	state   simState
	movedTo string
}

type antiTerm struct {
	owner      *corev1.Pod
	namespaces []string
	allNS      bool
	selector   labels.Selector
}

func newDestSim(in destinationInput) *destSim {
	n := len(in.pods)
	s := &destSim{in: in, domains: map[string]*simDomain{}, movedIn: map[string][]*simGroup{}, nodeOf: make(map[*corev1.Pod]*simNode, n),
		requests: map[*corev1.Pod]map[corev1.ResourceName]int64{}, shared: map[requestsKey]map[corev1.ResourceName]int64{}, static: map[podNode]bool{}, affinity: map[*corev1.Pod]nodeaffinity.RequiredNodeAffinity{}, anti: map[*corev1.Pod][]antiTerm{},
		selectors: map[*metav1.LabelSelector]labels.Selector{}}
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
		sn.closed = n.Spec.Unschedulable && n.Annotations[udrain.CordonedByAnnotation] == ""
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
		sn := byName[p.Spec.NodeName]
		if sn == nil || sn.node == nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		s.add(p, sn)
	}
	return s
}

func (s *destSim) podOf(ref topology.PodRef) *corev1.Pod {
	if s.byRef == nil { // made on first use: the parallelism's decisions need none
		s.byRef = make(map[topology.PodRef]*corev1.Pod, len(s.in.pods))
		for _, p := range s.in.pods {
			s.byRef[topology.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}] = p
		}
	}
	return s.byRef[topology.PodRef{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}]
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

// evictedBy returns the pods plan evicts, as the simulation knows them:
// its groups with their pods, and the other pods.
func (s *destSim) evictedBy(plan *Plan) ([]*simGroup, []*corev1.Pod) {
	groups := s.groupsOf(plan)
	var others []*corev1.Pod
	for _, p := range plan.Pods() {
		if p.Group != nil && slices.ContainsFunc(groups, func(g *simGroup) bool { return g.id == *p.Group }) {
			continue
		}
		if pod := s.podOf(p.PodRef); pod != nil {
			others = append(others, pod)
		}
	}
	return groups, others
}

func (s *destSim) requestsOf(p *corev1.Pod) map[corev1.ResourceName]int64 {
	if r, ok := s.in.known.get(p); ok {
		return r
	}
	if r, ok := s.requests[p]; ok {
		return r
	}
	var r map[corev1.ResourceName]int64
	if key, ok := requestsKeyOf(p); ok {
		r = s.shared[key]
		if r == nil {
			r = containersRequests(p.Spec.Containers)
			s.shared[key] = r
		}
	} else {
		r = map[corev1.ResourceName]int64{}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if v := q.MilliValue(); v > 0 {
				r[name] = v
			}
		}
	}
	if !s.in.known.put(p, r) {
		s.requests[p] = r
	}
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
	if len(s.antiTerms(p)) > 0 {
		n.domain.repelling++
	}
	if s.journal != nil {
		*s.journal = append(*s.journal, simChange{added: true, pod: p, node: n})
	}
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
	if len(s.antiTerms(p)) > 0 {
		n.domain.repelling--
	}
	if s.journal != nil {
		*s.journal = append(*s.journal, simChange{pod: p, node: n})
	}
}

// vacate removes from d the pods its drain takes away (those a drain
// evicts, and those already terminating): a domain in flight ends empty
// of them, evicted yet or not, and reserve takes its groups' room
// elsewhere. Left there, a domain just started would still hold them once
// its flight ends in a trial (roomOnceLanded), and its groups' pods would
// repel, by their anti-affinity, the groups of the same workloads that
// could go there: a domain whose groups would find room there once it is
// done was started at once, its groups Pending for minutes (issue 35's
// fleet).
func (s *destSim) vacate(d *simDomain) {
	for _, n := range d.nodes {
		for _, p := range slices.Clone(n.pods) {
			if p.DeletionTimestamp != nil || movable(p) {
				s.remove(p)
			}
		}
	}
}

// setState sets a domain's state (journaled).
func (s *destSim) setState(d *simDomain, st simState) {
	if s.journal != nil {
		*s.journal = append(*s.journal, simChange{domain: d, state: d.state})
	}
	d.state = st
}

// trial runs fn with the simulation's changes journaled, and undoes them
// unless fn returns true.
func (s *destSim) trial(fn func() bool) bool {
	var changes []simChange
	outer := s.journal
	s.journal = &changes
	keep := fn()
	if keep {
		s.journal = outer
		if outer != nil {
			*outer = append(*outer, changes...)
		}
		return true
	}
	// Undone unjournaled: an outer trial never sees these changes.
	s.journal = nil
	defer func() { s.journal = outer }()
	s.others.forget() // room came back: the cursors may have passed it
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		switch {
		case c.domain != nil:
			c.domain.state = c.state
		case c.movedTo != "":
			s.movedIn[c.movedTo] = s.movedIn[c.movedTo][:len(s.movedIn[c.movedTo])-1]
		case c.added:
			s.remove(c.pod)
		default:
			s.add(c.pod, c.node)
		}
	}
	return false
}

// moveIn records that g landed on the pending domain to (journaled).
func (s *destSim) moveIn(to string, g *simGroup) {
	s.movedIn[to] = append(s.movedIn[to], g)
	if s.journal != nil {
		*s.journal = append(*s.journal, simChange{movedTo: to})
	}
}

// start simulates the start of domain name's drain: it is closed, the
// pods it evicts (groups with theirs, and others) leave it, and each
// group, and each group that had landed on it, goes where
// destination finds room; those that can only wait for the domain itself
// are returned to be placed back by finish. roomy reports that every
// group found room in an upgraded domain (or one outside the rollout),
// or none at all (it waits for its own domain): none lands on a pending
// domain. The other pods are placed by placeOthers.
func (s *destSim) start(name string, groups []*simGroup, others []*corev1.Pod) (dests []GroupDestination, back []*simGroup, roomy bool) {
	s.setState(s.domains[name], simDraining)
	for _, g := range groups {
		for _, p := range g.pods {
			s.remove(p)
		}
	}
	for _, p := range others {
		s.remove(p)
	}
	for _, g := range s.movedIn[name] {
		for _, p := range g.pods {
			s.remove(p)
		}
		groups = append(groups, g)
	}
	roomy = true
	for _, g := range groups {
		dest, to := s.destination(g, name)
		switch dest.Kind {
		case DestinationOwnDomain:
			back = append(back, g)
			continue
		case DestinationDisruptedAgain:
			s.moveIn(to, g)
			roomy = false
		}
		dests = append(dests, dest)
	}
	return dests, back, roomy
}

// placeOthers places the other pods a domain's drain evicts, after its
// start, where placeOther finds room, and reports whether upgraded room
// took them all.
func (s *destSim) placeOthers(others []*corev1.Pod) bool {
	roomy := true
	for _, p := range others {
		roomy = s.placeOther(p) && roomy
	}
	return roomy
}

// finish simulates the end of domain name's upgrade: it is upgraded, and
// the groups that waited for it (back, from start) come back to it, or
// find no room even there.
func (s *destSim) finish(name string, back []*simGroup) []GroupDestination {
	d := s.domains[name]
	s.setState(d, simUpgraded)
	var out []GroupDestination
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
	return out
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
