package eviction

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// TestRequestsOfIsPodRequests: the simulation's requests of a pod are
// resourcehelper.PodRequests' in milli-units (zero ones left out), on the
// quick path (containers alone) and on the other (init containers,
// overhead, pod-level resources); pods sharing their containers' array
// (the pods of one slim shape) share one map.
func TestRequestsOfIsPodRequests(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	container := func(name string, requests corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests}}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container("sidecar", list("cpu", "100m"))
	sidecar.RestartPolicy = &always
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
	}{
		{"no containers", corev1.PodSpec{}},
		{"one container", corev1.PodSpec{Containers: []corev1.Container{container("a", list("cpu", "250m", "memory", "128Mi", "nvidia.com/gpu", "4"))}}},
		{"two containers, a zero request", corev1.PodSpec{Containers: []corev1.Container{container("a", list("cpu", "1", "nvidia.com/gpu", "0")), container("b", list("cpu", "500m"))}}},
		{"an init container larger than the containers", corev1.PodSpec{InitContainers: []corev1.Container{container("init", list("cpu", "2"))},
			Containers: []corev1.Container{container("a", list("cpu", "1"))}}},
		{"a sidecar", corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{container("a", list("cpu", "1"))}}},
		{"overhead", corev1.PodSpec{Overhead: list("cpu", "50m"), Containers: []corev1.Container{container("a", list("cpu", "1"))}}},
		{"pod-level resources", corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: list("cpu", "3")}, Containers: []corev1.Container{container("a", list("cpu", "1"))}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.spec}
			want := map[corev1.ResourceName]int64{}
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				if v := q.MilliValue(); v > 0 {
					want[name] = v
				}
			}
			s := &destSim{requests: map[*corev1.Pod]map[corev1.ResourceName]int64{}, shared: map[requestsKey]map[corev1.ResourceName]int64{}}
			if diff := cmp.Diff(want, s.requestsOf(p)); diff != "" {
				t.Errorf("requests (-PodRequests +requestsOf):\n%s", diff)
			}
			twin := &corev1.Pod{Spec: tc.spec} // the same containers' array
			_, quick := requestsKeyOf(p)
			if same := reflect.ValueOf(s.requestsOf(twin)).Pointer() == reflect.ValueOf(s.requestsOf(p)).Pointer(); same != quick {
				t.Errorf("a pod sharing the containers' array shares the map: %v, want %v (containers alone)", same, quick)
			}
		})
	}
}
