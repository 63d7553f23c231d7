package kube

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/topology"
)

// Namespace is the namespace of the pods LWSPod builds, unless InNamespace
// says otherwise.
const Namespace = "inference"

// PodOption changes a pod a builder made.
type PodOption func(*corev1.Pod)

// LWSPod returns member worker (0 is the leader) of group g of
// LeaderWorkerSet lws, a group of size members: named as the
// LeaderWorkerSet controller names it ("<lws>-<g>" for the leader,
// "<lws>-<g>-<worker>" for a worker), with its labels and size
// annotation, UID "uid-<name>", in Namespace, Running with its containers
// ready and Ready. opts then apply in order.
func LWSPod(lws string, g, worker, size int, opts ...PodOption) *corev1.Pod {
	name := lws + "-" + strconv.Itoa(g)
	if worker > 0 {
		name += "-" + strconv.Itoa(worker)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace,
			Name:      name,
			UID:       types.UID("uid-" + name),
			Labels: map[string]string{
				topology.LWSNameLabel:        lws,
				topology.LWSGroupIndexLabel:  strconv.Itoa(g),
				topology.LWSWorkerIndexLabel: strconv.Itoa(worker),
			},
			Annotations: map[string]string{topology.LWSSizeAnnotation: strconv.Itoa(size)},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

// InNamespace puts the pod in namespace ns.
func InNamespace(ns string) PodOption {
	return func(p *corev1.Pod) { p.Namespace = ns }
}

// WithUID gives the pod uid (none when empty).
func WithUID(uid types.UID) PodOption {
	return func(p *corev1.Pod) { p.UID = uid }
}

// OnNode binds the pod to node (none when empty).
func OnNode(node string) PodOption {
	return func(p *corev1.Pod) { p.Spec.NodeName = node }
}

// OwnedByStatefulSets gives a member of a LeaderWorkerSet group the
// controller the LeaderWorkerSet controller gives it: the StatefulSet of
// the leaders, "<lws>", for a leader; the StatefulSet of its group's
// workers, "<lws>-<g>", for a worker. The StatefulSet's UID is
// "StatefulSet-<its name>".
func OwnedByStatefulSets(p *corev1.Pod) {
	owner := p.Labels[topology.LWSNameLabel]
	if p.Labels[topology.LWSWorkerIndexLabel] != "0" {
		owner += "-" + p.Labels[topology.LWSGroupIndexLabel]
	}
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner,
		UID: types.UID("StatefulSet-" + owner), Controller: &yes,
	}}
}

// GatedLeader has the leader of a LeaderWorkerSet group declare the
// readiness gate ct and, as a kubelet has it until the gate's condition is
// True, not be Ready. It leaves a worker alone.
func GatedLeader(ct corev1.PodConditionType) PodOption {
	return func(p *corev1.Pod) {
		if p.Labels[topology.LWSWorkerIndexLabel] != "0" {
			return
		}
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: ct}}
		SetCondition(p, corev1.PodReady, corev1.ConditionFalse)
	}
}

// Ready sets both the pod's ContainersReady and its Ready condition: True
// when ready, False otherwise.
func Ready(ready bool) PodOption {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	return func(p *corev1.Pod) {
		SetCondition(p, corev1.ContainersReady, s)
		SetCondition(p, corev1.PodReady, s)
	}
}

// SetCondition sets the status of the pod's condition t to s, adding the
// condition at the end if the pod has none of that type.
func SetCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i].Status = s
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
}
