package gate

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/topology"
)

// The pods of these tests form LeaderWorkerSet groups named like the real
// ones: leader "<lws>-<group>", workers "<lws>-<group>-<worker>".

const testNamespace = "inference"

type podOption func(*corev1.Pod)

// lwsPod returns a healthy member of group g of LWS lws: Running, Ready,
// containers ready. The leader (worker 0) declares the gate and, as on a
// kubelet before the gate passes, is not Ready.
func lwsPod(lws string, g, worker, size int, opts ...podOption) *corev1.Pod {
	name := lws + "-" + strconv.Itoa(g)
	if worker > 0 {
		name += "-" + strconv.Itoa(worker)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace,
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
	if worker == 0 {
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: ConditionType}}
		setCondition(pod, corev1.PodReady, corev1.ConditionFalse)
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

// lwsGroup returns the pods of a group of size members; opts[i] apply to
// worker i. Workers listed in skip are left out.
func lwsGroup(lws string, g, size int, opts map[int][]podOption, skip ...int) []*corev1.Pod {
	var pods []*corev1.Pod
next:
	for w := range size {
		for _, s := range skip {
			if s == w {
				continue next
			}
		}
		pods = append(pods, lwsPod(lws, g, w, size, opts[w]...))
	}
	return pods
}

func setCondition(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			pod.Status.Conditions[i].Status = s
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
}

func notReady(pod *corev1.Pod) { setCondition(pod, corev1.PodReady, corev1.ConditionFalse) }

func ready(pod *corev1.Pod) { setCondition(pod, corev1.PodReady, corev1.ConditionTrue) }

func containersNotReady(pod *corev1.Pod) {
	setCondition(pod, corev1.ContainersReady, corev1.ConditionFalse)
}

func terminating(pod *corev1.Pod) {
	t := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod.DeletionTimestamp = &t
}

func phase(p corev1.PodPhase) podOption {
	return func(pod *corev1.Pod) { pod.Status.Phase = p }
}

func noGate(pod *corev1.Pod) { pod.Spec.ReadinessGates = nil }

func withLabel(key, value string) podOption {
	return func(pod *corev1.Pod) { pod.Labels[key] = value }
}

func withCondition(c corev1.PodCondition) podOption {
	return func(pod *corev1.Pod) { pod.Status.Conditions = append(pod.Status.Conditions, c) }
}
