package gpu_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/gpu"
)

// h100Node returns an 8-GPU node labelled by GPU Feature Discovery that
// advertises alloc of them, tainted for GPU pods only.
func h100Node(name string, alloc int64) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"nvidia.com/gpu.present": "true",
			"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
			"nvidia.com/gpu.count":   "8",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(8, resource.DecimalSI)},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(alloc, resource.DecimalSI)},
		},
	}
}

// gpuPod returns a pod on node that requests gpus nvidia.com/gpu.
func gpuPod(name, node string, gpus int64) *corev1.Pod {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "vllm",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q}}}}},
	}
}

// Two 8-GPU nodes packed 4+4 and 4+2+2 are drained for an upgrade. Their
// pods fit back largest first, but a scheduler that spreads them puts a
// 2-GPU pod on each node first, and the last 4-GPU pod finds 2 GPUs free on
// each.
func ExampleFits() {
	nodes := []*corev1.Node{h100Node("gpu-1", 8), h100Node("gpu-2", 8)}
	evicted := []*corev1.Pod{
		gpuPod("llm-0", "gpu-1", 4), gpuPod("llm-1", "gpu-1", 4),
		gpuPod("llm-2", "gpu-2", 4), gpuPod("batch-a", "gpu-2", 2), gpuPod("batch-b", "gpu-2", 2),
	}
	for _, f := range gpu.Fits(nodes, evicted, nil, gpu.Options{}) {
		fmt.Println(f)
		fmt.Println("risk:", f.Risk())
	}
	// Output:
	// nvidia.com/gpu: 16 requested, 16 free on 2 node(s); fragmentation risk: coming back smallest first, each onto the node with the most free, inference/llm-2 (4) finds no node
	// risk: true
}

// Before an upgrade, Advertised records each GPU node's GPUs; after it,
// Losses names the nodes that came back with fewer, here one whose new
// taint the device plugin does not tolerate.
func ExampleLosses() {
	before := gpu.Advertised([]*corev1.Node{h100Node("gpu-1", 8), h100Node("gpu-2", 8)}, gpu.Options{})

	upgraded := h100Node("gpu-2", 0)
	upgraded.Spec.Taints = append(upgraded.Spec.Taints, corev1.Taint{Key: "example.com/driver", Value: "new", Effect: corev1.TaintEffectNoSchedule})
	plugin := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
		}}},
	}

	for _, l := range gpu.Losses(before, []*corev1.Node{h100Node("gpu-1", 8), upgraded}, []*appsv1.DaemonSet{plugin}, gpu.Options{}) {
		fmt.Printf("%s advertises %d %s, had %d\n", l.Node, l.After, l.Resource, l.Before)
		for _, d := range l.Diagnoses {
			for _, t := range d.UntoleratedTaints {
				fmt.Printf("%s cannot run there: untolerated %s\n", d.DaemonSet, t.ToString())
			}
		}
	}
	// Output:
	// gpu-2 advertises 0 nvidia.com/gpu, had 8
	// kube-system/nvidia-device-plugin cannot run there: untolerated example.com/driver=new:NoSchedule
}
