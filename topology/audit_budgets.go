package topology

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain"
)

// FindingBudgetCountsControllers: a PodDisruptionBudget whose allowance
// the disruption controller scales by the pods' controllers
// (maxUnavailable, or a percentage minAvailable) selects pods of several
// controllers, such as leaders with a StatefulSet each. It sums the scale
// of the controllers of the pods that exist: while one controller's pods
// are all gone (a group evicted and not yet recreated), that controller is
// not counted, and the budget allows more disruptions than it means (4
// groups with maxUnavailable 2 were seen counted as 3, letting a third
// group go). A warning: use an integer minAvailable, or one controller
// over the leaders (as LeaderWorkerSet has).
const FindingBudgetCountsControllers FindingCode = "BudgetCountsControllers"

// scaledByControllers says whether the disruption controller takes pdb's
// expected pods from the scale of their controllers.
func scaledByControllers(pdb *policyv1.PodDisruptionBudget) bool {
	return pdb.Spec.MaxUnavailable != nil || pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.String
}

// auditBudgetCounts finds the budgets scaled by their pods' controllers
// that select pods of more than one controller.
func auditBudgetCounts(l *Layout, idx *PDBIndex, pods []*corev1.Pod) []Finding {
	type seen struct {
		pdb         *policyv1.PodDisruptionBudget
		controllers map[string]bool
		domains     map[string]bool
	}
	var order []*seen
	by := map[*policyv1.PodDisruptionBudget]*seen{}
	for _, p := range pods {
		for _, b := range idx.For(p) {
			if !scaledByControllers(b) {
				continue
			}
			s := by[b]
			if s == nil {
				s = &seen{pdb: b, controllers: map[string]bool{}, domains: map[string]bool{}}
				by[b] = s
				order = append(order, s)
			}
			if ref := metav1.GetControllerOf(p); ref != nil {
				s.controllers[ref.Kind+" "+ref.Name] = true
			}
			for _, d := range podDomains(l, p) {
				s.domains[d] = true
			}
		}
	}
	var out []Finding
	for _, s := range order {
		if len(s.controllers) < 2 {
			continue
		}
		rule := "maxUnavailable " + s.pdb.Spec.MaxUnavailable.String()
		if s.pdb.Spec.MaxUnavailable == nil {
			rule = "minAvailable " + s.pdb.Spec.MinAvailable.String()
		}
		ctrls := sortedKeys(s.controllers)
		domains := sortedKeys(s.domains)
		sort.Slice(domains, func(i, j int) bool { return NaturalLess(domains[i], domains[j]) })
		out = append(out, Finding{
			Code: FindingBudgetCountsControllers, Severity: udrain.SeverityWarning,
			Namespace: s.pdb.Namespace, PDBs: []string{s.pdb.Name}, Domains: domains,
			Message: fmt.Sprintf("PodDisruptionBudget %s/%s (%s) selects pods of %d controllers (%s): the disruption controller counts its expected pods from the scale of the controllers of the pods that exist, so while one controller's pods are all gone it counts fewer and allows more disruptions than the budget means; use an integer minAvailable, or one controller over the pods it selects (udrain's parallel rollouts count from the spec, other drains do not)",
				s.pdb.Namespace, s.pdb.Name, rule, len(ctrls), abbreviate(ctrls, 3)),
		})
	}
	return out
}
