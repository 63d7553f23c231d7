package clusterview

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// slimOf is pod as udrain's own (slim) cache holds it.
func slimOf(t *testing.T, pod *corev1.Pod) interface{} {
	t.Helper()
	obj, err := podcache.NewTransform(StripForCache)(pod)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// udrain's pod index gives a slim pod the keys it gives the pod.
func TestPodIndexOfASlimPod(t *testing.T) {
	leader := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0", UID: "u-1", Labels: map[string]string{
			topology.LWSNameLabel: "llm", topology.LWSGroupIndexLabel: "0", topology.LWSWorkerIndexLabel: "0",
		}, Annotations: map[string]string{topology.LWSSizeAnnotation: "4"}},
		Spec: corev1.PodSpec{NodeName: "n1"},
	}
	native := leader.DeepCopy()
	native.Labels = nil
	gang := "gang-1"
	native.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &gang}
	for name, pod := range map[string]*corev1.Pod{"a LeaderWorkerSet pod": leader, "a native PodGroup member": native, "no group": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}} {
		t.Run(name, func(t *testing.T) {
			want, err := NewPodIndexFunc()(pod)
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewPodIndexFunc()(slimOf(t, pod))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("index keys (-of the pod +of the slim pod):\n%s", diff)
			}
			if name != "no group" && len(want) == 0 {
				t.Errorf("the pod has no index key")
			}
		})
	}
}
