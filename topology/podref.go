package topology

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodRef names one pod in the module's reports: namespace, name, UID (the
// pod udrain saw; a replacement with the same name is another pod) and
// node. Plans, drains, events and GPU fits name pods by it.
type PodRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
	Node      string    `json:"node,omitempty"`
}

// String returns "namespace/name".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// RefOf returns the PodRef of pod.
func RefOf(pod *corev1.Pod) PodRef {
	return PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName}
}
