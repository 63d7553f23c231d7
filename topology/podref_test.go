package topology_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/topology"
)

// TestPodRef checks what a pod's reference takes from the pod, its text
// and its JSON (the reports' "pod" objects, v1alpha2).
func TestPodRef(t *testing.T) {
	tests := []struct {
		name     string
		pod      *corev1.Pod
		want     topology.PodRef
		wantText string
		wantJSON string
	}{
		{
			name:     "scheduled",
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "llm-0", UID: "u0"}, Spec: corev1.PodSpec{NodeName: "gpu-1"}},
			want:     topology.PodRef{Namespace: "inference", Name: "llm-0", UID: "u0", Node: "gpu-1"},
			wantText: "inference/llm-0",
			wantJSON: `{"namespace":"inference","name":"llm-0","uid":"u0","node":"gpu-1"}`,
		},
		{
			name:     "not scheduled, no UID",
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}},
			want:     topology.PodRef{Namespace: "ns", Name: "p"},
			wantText: "ns/p",
			wantJSON: `{"namespace":"ns","name":"p"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := topology.RefOf(tt.pod)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RefOf (-want +got):\n%s", diff)
			}
			if s := got.String(); s != tt.wantText {
				t.Errorf("String() = %q, want %q", s, tt.wantText)
			}
			data, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tt.wantJSON {
				t.Errorf("JSON = %s, want %s", data, tt.wantJSON)
			}
		})
	}
}
