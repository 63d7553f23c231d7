package eviction

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Where the destination simulation puts the evicted pods of no group (a
// Deployment's, a StatefulSet's of one pod): each on its own, first fit,
// on upgraded room, so that the room they take is not given to groups
// too, and SteerAuto knows whether upgraded room takes them all.

// otherPlacement keeps, per controller and domain in a state, the first
// node not yet known to be full or closed for the controller's pods (its
// pods share a template): while a domain keeps its state, its room only
// shrinks as pods land (pods leave a domain as it starts draining), so
// the next pod of the controller starts there. A trial undone gives room
// back: the cursors are forgotten then.
type otherPlacement struct {
	cursor   map[otherCursor]int
	affinity map[types.UID]nodeaffinity.RequiredNodeAffinity
}

type otherCursor struct {
	controller types.UID
	domain     *simDomain
	state      simState
}

func (o *otherPlacement) forget() { o.cursor = nil }

// placeOther places p, evicted, where the scheduler would put its
// replacement first: an upgraded domain (or one outside the rollout) with
// room. It reports whether that room took it. A pod that finds none is
// left out: it lands on a domain not upgraded yet (and is evicted again
// there) or waits; either way it takes no room the model gives to
// groups (placed on the next pending domain, first fit, it would be
// carried from drain to drain, every domain evicting all before it). A
// pod without a controller is not replaced: it needs no room.
func (s *destSim) placeOther(p *corev1.Pod) bool {
	ref := controllerRef(p)
	if ref == nil {
		return true
	}
	return s.fitOther(p, ref.UID, simUpgraded, simOther) != nil
}

// fitOther adds p to the first node with room of the first candidate
// domain in one of the states, and returns the domain (nil: none).
func (s *destSim) fitOther(p *corev1.Pod, controller types.UID, states ...simState) *simDomain {
	o := &s.others
	if o.cursor == nil {
		o.cursor = map[otherCursor]int{}
	}
	if o.affinity == nil {
		o.affinity = map[types.UID]nodeaffinity.RequiredNodeAffinity{}
	}
	aff, ok := o.affinity[controller]
	if !ok {
		aff = nodeaffinity.GetRequiredNodeAffinity(p)
		o.affinity[controller] = aff
	}
	req := s.requestsOf(p)
	for _, d := range s.candidates {
		if !stateIn(d.state, states) {
			continue
		}
		key := otherCursor{controller, d, d.state}
		for i := o.cursor[key]; i < len(d.nodes); i++ {
			n := d.nodes[i]
			if n.closed || !fitsFree(n, req) || !mayRunOn(n.node, p, &aff) {
				continue
			}
			o.cursor[key] = i
			s.add(p, n)
			return d
		}
		o.cursor[key] = len(d.nodes)
	}
	return nil
}

// fitsFree reports whether n's free room takes requests req and a pod.
func fitsFree(n *simNode, req map[corev1.ResourceName]int64) bool {
	if n.countPods && n.free[corev1.ResourcePods] < 1000 {
		return false
	}
	for r, v := range req {
		if n.free[r] < v {
			return false
		}
	}
	return true
}

func stateIn(st simState, states []simState) bool {
	for _, x := range states {
		if st == x {
			return true
		}
	}
	return false
}

// controllerRef is p's controller (metav1.GetControllerOf without its
// copy: the simulation asks it of every pod a domain evicts).
func controllerRef(p *corev1.Pod) *metav1.OwnerReference {
	for i := range p.OwnerReferences {
		if c := p.OwnerReferences[i].Controller; c != nil && *c {
			return &p.OwnerReferences[i]
		}
	}
	return nil
}
