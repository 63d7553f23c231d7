package eviction

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/udrain/udrain"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// Steering says how a rollout steers evicted work away from the domains it
// has not upgraded yet.
type Steering string

// The steering modes of a rollout.
const (
	// SteerAuto (the default) taints the nodes of pending domains
	// NoSchedule while the rollout's simulation finds upgraded room (an
	// upgraded domain, or one outside the rollout) for every pod the
	// domains in flight evict, groups and other pods alike, and
	// PreferNoSchedule while it does not. With the room, nothing evicted
	// lands on a pending domain: PreferNoSchedule alone is a score, and
	// kube-scheduler scores only a sample of the feasible nodes of a
	// large cluster (percentageOfNodesToScore), so a sample without
	// upgraded nodes puts a pod on a pending one, to be moved again.
	// Without the room, no pod waits because of the taint. The effect is
	// decided as each domain starts (and as one in flight is uncordoned),
	// and a change is one patch per pending node. While it is
	// NoSchedule, new pods that fit no upgraded node (a scale-up beyond
	// the room, a DaemonSet created during the rollout) wait for their
	// node's domain, as with SteerStrict.
	SteerAuto Steering = "Auto"
	// SteerPreferUpgraded taints the nodes of pending domains
	// PreferNoSchedule: the scheduler puts evicted pods on upgraded nodes
	// when they fit and when it scores them (it scores a sample of the
	// nodes of a large cluster), and on a pending node otherwise. No pod
	// waits because of it.
	SteerPreferUpgraded Steering = "PreferUpgraded"
	// SteerStrict taints them NoSchedule: an evicted group that finds no
	// room in an upgraded domain waits, Pending, until its own domain is
	// upgraded and uncordoned, rather than land on a pending domain and
	// be disrupted again. Its downtime is then the whole drain and
	// upgrade of its domain; new pods of any workload (a scale-up, a new
	// DaemonSet's pods) cannot start on pending nodes either.
	SteerStrict Steering = "Strict"
	// SteerOff puts no taint: evicted pods go wherever the scheduler
	// finds room, pending domains included (kubectl drain's behaviour).
	SteerOff Steering = "Off"
)

// effect is the taint effect of s when the domains in flight find
// upgraded room for every pod they evict (roomy) or not; empty for
// SteerOff.
func (s Steering) effect(roomy bool) corev1.TaintEffect {
	switch s {
	case SteerPreferUpgraded:
		return corev1.TaintEffectPreferNoSchedule
	case SteerStrict:
		return corev1.TaintEffectNoSchedule
	case SteerAuto, "":
		if roomy {
			return corev1.TaintEffectNoSchedule
		}
		return corev1.TaintEffectPreferNoSchedule
	}
	return ""
}

func (s Steering) settle() (Steering, error) {
	switch s {
	case "":
		return SteerAuto, nil
	case SteerAuto, SteerPreferUpgraded, SteerStrict, SteerOff:
		return s, nil
	}
	return s, configError("RolloutOptions.Steering", "%q is not a steering mode; use %s (default), %s, %s or %s", s, SteerAuto, SteerPreferUpgraded, SteerStrict, SteerOff)
}

// hasPendingTaint reports whether the node carries udrain's pending-upgrade
// taint, of any rollout.
func hasPendingTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == udrain.PendingUpgradeTaint })
}

// withoutPendingTaint returns taints without udrain's pending-upgrade taint.
func withoutPendingTaint(taints []corev1.Taint) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == udrain.PendingUpgradeTaint })
}

// withPendingTaint returns taints with udrain's pending-upgrade taint for
// rollout id, replacing one of another effect or rollout.
func withPendingTaint(taints []corev1.Taint, id string, effect corev1.TaintEffect) []corev1.Taint {
	return append(withoutPendingTaint(taints), corev1.Taint{Key: udrain.PendingUpgradeTaint, Value: id, Effect: effect})
}

