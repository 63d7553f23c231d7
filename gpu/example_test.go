package gpu_test

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/gpu"
)

var now = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// gpuNode returns a node labelled by NFD and GPU Feature Discovery, Ready
// since readyAgo, advertising gpus devices (none when 0).
func gpuNode(name string, readyAgo time.Duration, gpus int64, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"feature.node.kubernetes.io/pci-10de.present": "true",
			"nvidia.com/gpu.present":                      "true",
			"nvidia.com/gpu.product":                      "NVIDIA-H100-80GB-HBM3-SHARED",
			"nvidia.com/gpu.count":                        "8",
			"nvidia.com/gpu.memory":                       "81559",
			"nvidia.com/gpu.replicas":                     "2",
			"nvidia.com/gpu.sharing-strategy":             "time-slicing",
		}},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readyAgo)),
			}},
			Capacity:    corev1.ResourceList{},
			Allocatable: corev1.ResourceList{},
		},
	}
	if gpus > 0 {
		n.Status.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		n.Status.Allocatable["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return n
}

func ExampleClassifyNode() {
	node := gpuNode("gpu-01", time.Hour, 16, corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule})

	c := gpu.ClassifyNode(node, gpu.Options{})
	fmt.Println(c.Status, c.Vendor, c.Product)
	fmt.Printf("%d GPUs of %d MiB, %s advertised %d/%d\n", c.Count, c.MemoryMiB, c.Resource, c.Allocatable, c.Capacity)
	fmt.Printf("sharing %s x%d, dedicated %v\n", c.Sharing.Strategy, c.Sharing.Replicas, c.Dedicated)
	// Output:
	// Ready nvidia NVIDIA-H100-80GB-HBM3
	// 8 GPUs of 81559 MiB, nvidia.com/gpu advertised 16/16
	// sharing time-slicing x2, dedicated true
}

// A node that has not advertised its GPUs yet is Pending during the grace
// period after it became Ready, then ResourceMissing. Inject the clock.
func ExampleClassifyNode_gracePeriod() {
	node := gpuNode("gpu-02", 0, 0)
	clock := clocktesting.NewFakePassiveClock(now.Add(5 * time.Minute))
	opts := gpu.Options{Clock: clock, GracePeriod: 15 * time.Minute}

	fmt.Println(gpu.ClassifyNode(node, opts).Status)
	clock.SetTime(now.Add(20 * time.Minute))
	c := gpu.ClassifyNode(node, opts)
	fmt.Println(c.Status)
	for _, p := range c.Problems() {
		fmt.Println(p.Code, p.Severity)
	}
	// Output:
	// Pending
	// ResourceMissing
	// ResourceMissing Error
}

// The incident behind this package: the GPU node was tainted
// dedicated=gpu:NoSchedule, the device plugin DaemonSet does not tolerate
// it, so nvidia.com/gpu never appears.
func ExampleDiagnoseDaemonSet() {
	node := gpuNode("gpu-01", time.Hour, 0, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
		}}},
	}

	d := gpu.DiagnoseDaemonSet(ds, node)
	fmt.Println("can run:", d.CanRun)
	for _, t := range d.UntoleratedTaints {
		fmt.Println("untolerated:", t.ToString())
	}
	fmt.Println(d.Fix)
	// Output:
	// can run: false
	// untolerated: dedicated=gpu:NoSchedule
	// kubectl -n kube-system patch daemonset nvidia-device-plugin --type=json -p '[{"op":"add","path":"/spec/template/spec/tolerations","value":[{"key":"dedicated","operator":"Equal","value":"gpu","effect":"NoSchedule"}]}]'
}

// Summarize takes the nodes and the DaemonSets as a lister or a List
// finds them (kube-proxy here is no device plugin, and is left out), and
// ProblemNodes says which nodes need action.
func ExampleSummarize() {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	cpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-01"}}
	nodes := []*corev1.Node{gpuNode("gpu-01", time.Hour, 16, taint), gpuNode("gpu-02", time.Hour, 0, taint), cpu}
	daemonSet := func(name, image string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Image: image}},
			}}},
		}
	}
	daemonSets := []*appsv1.DaemonSet{
		daemonSet("kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2"),
		daemonSet("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
	}

	s := gpu.Summarize(nodes, daemonSets, gpu.Options{Clock: clocktesting.NewFakePassiveClock(now)})
	for _, p := range s.Pools {
		fmt.Printf("%s: %v, %d GPUs (%d advertised)\n", p.Kind, p.Nodes, p.GPUs, p.AdvertisedGPUs)
	}
	for _, p := range s.Problems {
		fmt.Println(p.Node, p.DaemonSet, p.Code)
	}
	fmt.Println("need action:", s.ProblemNodes())
	// Output:
	// dedicated-gpu: [gpu-01 gpu-02], 16 GPUs (8 advertised)
	// shared-gpu: [], 0 GPUs (0 advertised)
	// cpu: [cpu-01], 0 GPUs (0 advertised)
	// gpu-02  ResourceMissing
	// gpu-02 kube-system/nvidia-device-plugin UntoleratedTaint
	// need action: [gpu-02]
}
