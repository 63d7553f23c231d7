package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/topology"
)

// NodeOption changes a node a builder made.
type NodeOption func(*corev1.Node)

// Node returns node name, Ready (since no particular time), with no labels
// but those opts add. opts apply in order.
func Node(name string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// InDomain puts the node in upgrade domain domain: it sets the default
// domain label, topology.DefaultDomainLabel.
func InDomain(domain string) NodeOption {
	return WithLabels(map[string]string{topology.DefaultDomainLabel: domain})
}

// WithLabels adds labels to the node's.
func WithLabels(labels map[string]string) NodeOption {
	return func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for k, v := range labels {
			n.Labels[k] = v
		}
	}
}

// WithTaints adds taints to the node's.
func WithTaints(taints ...corev1.Taint) NodeOption {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

// ReadySince sets when the node's Ready condition last changed.
func ReadySince(t time.Time) NodeOption {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(t)
			}
		}
	}
}

// EightH100s labels the node as GPU Feature Discovery labels a node of
// eight NVIDIA H100 80GB: nvidia.com/gpu.present, .product and .count.
// What the node advertises is AdvertisesGPUs's.
func EightH100s(n *corev1.Node) {
	WithLabels(map[string]string{
		"nvidia.com/gpu.present": "true",
		"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":   "8",
	})(n)
}

// AdvertisesGPUs has the node advertise count nvidia.com/gpu devices, as
// capacity and as allocatable (0 advertises the resource at zero; a node
// without this option does not advertise it).
func AdvertisesGPUs(count int64) NodeOption {
	return func(n *corev1.Node) {
		q := *resource.NewQuantity(count, resource.DecimalSI)
		if n.Status.Capacity == nil {
			n.Status.Capacity = corev1.ResourceList{}
		}
		if n.Status.Allocatable == nil {
			n.Status.Allocatable = corev1.ResourceList{}
		}
		n.Status.Capacity["nvidia.com/gpu"] = q
		n.Status.Allocatable["nvidia.com/gpu"] = q
	}
}
