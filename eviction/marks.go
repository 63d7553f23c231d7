package eviction

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// The marks a rollout leaves on the nodes of its domains, read back.

// cordonedByOther returns a *RetryError (ReasonInProgress) when a node of the domain
// carries another rollout's (or a drain's) cordon mark.
func cordonedByOther(nodes []corev1.Node, dom topology.Domain, id string) error {
	for _, n := range domainNodes(nodes, dom) {
		if by := n.Annotations[udrain.CordonedByAnnotation]; by != "" && by != id {
			return &RetryError{Reason: ReasonInProgress, Domain: dom.Name, Node: n.Name, By: by, ID: id}
		}
	}
	return nil
}

// cordonedBy reports whether a node of the domain was cordoned by this
// rollout: a previous run stopped while draining it.
func cordonedBy(nodes []corev1.Node, dom topology.Domain, id string) bool {
	for _, n := range domainNodes(nodes, dom) {
		if n.Annotations[udrain.CordonedByAnnotation] == id {
			return true
		}
	}
	return false
}

// upgradedBy reports whether the rollout id upgraded the domain: every
// node carries its upgraded mark, or is still cordoned by it while another
// node of the domain carries the mark (markUpgraded marks one node before
// the uncordon patches, which carry the mark, so a rollout stopped in the
// middle of the uncordon left the rest cordoned). A node with neither mark
// (one that joined the domain since) means not upgraded.
func upgradedBy(nodes []corev1.Node, dom topology.Domain, id string) bool {
	in := domainNodes(nodes, dom)
	marked := false
	for _, n := range in {
		switch {
		case n.Annotations[udrain.UpgradedByAnnotation] == id:
			marked = true
		case n.Annotations[udrain.CordonedByAnnotation] == id:
		default:
			return false
		}
	}
	return marked
}

// mustDomain returns the domain name of a layout already checked to have
// it.
func mustDomain(l *topology.Layout, name string) topology.Domain {
	d, _ := l.Domain(name)
	return d
}

// recoveredBy reports whether a node of the domain carries the
// rollout's recovered mark: its recovery ended.
func recoveredBy(nodes []corev1.Node, dom topology.Domain, id string) bool {
	for _, n := range domainNodes(nodes, dom) {
		if n.Annotations[udrain.RecoveredByAnnotation] == id {
			return true
		}
	}
	return false
}

// upgradedAt returns the latest time a node of the domain was marked
// upgraded at (zero if none says).
func upgradedAt(nodes []corev1.Node, dom topology.Domain) time.Time {
	var at time.Time
	for _, n := range domainNodes(nodes, dom) {
		if t, err := time.Parse(time.RFC3339Nano, n.Annotations[udrain.UpgradedAtAnnotation]); err == nil && t.After(at) {
			at = t
		}
	}
	return at
}
