package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain"
)

// TestAuditBudgetCountsControllers: a budget over leaders that each have
// a controller of their own is counted wrong by the disruption controller
// when it scales by the controllers (maxUnavailable, a percentage
// minAvailable); an integer minAvailable, or one controller over the
// leaders, is counted right.
func TestAuditBudgetCountsControllers(t *testing.T) {
	nodes := []corev1.Node{node("a1", "ud-a"), node("b1", "ud-b"), node("c1", "ud-c")}
	owned := func(p corev1.Pod, kind, name string) corev1.Pod {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: "uid-" + "name", Controller: ptrTo(true)}}
		return p
	}
	perGroup := []corev1.Pod{
		owned(lws("inf", "w", "0", "0", "a1", "1"), "StatefulSet", "w-0"),
		owned(lws("inf", "w", "1", "0", "b1", "1"), "StatefulSet", "w-1"),
		owned(lws("inf", "w", "2", "0", "c1", "1"), "StatefulSet", "w-2"),
	}
	shared := []corev1.Pod{
		owned(lws("inf", "w", "0", "0", "a1", "1"), "StatefulSet", "w"),
		owned(lws("inf", "w", "1", "0", "b1", "1"), "StatefulSet", "w"),
		owned(lws("inf", "w", "2", "0", "c1", "1"), "StatefulSet", "w"),
	}
	leaders := &metav1.LabelSelector{MatchLabels: map[string]string{LWSWorkerIndexLabel: "0"}}
	budget := func(minAvailable, maxUnavailable *intstr.IntOrString) []policyv1.PodDisruptionBudget {
		b := pdb("inf", "w-leaders", leaders)
		b.Spec.MinAvailable, b.Spec.MaxUnavailable = minAvailable, maxUnavailable
		return []policyv1.PodDisruptionBudget{b}
	}
	two, half := intstr.FromInt32(2), intstr.FromString("50%")
	type finding struct {
		Code     FindingCode
		Severity udrain.Severity
		PDBs     []string
		Domains  []string
	}
	want := []finding{{FindingBudgetCountsControllers, udrain.SeverityWarning, []string{"w-leaders"}, []string{"ud-a", "ud-b", "ud-c"}}}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		pdbs []policyv1.PodDisruptionBudget
		only []string
		want []finding
	}{
		{"maxUnavailable over a controller per leader", perGroup, budget(nil, &two), nil, want},
		{"a percentage minAvailable over a controller per leader", perGroup, budget(&half, nil), nil, want},
		{"an integer minAvailable", perGroup, budget(&two, nil), nil, nil},
		{"maxUnavailable over one controller", shared, budget(nil, &two), nil, nil},
		{"reported for a domain it touches", perGroup, budget(nil, &two), []string{"ud-b"}, want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := BuildLayout(nodes, LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ptrs := PodPointers(tc.pods)
			var got []finding
			for _, f := range Audit(AuditInput{Layout: l, Groups: FindGroups(ptrs), PDBs: tc.pdbs, Pods: ptrs, Only: tc.only}).Findings {
				if f.Code != FindingBudgetCountsControllers {
					continue
				}
				if f.Message == "" {
					t.Errorf("finding %s has no message", f.Code)
				}
				got = append(got, finding{f.Code, f.Severity, f.PDBs, f.Domains})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
