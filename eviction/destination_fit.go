package eviction

import (
	"maps"
	"slices"

	"github.com/go-logr/logr"
	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Where the destination simulation finds room for a group: the pods'
// requests, the nodes' taints and affinity, and anti-affinity on the
// domain label.

// room counts how many groups like g fit in d now, g included (0 for a
// simulation that does not count, noRoom).
func (s *destSim) room(g *simGroup, d *simDomain) int {
	if s.noRoom {
		return 0
	}
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
			aff = nodeaffinity.GetRequiredNodeAffinity(s.unpinned(p))
			s.affinity[p] = aff
		}
		ok = mayRunOn(n.node, p, &aff)
	}
	s.static[key] = ok
	return ok
}

// unpinned is p, or for a LeaderWorkerSet worker whose nodeSelector
// names a domain, p without it: with exclusive topology, LWS writes the
// leader's domain into its workers' nodeSelector, and a group recreated
// after an eviction follows its new leader wherever that lands.
func (s *destSim) unpinned(p *corev1.Pod) *corev1.Pod {
	key := s.in.layout.LabelKey
	if w, ok := p.Labels[topology.LWSWorkerIndexLabel]; !ok || w == "0" || p.Spec.NodeSelector[key] == "" {
		return p
	}
	q := *p
	q.Spec.NodeSelector = maps.Clone(p.Spec.NodeSelector)
	delete(q.Spec.NodeSelector, key)
	return &q
}

// mayRunOn reports whether node may take pod p once the rollout is done
// with it: p tolerates its taints but the cordon's, udrain's own and
// PreferNoSchedule ones, and matches its required node affinity and node
// selector (aff, if given, is p's, made once by the caller).
func mayRunOn(node *corev1.Node, p *corev1.Pod, aff *nodeaffinity.RequiredNodeAffinity) bool {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Key == udrain.PendingUpgradeTaint || t.Key == corev1.TaintNodeUnschedulable || t.Effect == corev1.TaintEffectPreferNoSchedule {
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
	if a := p.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	if ts, ok := s.anti[p]; ok {
		return ts
	}
	var out []antiTerm
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey != s.in.layout.LabelKey || t.LabelSelector == nil {
				continue
			}
			sel, ok := s.selectors[t.LabelSelector]
			if !ok {
				// Pods of one shape share their terms (podcache): one
				// parse each.
				var err error
				if sel, err = metav1.LabelSelectorAsSelector(t.LabelSelector); err != nil {
					sel = nil
				}
				s.selectors[t.LabelSelector] = sel
			}
			if sel == nil {
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
	if d.repelling == 0 && !s.repels(g) {
		return false
	}
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

// partRoom reports whether a pod of g, a group that waits for its own
// domain, fits on a node of d by the room d has without the pods the
// simulation moved in (evicted groups' pods, not there yet): the
// scheduler may put it there ahead of them, and g's pods, split between
// domains, would wait for each other. Anti-affinity that keeps g out of
// d (a group of its workload in d, moved in or not: one of them takes
// d) rules it out.
func (s *destSim) partRoom(g *simGroup, d *simDomain) bool {
	if s.blocked(g, d) {
		return false
	}
	base := map[*simNode]map[corev1.ResourceName]int64{}
	for _, n := range d.nodes {
		for _, q := range n.pods {
			if q.Spec.NodeName == n.node.Name {
				continue
			}
			f, ok := base[n]
			if !ok {
				f = cloneFree(n.free)
				base[n] = f
			}
			for r, v := range s.requestsOf(q) {
				f[r] += v
			}
			if n.countPods {
				f[corev1.ResourcePods] += 1000
			}
		}
	}
	for _, p := range g.pods {
		free := make(map[*simNode]map[corev1.ResourceName]int64, len(base))
		for n, f := range base {
			free[n] = cloneFree(f)
		}
		if s.fitPod(p, d, free) != nil {
			return true
		}
	}
	return false
}
