package health_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

func leaders(n int, change ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := pod(0, change...)
		p.Name = "vllm-" + string(rune('0'+i))
		out = append(out, p)
	}
	return out
}

func pdb(change func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	min := intstr.FromInt32(2)
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "leaders", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			topology.LWSNameLabel: "vllm", topology.LWSWorkerIndexLabel: "0"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3},
	}
	if change != nil {
		change(b)
	}
	return b
}

func TestBudget(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	stale := now.Add(90 * time.Second)
	counts := health.BudgetCounts{DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}
	for _, tc := range []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		pods []*corev1.Pod
		want health.BudgetStatus
	}{{
		name: "caught up",
		pdb:  pdb(nil), pods: leaders(3),
		want: health.BudgetStatus{Namespace: "ns", Name: "leaders", BudgetCounts: counts, ReadyPods: 3, Healthy: true, Reason: health.BudgetCaughtUp},
	}, {
		name: "status behind the Ready pods",
		pdb:  pdb(func(b *policyv1.PodDisruptionBudget) { b.Status.CurrentHealthy = 2 }), pods: leaders(3),
		want: health.BudgetStatus{Namespace: "ns", Name: "leaders", BudgetCounts: health.BudgetCounts{DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3},
			ReadyPods: 3, Reason: health.BudgetBehind, Message: "status counts 2 healthy, the pods show 3"},
	}, {
		name: "not observed",
		pdb:  pdb(func(b *policyv1.PodDisruptionBudget) { b.Generation = 2 }), pods: leaders(3),
		want: health.BudgetStatus{Namespace: "ns", Name: "leaders", BudgetCounts: counts, Reason: health.BudgetNotObserved, Message: "status not yet observed for the current spec"},
	}, {
		name: "terminating and unready pods do not count",
		pdb:  pdb(nil), pods: append(leaders(1), append(leaders(1, terminating), leaders(1, notReady)...)...),
		want: health.BudgetStatus{Namespace: "ns", Name: "leaders", BudgetCounts: counts, ReadyPods: 1, Healthy: true, Reason: health.BudgetCaughtUp},
	}, {
		name: "a stale disruptedPods entry",
		pdb: pdb(func(b *policyv1.PodDisruptionBudget) {
			b.Status.CurrentHealthy = 2
			b.Status.DisruptedPods = map[string]metav1.Time{"vllm-1": metav1.NewTime(now.Add(-30 * time.Second))}
		}),
		pods: leaders(3),
		want: health.BudgetStatus{Namespace: "ns", Name: "leaders", BudgetCounts: health.BudgetCounts{DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3},
			ReadyPods: 3, Reason: health.BudgetBehind, StaleUntil: &stale,
			Message: "status counts 2 healthy, the pods show 3; the disruption controller still counts vllm-1 as being evicted (status.disruptedPods) until 10:01:30"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := health.Budget(tc.pdb, tc.pods, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Budget (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBudgetRef checks that a budget's reference is the same however it
// is reached: from the object, from its judgment, and as map key and text.
func TestBudgetRef(t *testing.T) {
	obj := pdb(nil)
	status := health.Budget(obj, leaders(3), time.Now())
	tests := []struct {
		name string
		got  health.BudgetRef
	}{
		{"of the object", health.BudgetRefOf(obj)},
		{"of its status", status.Ref()},
	}
	want := health.BudgetRef{Namespace: "ns", PDB: "leaders"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got := tt.got.String(); got != "ns/leaders" {
				t.Errorf("String() = %q, want %q", got, "ns/leaders")
			}
		})
	}
}
