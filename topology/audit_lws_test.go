package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain"
)

// goodLWS is a LeaderWorkerSet as the contract wants it: exclusive topology
// on the domain label, leaders gated in a leaderTemplate, LeaderCreated.
func goodLWS() LWSSpec {
	leader := corev1.PodTemplateSpec{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: GroupReadyGate}}}}
	return LWSSpec{Namespace: "ns", Name: "llm", Replicas: 3, Size: 4, StartupPolicy: "LeaderCreated", RestartPolicy: "RecreateGroupOnPodRestart",
		ExclusiveTopology: DefaultDomainLabel, LeaderTemplate: &leader}
}

func leaderBudget(selector map[string]string) policyv1.PodDisruptionBudget {
	two := intstr.FromInt32(2)
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-leaders"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: metav1.SetAsLabelSelector(selector)}}
}

func TestAuditLeaderWorkerSets(t *testing.T) {
	layout, err := BuildLayout([]corev1.Node{node("a", "ud-1"), node("b", "ud-2"), node("c", "ud-3")}, LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaders := leaderBudget(map[string]string{LWSNameLabel: "llm", LWSWorkerIndexLabel: "0"})
	type finding struct {
		Code     FindingCode
		Severity udrain.Severity
		Field    string // a part of the message: the field to fix
	}
	for _, tc := range []struct {
		name   string
		change func(*LWSSpec)
		pdbs   []policyv1.PodDisruptionBudget
		want   []finding
	}{
		{name: "as the contract wants", change: func(*LWSSpec) {}, pdbs: []policyv1.PodDisruptionBudget{leaders}},
		{name: "no budget", change: func(*LWSSpec) {},
			want: []finding{{FindingLWSBudget, udrain.SeverityWarning, "selector leaderworkerset.sigs.k8s.io/name=llm,leaderworkerset.sigs.k8s.io/worker-index=0 and minAvailable 2"}}},
		{name: "a budget over every pod", change: func(*LWSSpec) {}, pdbs: []policyv1.PodDisruptionBudget{leaderBudget(map[string]string{LWSNameLabel: "llm"})},
			want: []finding{{FindingLWSBudget, udrain.SeverityWarning, "selects its workers too"}}},
		{name: "exclusive on another key", change: func(w *LWSSpec) { w.ExclusiveTopology = "kubernetes.io/hostname" }, pdbs: []policyv1.PodDisruptionBudget{leaders},
			want: []finding{{FindingLWSPlacement, udrain.SeverityWarning, `metadata.annotations["leaderworkerset.sigs.k8s.io/exclusive-topology"] is "kubernetes.io/hostname"`}}},
		{name: "no placement", change: func(w *LWSSpec) { w.ExclusiveTopology = "" }, pdbs: []policyv1.PodDisruptionBudget{leaders},
			want: []finding{{FindingLWSPlacement, udrain.SeverityWarning, "set metadata.annotations"}}},
		{name: "leaders spread instead", change: func(w *LWSSpec) {
			w.ExclusiveTopology = ""
			w.LeaderTemplate.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: DefaultDomainLabel, WhenUnsatisfiable: corev1.DoNotSchedule, MaxSkew: 1}}
		}, pdbs: []policyv1.PodDisruptionBudget{leaders}},
		{name: "more groups than domains", change: func(w *LWSSpec) { w.Replicas = 5 }, pdbs: []policyv1.PodDisruptionBudget{leaders},
			want: []finding{{FindingLWSReplicas, udrain.SeverityError, "spec.replicas is 5"}}},
		{name: "LeaderReady with gated leaders", change: func(w *LWSSpec) { w.StartupPolicy = "LeaderReady" }, pdbs: []policyv1.PodDisruptionBudget{leaders},
			want: []finding{{FindingLWSStartup, udrain.SeverityError, "use spec.startupPolicy LeaderCreated"}}},
		{name: "LeaderReady without a gate is fine", change: func(w *LWSSpec) {
			w.StartupPolicy = "LeaderReady"
			w.LeaderTemplate.Spec.ReadinessGates = nil
			w.LeaderTemplate.Spec.Containers = []corev1.Container{{Name: "vllm", ReadinessProbe: &corev1.Probe{}}}
		}, pdbs: []policyv1.PodDisruptionBudget{leaders}},
		{name: "the gate on the workers too", change: func(w *LWSSpec) { w.WorkerTemplate, w.LeaderTemplate = *w.LeaderTemplate, nil }, pdbs: []policyv1.PodDisruptionBudget{leaders},
			want: []finding{{FindingLWSReadiness, udrain.SeverityError, "move the gate into spec.leaderWorkerTemplate.leaderTemplate"}}},
		{name: "leaders not gated", change: func(w *LWSSpec) { w.LeaderTemplate.Spec.ReadinessGates = nil }, pdbs: []policyv1.PodDisruptionBudget{leaders},
			want: []finding{{FindingLWSReadiness, udrain.SeverityWarning, "spec.leaderWorkerTemplate.leaderTemplate declares neither"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := goodLWS()
			tc.change(&w)
			var got []finding
			for _, f := range AuditLeaderWorkerSets(layout, []LWSSpec{w}, NewPDBIndex(tc.pdbs)) {
				if f.Workload != "llm" || f.Namespace != "ns" || !strings.HasPrefix(f.Message, "LeaderWorkerSet ns/llm: ") {
					t.Errorf("finding %+v does not name the LeaderWorkerSet", f)
				}
				field := ""
				for _, want := range tc.want {
					if strings.Contains(f.Message, want.Field) {
						field = want.Field
					}
				}
				if field == "" {
					field = f.Message
				}
				got = append(got, finding{f.Code, f.Severity, field})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
