package gate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// ConditionType is the pod condition the controller sets on leaders. A
// leader opts in by declaring it as a readiness gate:
//
//	spec:
//	  readinessGates:
//	  - conditionType: udrain.dev/group-ready
//
// The kubelet then keeps the leader unready until the condition is True.
const ConditionType corev1.PodConditionType = "udrain.dev/group-ready"

// The condition's Reason is the group's [health.Reason], the one judgment
// of a group's health that udrain's planning, recovery and CLI use too:
// [health.ReasonGroupReady] when True, else the reason of the worst
// problem, in this order: no members, a member missing, terminating, not
// scheduled, not running, not ready.

// ConditionFor returns the condition the leader of g should carry: True with
// [health.ReasonGroupReady] when package health judges the group healthy, else
// False with the reason of the worst problem and a message naming the
// members at fault, e.g.
//
//	vllm-0-2 not ready; 3/4 members healthy
//
// The judgment is [health.Evaluate] with LeaderByContainers: the leader's
// ContainersReady condition stands for Ready, since its Ready waits for
// this very condition. The condition's LastTransitionTime is now; ConditionFor
// reads nothing but g, so it is safe to call from anywhere.
func ConditionFor(g *topology.Group, now time.Time) corev1.PodCondition {
	st := health.Evaluate(g, health.Options{LeaderByContainers: true})
	cond := corev1.PodCondition{
		Type:               ConditionType,
		Status:             corev1.ConditionFalse,
		Reason:             string(st.Reason),
		Message:            st.Message,
		LastTransitionTime: metav1.NewTime(now),
	}
	if st.Healthy {
		cond.Status = corev1.ConditionTrue
	}
	return cond
}

// DeclaresGate reports whether pod lists [ConditionType] among its readiness
// gates. The controller only ever writes to leaders that do.
func DeclaresGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == ConditionType {
			return true
		}
	}
	return false
}

// CurrentCondition returns pod's [ConditionType] condition, or nil if it has
// none.
func CurrentCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ConditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
