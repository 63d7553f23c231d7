package kube_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

var yes = true

func TestLWSPod(t *testing.T) {
	ready := []corev1.PodCondition{
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}
	lwsLabels := func(lws, g, w string) map[string]string {
		return map[string]string{topology.LWSNameLabel: lws, topology.LWSGroupIndexLabel: g, topology.LWSWorkerIndexLabel: w}
	}
	for _, tc := range []struct {
		name string
		got  *corev1.Pod
		want *corev1.Pod
	}{{
		name: "leader",
		got:  kube.LWSPod("vllm", 3, 0, 4),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "vllm-3", UID: "uid-vllm-3",
				Labels: lwsLabels("vllm", "3", "0"), Annotations: map[string]string{topology.LWSSizeAnnotation: "4"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}, {
		name: "worker in a namespace, with a UID, on a node",
		got:  kube.LWSPod("vllm", 0, 2, 3, kube.InNamespace("staging"), kube.WithUID("u-1"), kube.OnNode("gpu-1")),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "staging", Name: "vllm-0-2", UID: "u-1",
				Labels: lwsLabels("vllm", "0", "2"), Annotations: map[string]string{topology.LWSSizeAnnotation: "3"}},
			Spec:   corev1.PodSpec{NodeName: "gpu-1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}, {
		name: "no UID, no node",
		got:  kube.LWSPod("vllm", 0, 1, 2, kube.OnNode("gpu-1"), kube.WithUID(""), kube.OnNode("")),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "vllm-0-1",
				Labels: lwsLabels("vllm", "0", "1"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}, {
		name: "leader owned by the leaders' StatefulSet",
		got:  kube.LWSPod("llm", 1, 0, 2, kube.OwnedByStatefulSets),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "llm-1", UID: "uid-llm-1",
				Labels: lwsLabels("llm", "1", "0"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llm", UID: "StatefulSet-llm", Controller: &yes}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}, {
		name: "worker owned by its group's StatefulSet",
		got:  kube.LWSPod("llm", 1, 1, 2, kube.OwnedByStatefulSets),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "llm-1-1", UID: "uid-llm-1-1",
				Labels: lwsLabels("llm", "1", "1"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llm-1", UID: "StatefulSet-llm-1", Controller: &yes}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}, {
		name: "gated leader is not Ready",
		got:  kube.LWSPod("vllm", 0, 0, 2, kube.GatedLeader("example.com/gate")),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "vllm-0", UID: "uid-vllm-0",
				Labels: lwsLabels("vllm", "0", "0"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"}},
			Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse},
			}},
		},
	}, {
		name: "GatedLeader leaves a worker alone",
		got:  kube.LWSPod("vllm", 0, 1, 2, kube.GatedLeader("example.com/gate")),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "vllm-0-1", UID: "uid-vllm-0-1",
				Labels: lwsLabels("vllm", "0", "1"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}, {
		name: "not ready",
		got:  kube.LWSPod("vllm", 0, 1, 2, kube.Ready(false)),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "vllm-0-1", UID: "uid-vllm-0-1",
				Labels: lwsLabels("vllm", "0", "1"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionFalse},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse},
			}},
		},
	}, {
		name: "options apply in order: Ready after GatedLeader",
		got:  kube.LWSPod("vllm", 0, 0, 2, kube.GatedLeader("example.com/gate"), kube.Ready(true)),
		want: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "vllm-0", UID: "uid-vllm-0",
				Labels: lwsLabels("vllm", "0", "0"), Annotations: map[string]string{topology.LWSSizeAnnotation: "2"}},
			Spec:   corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	kube.SetCondition(p, corev1.PodReady, corev1.ConditionFalse)
	kube.SetCondition(p, corev1.PodScheduled, corev1.ConditionTrue)
	want := []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
	if diff := cmp.Diff(want, p.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func TestNode(t *testing.T) {
	since := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	eight := resource.MustParse("8")
	taint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		got  *corev1.Node
		want *corev1.Node
	}{{
		name: "plain",
		got:  kube.Node("n-1"),
		want: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n-1", Labels: map[string]string{}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		},
	}, {
		name: "in a domain, Ready since, labelled, tainted",
		got:  kube.Node("n-1", kube.InDomain("ud-1"), kube.ReadySince(since), kube.WithLabels(map[string]string{"a": "b"}), kube.WithTaints(taint)),
		want: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n-1", Labels: map[string]string{topology.DefaultDomainLabel: "ud-1", "a": "b"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{taint}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)},
			}},
		},
	}, {
		name: "eight H100s, advertised",
		got:  kube.Node("gpu-1", kube.EightH100s, kube.AdvertisesGPUs(8)),
		want: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{
				"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
			}},
			Status: corev1.NodeStatus{
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Capacity:    corev1.ResourceList{"nvidia.com/gpu": eight},
				Allocatable: corev1.ResourceList{"nvidia.com/gpu": eight},
			},
		},
	}, {
		name: "advertising none keeps the node's other resources",
		got: kube.Node("gpu-1", func(n *corev1.Node) {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
		}, kube.AdvertisesGPUs(0)),
		want: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{}},
			Status: corev1.NodeStatus{
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Capacity:    corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")},
				Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("0")},
			},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Each call builds a new object: changing one changes no other.
func TestBuildersShareNothing(t *testing.T) {
	a, b := kube.LWSPod("vllm", 0, 0, 2, kube.OwnedByStatefulSets), kube.LWSPod("vllm", 0, 0, 2, kube.OwnedByStatefulSets)
	a.Labels["x"] = "y"
	a.Status.Conditions[0].Status = corev1.ConditionFalse
	*a.OwnerReferences[0].Controller = false
	if diff := cmp.Diff(kube.LWSPod("vllm", 0, 0, 2, kube.OwnedByStatefulSets), b); diff != "" {
		t.Errorf("changing one pod changed another (-want +got):\n%s", diff)
	}
	n, m := kube.Node("n", kube.InDomain("ud-1"), kube.AdvertisesGPUs(8)), kube.Node("n", kube.InDomain("ud-1"), kube.AdvertisesGPUs(8))
	n.Labels["x"] = "y"
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	if diff := cmp.Diff(kube.Node("n", kube.InDomain("ud-1"), kube.AdvertisesGPUs(8)), m); diff != "" {
		t.Errorf("changing one node changed another (-want +got):\n%s", diff)
	}
}

func TestLeaderPDB(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groups  int
		allowed int32
		wantMin int32
	}{
		{"three groups, one disruption allowed", 3, 1, 2},
		{"two groups, none allowed", 2, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			min := intstr.FromInt32(tc.wantMin)
			want := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "llm-leaders", Generation: 1},
				Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
					topology.LWSNameLabel: "llm", topology.LWSWorkerIndexLabel: "0",
				}}},
				Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: tc.allowed,
					CurrentHealthy: int32(tc.groups), DesiredHealthy: tc.wantMin, ExpectedPods: int32(tc.groups)},
			}
			if diff := cmp.Diff(want, kube.LeaderPDB("llm", tc.groups, tc.allowed)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