// taintsPatch is a strategic merge patch that sets fields (a patch's
// top-level map, may be nil) and the node's taints to taints. The taint
// list is atomic (the API replaces it whole), so the patch carries the
// node's resourceVersion: a taint another controller added meanwhile is
// not lost; the patch is refused with a conflict instead, and made again
// from the node as it is then.
func taintsPatch(fields map[string]any, node *corev1.Node, taints []corev1.Taint) []byte {
	// fields is shared by concurrent patches: copy what is changed.
	p := maps.Clone(fields)
	if p == nil {
		p = map[string]any{}
	}
	meta := map[string]any{}
	if m, ok := p["metadata"].(map[string]any); ok {
		maps.Copy(meta, m)
	}
	meta["resourceVersion"] = node.ResourceVersion
	p["metadata"] = meta
	spec := map[string]any{}
	if m, ok := p["spec"].(map[string]any); ok {
		maps.Copy(spec, m)
	}
	if taints == nil {
		taints = []corev1.Taint{}
	}
	spec["taints"] = taints
	p["spec"] = spec
	b, _ := json.Marshal(p)
	return b
}

// patchTaints patches a node's taints to change(taints) together with
// fields (a strategic merge patch's top-level map; nil: none), starting
// from node (the view's copy; nil: read it); on a conflict it reads the
// node and tries again. A node whose taints change leaves unchanged is
// patched with fields alone (nothing is sent when fields is nil). A node
// that is gone is not an error (false).
func (d *Drainer) patchTaints(ctx context.Context, emit func(Event), what, name string, node *corev1.Node, fields map[string]any, change func([]corev1.Taint) []corev1.Taint) (bool, error) {
	const attempts = 5
	for i := 0; ; i++ {
		if node == nil {
			n, err := d.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("%s node %s: %w", what, name, err)
			}
			node = n
		}
		taints := change(node.Spec.Taints)
		if slices.EqualFunc(taints, node.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) {
			if fields == nil {
				return true, nil
			}
			b, _ := json.Marshal(fields)
			return d.patchNode(ctx, emit, what, name, b, metav1.PatchOptions{})
		}
		ok, err := d.patchNode(ctx, emit, what, name, taintsPatch(fields, node, taints), metav1.PatchOptions{})
		if err == nil || !apierrors.IsConflict(err) || i+1 == attempts {
			return ok, err
		}
		klog.FromContext(ctx).V(2).Info("Node changed since it was read; reading it again", "node", name, "what", what)
		node = nil
	}
}

// nodeLookup returns a node as a view (or a list) has it.
type nodeLookup func(name string) (*corev1.Node, bool)

// setPendingTaints puts the pending-upgrade taint of rollout id on the
// named nodes that do not carry it yet, concurrently, and returns those it
// changed.
func (d *Drainer) setPendingTaints(ctx context.Context, emit func(Event), lookup nodeLookup, names []string, id string, effect corev1.TaintEffect) ([]string, error) {
	done := make([]bool, len(names))
	err := forEach(ctx, d.s.Concurrency, names, func(ctx context.Context, i int, name string) error {
		n, ok := lookup(name)
		if !ok {
			return nil
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == udrain.PendingUpgradeTaint && t.Value == id && t.Effect == effect
		}) {
			return nil
		}
		changed, err := d.patchTaints(ctx, emit, "taint", name, n, nil, func(t []corev1.Taint) []corev1.Taint { return withPendingTaint(t, id, effect) })
		done[i] = changed
		return err
	})
	return selected(names, done), err
}

// clearPendingTaints removes the pending-upgrade taint from the named
// nodes that carry it, concurrently, and returns those it changed.
func (d *Drainer) clearPendingTaints(ctx context.Context, emit func(Event), lookup nodeLookup, names []string) ([]string, error) {
	done := make([]bool, len(names))
	err := forEach(ctx, d.s.Concurrency, names, func(ctx context.Context, i int, name string) error {
		n, ok := lookup(name)
		if !ok || !hasPendingTaint(n) {
			return nil
		}
		changed, err := d.patchTaints(ctx, emit, "untaint", name, n, nil, withoutPendingTaint)
		done[i] = changed
		return err
	})
	return selected(names, done), err
}

func selected(names []string, ok []bool) []string {
	var out []string
	for i, n := range names {
		if ok[i] {
			out = append(out, n)
		}
	}
	return out
}
