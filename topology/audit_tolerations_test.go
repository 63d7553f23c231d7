package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
)

// TestAuditToleratesEverything: a group member that tolerates every
// taint (operator Exists, no key) ignores a cordon and udrain's
// pending-upgrade taint; keyed tolerations, and tolerating every taint of
// another effect, are fine.
func TestAuditToleratesEverything(t *testing.T) {
	nodes := []corev1.Node{node("a1", "ud-a"), node("b1", "ud-b")}
	pdbs := []policyv1.PodDisruptionBudget{pdb("inf", "w-leaders", &metav1.LabelSelector{MatchLabels: map[string]string{LWSWorkerIndexLabel: "0"}})}
	tolerating := func(p corev1.Pod, ts ...corev1.Toleration) corev1.Pod {
		p.Spec.Tolerations = ts
		return p
	}
	all := corev1.Toleration{Operator: corev1.TolerationOpExists}
	type finding struct {
		Code     FindingCode
		Severity udrain.Severity
		Group    string
		Domains  []string
		Pods     []string
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want []finding
	}{
		{"keyed tolerations", []corev1.Pod{
			tolerating(lws("inf", "w", "0", "0", "a1", "2"), corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}),
			tolerating(lws("inf", "w", "0", "1", "a1", "2"), corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
		}, nil},
		{"every taint, every effect", []corev1.Pod{
			tolerating(lws("inf", "w", "0", "0", "a1", "2"), all),
			tolerating(lws("inf", "w", "0", "1", "a1", "2"), all),
			lws("inf", "w", "1", "0", "b1", "1"),
		}, []finding{{FindingToleratesEverything, udrain.SeverityWarning, "w-0", []string{"ud-a"}, []string{"w-0", "w-0-1"}}}},
		{"every NoSchedule taint: a cordon too", []corev1.Pod{
			lws("inf", "w", "0", "0", "a1", "2"),
			tolerating(lws("inf", "w", "0", "1", "a1", "2"), corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
		}, []finding{{FindingToleratesEverything, udrain.SeverityWarning, "w-0", []string{"ud-a"}, []string{"w-0-1"}}}},
		{"every NoExecute taint only: the scheduler still honours a cordon", []corev1.Pod{
			tolerating(lws("inf", "w", "0", "0", "a1", "1"), corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
		}, nil},
		{"an ordinary pod is not a group's", []corev1.Pod{
			tolerating(pod("inf", "agent", "a1", withLabels("app", "agent")), all),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := BuildLayout(nodes, LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ptrs := PodPointers(tc.pods)
			var got []finding
			for _, f := range Audit(AuditInput{Layout: l, Groups: FindGroups(ptrs), PDBs: pdbs, Pods: ptrs}).Findings {
				if f.Code != FindingToleratesEverything {
					continue
				}
				if f.Message == "" {
					t.Errorf("finding %s has no message", f.Code)
				}
				got = append(got, finding{f.Code, f.Severity, f.Group, f.Domains, f.Pods})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
