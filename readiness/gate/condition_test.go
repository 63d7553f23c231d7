package gate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

var testNow = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// verdict is the part of a condition that ConditionFor decides.
type verdict struct {
	Status  corev1.ConditionStatus
	Reason  health.Reason
	Message string
}

func verdictOf(c corev1.PodCondition) verdict {
	return verdict{c.Status, health.Reason(c.Reason), c.Message}
}

func onlyGroup(t *testing.T, pods []*corev1.Pod, groupers ...topology.Grouper) *topology.Group {
	t.Helper()
	groups := topology.FindGroups(pods, groupers...)
	if len(groups) != 1 {
		t.Fatalf("want 1 group, got %d", len(groups))
	}
	return &groups[0]
}

func TestConditionFor(t *testing.T) {
	labelGrouping := topology.ByLabel(topology.LabelGrouping{GroupLabel: "group", LeaderLabel: "role", LeaderValue: "leader", SizeAnnotation: topology.LWSSizeAnnotation})
	byLabel := func(role string) podOption {
		return func(p *corev1.Pod) {
			p.Labels = map[string]string{"group": "g", "role": role}
		}
	}
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		groupers []topology.Grouper
		want     verdict
	}{{
		name: "all healthy",
		pods: lwsGroup("vllm", 0, 4, nil),
		want: verdict{corev1.ConditionTrue, health.ReasonGroupReady, "4/4 members healthy"},
	}, {
		name: "the leader's own Ready is not used",
		pods: lwsGroup("vllm", 0, 2, map[int][]podOption{0: {notReady}}),
		want: verdict{corev1.ConditionTrue, health.ReasonGroupReady, "2/2 members healthy"},
	}, {
		name: "a Ready leader whose containers are not ready",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{0: {ready, containersNotReady}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0 containers not ready; 3/4 members healthy"},
	}, {
		name: "a worker's ContainersReady does not stand for its Ready",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{2: {notReady}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-2 not ready; 3/4 members healthy"},
	}, {
		name: "a Ready worker being deleted",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{1: {terminating}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberTerminating, "vllm-0-1 terminating; 3/4 members healthy"},
	}, {
		name: "a pending worker not scheduled yet",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{3: {phase(corev1.PodPending), notReady}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberUnscheduled, "vllm-0-3 Pending; 3/4 members healthy"},
	}, {
		name: "a pending worker on its node",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{3: {phase(corev1.PodPending), notReady, func(p *corev1.Pod) { p.Spec.NodeName = "n1" }}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberNotRunning, "vllm-0-3 Pending; 3/4 members healthy"},
	}, {
		name: "a failed worker that still says Ready",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{3: {phase(corev1.PodFailed)}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberNotRunning, "vllm-0-3 Failed; 3/4 members healthy"},
	}, {
		name: "a worker without a phase",
		pods: lwsGroup("vllm", 0, 2, map[int][]podOption{1: {phase("")}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberUnscheduled, "vllm-0-1 Pending; 1/2 members healthy"},
	}, {
		name: "short of size: the missing worker is named",
		pods: lwsGroup("vllm", 0, 4, nil, 3),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-3 missing; 3/4 members healthy"},
	}, {
		name: "short of size by two",
		pods: lwsGroup("vllm", 0, 4, nil, 1, 3),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-1 missing, vllm-0-3 missing; 2/4 members healthy"},
	}, {
		name: "the worst problem gives the reason and comes first",
		pods: lwsGroup("vllm", 0, 4, map[int][]podOption{1: {notReady}, 2: {terminating}}, 3),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-3 missing, vllm-0-2 terminating, vllm-0-1 not ready; 1/4 members healthy"},
	}, {
		name: "members in natural order, the rest counted",
		pods: lwsGroup("vllm", 0, 12, map[int][]podOption{2: {notReady}, 3: {notReady}, 10: {notReady}, 11: {notReady}, 9: {notReady}}),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-2 not ready, vllm-0-3 not ready, vllm-0-9 not ready and 2 more; 7/12 members healthy"},
	}, {
		name: "a missing member of a group without names is counted",
		pods: []*corev1.Pod{
			lwsPod("x", 0, 0, 3, byLabel("leader")),
			lwsPod("x", 0, 1, 3, byLabel("worker")),
		},
		groupers: []topology.Grouper{labelGrouping},
		want:     verdict{corev1.ConditionFalse, health.ReasonMemberMissing, "1 member missing; 2/3 members healthy"},
	}, {
		name: "a LeaderWorkerSet member without a worker index: missing ones are counted",
		pods: lwsGroup("vllm", 0, 3, map[int][]podOption{1: {withLabel(topology.LWSWorkerIndexLabel, "one")}}, 2),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberMissing, "1 member missing; 2/3 members healthy"},
	}, {
		name: "more members than the size: all must be healthy",
		pods: append(lwsGroup("vllm", 0, 2, nil), lwsPod("vllm", 0, 2, 2, notReady)),
		want: verdict{corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-2 not ready; 2/3 members healthy"},
	}, {
		name: "a Ray cluster (size unknown) with every pod healthy",
		pods: []*corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "ray-head", Labels: map[string]string{topology.RayClusterLabel: "ray", topology.RayNodeTypeLabel: "head"}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}}},
			lwsPod("x", 0, 1, 0, func(p *corev1.Pod) {
				p.Name = "ray-worker-a"
				p.Labels = map[string]string{topology.RayClusterLabel: "ray", topology.RayNodeTypeLabel: topology.RayNodeTypeWorker}
			}),
		},
		want: verdict{corev1.ConditionTrue, health.ReasonGroupReady, "2/2 members healthy"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := onlyGroup(t, tt.pods, tt.groupers...)
			got := ConditionFor(g, testNow)
			if diff := cmp.Diff(tt.want, verdictOf(got)); diff != "" {
				t.Errorf("ConditionFor (-want +got):\n%s", diff)
			}
			if got.Type != ConditionType || !got.LastTransitionTime.Time.Equal(testNow) {
				t.Errorf("ConditionFor gave type %q, lastTransitionTime %v; want %q, %v", got.Type, got.LastTransitionTime, ConditionType, testNow)
			}
		})
	}
}

func TestConditionForEmptyGroup(t *testing.T) {
	got := verdictOf(ConditionFor(&topology.Group{ID: topology.GroupID{Kind: topology.KindLabel, Namespace: testNamespace, Name: "g"}}, testNow))
	want := verdict{corev1.ConditionFalse, health.ReasonNoMembers, "no member exists; 0/0 members healthy"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConditionFor of an empty group (-want +got):\n%s", diff)
	}
}

func TestDeclaresGateAndCurrentCondition(t *testing.T) {
	cond := corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionTrue, Reason: string(health.ReasonGroupReady)}
	leader := lwsPod("vllm", 0, 0, 2, withCondition(cond))
	if !DeclaresGate(leader) {
		t.Error("DeclaresGate(leader with the gate) = false")
	}
	if DeclaresGate(lwsPod("vllm", 0, 0, 2, noGate)) {
		t.Error("DeclaresGate(leader without the gate) = true")
	}
	if diff := cmp.Diff(&cond, CurrentCondition(leader)); diff != "" {
		t.Errorf("CurrentCondition (-want +got):\n%s", diff)
	}
	if got := CurrentCondition(lwsPod("vllm", 0, 1, 2)); got != nil {
		t.Errorf("CurrentCondition of a pod without it = %v, want nil", got)
	}
}
