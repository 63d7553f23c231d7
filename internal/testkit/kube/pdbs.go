package kube

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain/topology"
)

// LeaderPDB returns the PodDisruptionBudget "<lws>-leaders", in Namespace,
// over the leaders of LeaderWorkerSet lws, which has groups groups: it
// keeps all leaders but one available, all are healthy, and its status
// (observed by the disruption controller) allows allowed disruptions.
func LeaderPDB(lws string, groups int, allowed int32) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(int32(groups - 1))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: lws + "-leaders", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
				topology.LWSNameLabel: lws, topology.LWSWorkerIndexLabel: "0",
			}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: 1, DisruptionsAllowed: allowed,
			CurrentHealthy: int32(groups), DesiredHealthy: int32(groups - 1), ExpectedPods: int32(groups),
		},
	}
}
