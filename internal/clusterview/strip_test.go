package clusterview

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestStripForCacheLeavesItsInputAlone: the informers' transform strips
// managed fields and the last-applied annotation from what it returns,
// never from the object the watch gave it.
func TestStripForCacheLeavesItsInputAlone(t *testing.T) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:          "x",
			Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "1"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		}
	}
	stripped := metav1.ObjectMeta{Name: "x", Annotations: map[string]string{"keep": "1"}}
	tests := []struct {
		name string
		in   runtime.Object
		want metav1.ObjectMeta
	}{
		{"pod", &corev1.Pod{ObjectMeta: meta()}, stripped},
		{"node", &corev1.Node{ObjectMeta: meta()}, stripped},
		{"pdb", &policyv1.PodDisruptionBudget{ObjectMeta: meta()}, stripped},
		{"pod with nothing to strip", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.ObjectMeta{Name: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := stripUnchanged(t, tt.in)
			got := *out.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stripped metadata (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStripForCacheDropsNodeImagesAndVolumes: udrain's own node cache keeps
// a node's status but its images and volumes, which nothing in udrain reads
// and which weigh most on a real node; the watch's object is left alone.
func TestStripForCacheDropsNodeImagesAndVolumes(t *testing.T) {
	status := func() corev1.NodeStatus {
		return corev1.NodeStatus{
			Capacity:        corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Allocatable:     corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Images:          []corev1.ContainerImage{{Names: []string{"registry.example/vllm:1"}, SizeBytes: 1 << 30}},
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/x"},
			VolumesAttached: []corev1.AttachedVolume{{Name: "kubernetes.io/csi/x", DevicePath: "/dev/x"}},
		}
	}
	kept := status()
	kept.Images, kept.VolumesInUse, kept.VolumesAttached = nil, nil, nil
	tests := []struct {
		name string
		in   *corev1.Node
		want *corev1.Node
	}{
		{"images and volumes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}, Status: status()},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}, Status: kept}},
		{"nothing to strip", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-2"}, Status: kept},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-2"}, Status: kept}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, stripUnchanged(t, tt.in)); diff != "" {
				t.Errorf("cached node (-want +got):\n%s", diff)
			}
		})
	}
}

// stripUnchanged returns StripForCache(in), failing t if it changed in.
func stripUnchanged(t *testing.T, in runtime.Object) interface{} {
	t.Helper()
	before := in.DeepCopyObject()
	out, err := StripForCache(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("input changed (-before +after):\n%s", diff)
	}
	return out
}
