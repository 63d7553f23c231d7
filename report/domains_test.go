package report_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func TestNewDomainList(t *testing.T) {
	node := func(name, domain string, edit func(n *corev1.Node)) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		if domain != "" {
			n.Labels[topology.DefaultDomainLabel] = domain
		}
		if edit != nil {
			edit(&n)
		}
		return n
	}
	gpus := func(n *corev1.Node) {
		n.Labels["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
		n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
		n.Status.Allocatable = n.Status.Capacity
	}
	nodes := []corev1.Node{
		node("gpu-b", "ud-1", gpus),
		node("gpu-a", "ud-1", func(n *corev1.Node) {
			gpus(n)
			n.Spec.Unschedulable = true
			n.Annotations[udrain.CordonedByAnnotation] = "udrain-1"
		}),
		node("cp", "ud-2", func(n *corev1.Node) {
			n.Labels[topology.ControlPlaneLabel] = ""
			n.Annotations[udrain.UpgradedByAnnotation] = "udrain-0"
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}),
		node("loose", "", nil),
	}
	layout, err := topology.BuildLayout(nodes, topology.LayoutOptions{Unlabeled: topology.UnlabeledSkip})
	if err != nil {
		t.Fatal(err)
	}
	h := &health.Report{
		Domains:     []health.DomainStatus{{Domain: "ud-2", Healthy: true}, {Domain: "ud-1"}},
		Unscheduled: []health.GroupStatus{{Message: "pending"}},
	}
	gopts := gpu.Options{}
	class := func(i int) gpu.Classification { return gpu.ClassifyNode(&nodes[i], gopts) }
	want := report.DomainList{
		TypeMeta: report.NewTypeMeta(report.KindDomainList), LabelKey: topology.DefaultDomainLabel, Unlabeled: []string{"loose"},
		Unscheduled: h.Unscheduled,
		Items: []report.DomainInfo{
			{Name: "ud-1", CordonedNodes: 1, Health: health.DomainStatus{Domain: "ud-1"},
				Nodes: []report.DomainNode{
					{Name: "gpu-a", Ready: true, Cordoned: true, CordonedBy: "udrain-1", GPU: class(1)},
					{Name: "gpu-b", Ready: true, GPU: class(0)},
				},
				GPUs: []gpu.Capacity{{Vendor: "nvidia", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 16, Nodes: 2}}},
			{Name: "ud-2", ControlPlaneNodes: 1, Health: health.DomainStatus{Domain: "ud-2", Healthy: true},
				Nodes: []report.DomainNode{{Name: "cp", UpgradedBy: "udrain-0", ControlPlane: true, GPU: class(2)}},
				GPUs:  []gpu.Capacity{}},
		},
	}
	if diff := cmp.Diff(want, report.NewDomainList(nodes, layout, h, gopts)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNewGPUSummary(t *testing.T) {
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"pool": "p-1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
	}
	s := gpu.Summarize(nodes, nil, gpu.Options{})
	want := report.GPUSummary{TypeMeta: report.NewTypeMeta(report.KindGPUSummary), LabelKey: "pool", Domains: map[string]string{"a": "p-1", "b": ""}, Summary: s}
	if diff := cmp.Diff(want, report.NewGPUSummary("pool", nodes, s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
