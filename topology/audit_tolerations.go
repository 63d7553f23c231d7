package topology

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain"
)

// FindingToleratesEverything: pods of a group tolerate every taint (a
// toleration with operator Exists and no key), so they ignore a cordon
// (the scheduler's node.kubernetes.io/unschedulable taint) and udrain's
// pending-upgrade taint: an evicted pod can be placed back on a node
// being drained, or on one not upgraded yet, and is disrupted again.
const FindingToleratesEverything FindingCode = "ToleratesEverything"

// toleratesEverything reports whether a toleration tolerates every taint
// that keeps pods off a node at scheduling time: operator Exists with no
// key, for every effect or NoSchedule.
func toleratesEverything(t corev1.Toleration) bool {
	return t.Key == "" && t.Operator == corev1.TolerationOpExists &&
		(t.Effect == "" || t.Effect == corev1.TaintEffectNoSchedule)
}

// auditTolerations finds, per group, the members that tolerate every
// taint.
func auditTolerations(l *Layout, groups []Group) []Finding {
	var out []Finding
	for i := range groups {
		g := &groups[i]
		var pods []string
		for _, p := range g.Members {
			for _, t := range p.Spec.Tolerations {
				if toleratesEverything(t) {
					pods = append(pods, p.Name)
					break
				}
			}
		}
		if len(pods) == 0 {
			continue
		}
		out = append(out, Finding{
			Code: FindingToleratesEverything, Severity: udrain.SeverityWarning,
			Namespace: g.ID.Namespace, Group: g.ID.Name, Workload: g.Workload,
			Pods: pods, Domains: groupDomains(l, g),
			Message: fmt.Sprintf("%d pod(s) of group %s (%s) tolerate every taint (operator: Exists with no key): they ignore a cordon and udrain's udrain.dev/upgrade-pending taint, so an evicted pod can land back on a node being drained or not upgraded yet and be disrupted again; tolerate only the taints they need, by key (e.g. key: nvidia.com/gpu, operator: Exists)",
				len(pods), g.ID, abbreviate(pods, 5)),
		})
	}
	return out
}
