package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func node(name string, gpus int64, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "4",
		}},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}},
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
		},
	}
}

func daemonSet(name, image string, tolerations ...corev1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations: tolerations,
			Containers:  []corev1.Container{{Name: "c", Image: image}},
		}}},
	}
}

// TestScan: gpu-02 was tainted dedicated=gpu after the device plugin was
// installed with only its chart's toleration, so it advertises no GPUs;
// the scan names it and the taint, among the cluster's DaemonSets as they
// are (kube-proxy is no plugin).
func TestScan(t *testing.T) {
	client := fake.NewClientset(
		node("gpu-01", 4, corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}),
		node("gpu-02", 0, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}),
		daemonSet("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
			corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
		daemonSet("kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2"),
	)
	var out bytes.Buffer
	n, err := scan(t.Context(), client, &out)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d nodes need action, want 1 (gpu-02)", n)
	}
	for _, want := range []string{
		"dedicated-gpu: 2 nodes, 4 of 8 GPUs advertised",
		"gpu-02 Error ResourceMissing:",
		"gpu-02 Error UntoleratedTaint: ",
		"dedicated=gpu:NoSchedule",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output has no %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "gpu-01") || strings.Contains(out.String(), "kube-proxy") {
		t.Errorf("a healthy node or a DaemonSet that is no plugin is named:\n%s", out.String())
	}
}
