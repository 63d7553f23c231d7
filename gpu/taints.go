package gpu

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// keepsPodsOff reports whether a taint keeps pods without a matching
// toleration off the node (PreferNoSchedule only discourages them).
func keepsPodsOff(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// lifecycleTaint reports whether a taint marks a passing state of the node
// (not ready, cordoned, being scaled down or replaced) rather than what the
// node is for.
func lifecycleTaint(t *corev1.Taint) bool {
	switch t.Key {
	case "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler",
		"karpenter.sh/disrupted", "karpenter.sh/disruption", "karpenter.sh/unregistered":
		return true
	}
	return strings.HasPrefix(t.Key, "node.kubernetes.io/") || strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/")
}

// dedicatedTaints returns the taints that reserve the node for pods that
// tolerate them.
func dedicatedTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for i := range taints {
		if t := &taints[i]; keepsPodsOff(t) && !lifecycleTaint(t) {
			out = append(out, *t)
		}
	}
	return out
}
