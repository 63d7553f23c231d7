package gate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/internal/testkit/kube"
)

// The pods of these tests form LeaderWorkerSet groups named like the real
// ones: leader "<lws>-<group>", workers "<lws>-<group>-<worker>".

// testNamespace is the namespace of the pods lwsPod builds.
const testNamespace = kube.Namespace

type podOption = kube.PodOption

// lwsPod returns a healthy member of group g of LWS lws (kube.LWSPod):
// Running, Ready, containers ready. The leader (worker 0) declares the gate
// and, as on a kubelet before the gate passes, is not Ready.
func lwsPod(lws string, g, worker, size int, opts ...podOption) *corev1.Pod {
	return kube.LWSPod(lws, g, worker, size, append([]podOption{kube.GatedLeader(ConditionType)}, opts...)...)
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

func notReady(pod *corev1.Pod) { kube.SetCondition(pod, corev1.PodReady, corev1.ConditionFalse) }

func ready(pod *corev1.Pod) { kube.SetCondition(pod, corev1.PodReady, corev1.ConditionTrue) }

func containersNotReady(pod *corev1.Pod) {
	kube.SetCondition(pod, corev1.ContainersReady, corev1.ConditionFalse)
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
