package eviction

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// withGPUs makes pod request n nvidia.com/gpu in one container.
func withGPUs(p *corev1.Pod, n int64) *corev1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q}}}}
	return p
}

// TestGPUFit pins the fit check on domains of two 8-GPU nodes: what fits,
// what fragments when the pods come back spread smallest first (the
// e2e's story: two 2-GPU pods take a node each, the third 4-GPU pod finds
// 2 free on each), and what cannot fit at all (a node lost GPUs while its
// pods held theirs).
func TestGPUFit(t *testing.T) {
	type pod struct {
		name string
		node int
		gpus int64
		// stays: a DaemonSet pod, left on its node.
		stays bool
	}
	type want struct {
		Requested, Free          int64
		Unplaced, SpreadUnplaced []string
		Risk                     bool
	}
	for _, tc := range []struct {
		name  string
		alloc [2]int64 // nvidia.com/gpu allocatable of node-1-1, node-1-2
		pods  []pod
		want  *want // nil: no GPUFit (no evicted pod requests GPUs)
	}{
		{"a group of 4 pods of 4 GPUs fits whatever the order", [2]int64{8, 8},
			[]pod{{"llm-0", 1, 4, false}, {"llm-0-1", 2, 4, false}, {"llm-0-2", 1, 4, false}, {"llm-0-3", 2, 4, false}},
			&want{Requested: 16, Free: 16}},
		{"4-GPU pods and 2-GPU pods fragment when spread", [2]int64{8, 8},
			[]pod{{"llm-0", 1, 4, false}, {"llm-0-1", 1, 4, false}, {"llm-0-2", 2, 4, false}, {"batch-a", 2, 2, false}, {"batch-b", 2, 2, false}},
			&want{Requested: 16, Free: 16, SpreadUnplaced: []string{"llm-0-2"}, Risk: true}},
		{"a node that lost GPUs while its pods held theirs", [2]int64{8, 6},
			[]pod{{"llm-0", 1, 4, false}, {"llm-0-1", 1, 4, false}, {"llm-0-2", 2, 4, false}, {"llm-0-3", 2, 4, false}},
			&want{Requested: 16, Free: 14, Unplaced: []string{"llm-0-3"}, Risk: true}},
		{"pods that stay hold their GPUs", [2]int64{8, 8},
			[]pod{{"llm-0", 1, 4, false}, {"llm-0-1", 1, 4, false}, {"llm-0-2", 2, 4, false}, {"agent", 2, 2, true}},
			&want{Requested: 12, Free: 14}},
		// A spreading scheduler may put the 6-GPU pod on the empty node.
		{"a whole-node pod after a smaller one", [2]int64{8, 8},
			[]pod{{"llm-0", 1, 8, false}, {"llm-0-1", 2, 6, false}, {"agent", 2, 2, true}},
			&want{Requested: 14, Free: 14, SpreadUnplaced: []string{"llm-0"}, Risk: true}},
		{"a pod that stays leaves too little", [2]int64{8, 8},
			[]pod{{"llm-0", 1, 8, false}, {"llm-0-1", 2, 8, false}, {"agent", 2, 1, true}},
			&want{Requested: 16, Free: 15, Unplaced: []string{"llm-0-1"}, Risk: true}},
		{"no evicted pod requests GPUs", [2]int64{8, 8},
			[]pod{{"llm-0", 1, 0, false}, {"agent", 2, 2, true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for i, a := range tc.alloc {
				objs = append(objs, gpuNode(testNode(fmt.Sprintf("node-1-%d", i+1), "ud-1"), a))
			}
			for _, p := range tc.pods {
				owner := ownedBy("StatefulSet", p.name)
				if p.stays {
					owner = ownedBy("DaemonSet", p.name)
				}
				objs = append(objs, withGPUs(readyPod(&corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: p.name, UID: types.UID(p.name), OwnerReferences: owner},
					Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-1-%d", p.node)},
				}), p.gpus))
			}
			snap := snapshotOf(objs)
			snap.DaemonSets = DaemonSetsLookup(nil)
			h := KubectlDefaults()
			h.IgnoreAllDaemonSets = true
			plan, err := NewPlan("ud-1", snap, Options{Helper: h})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(plan.GPUFit) != 0 {
					t.Errorf("GPUFit = %+v, want none", plan.GPUFit)
				}
				return
			}
			if len(plan.GPUFit) != 1 {
				t.Fatalf("GPUFit = %+v, want one for nvidia.com/gpu", plan.GPUFit)
			}
			f := plan.GPUFit[0]
			names := func(pods []PodGPUs) []string {
				var out []string
				for _, p := range pods {
					out = append(out, p.Pod.Name)
				}
				return out
			}
			got := want{Requested: f.Requested, Free: f.Free, Unplaced: names(f.Unplaced), SpreadUnplaced: names(f.SpreadUnplaced), Risk: f.Risk()}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("GPUFit (-want +got):\n%s\n%s", diff, f)
			}
			if f.Resource != "nvidia.com/gpu" || len(f.Nodes) != 2 || f.Nodes[0].Allocatable != tc.alloc[0] || f.Nodes[1].Allocatable != tc.alloc[1] {
				t.Errorf("GPUFit resource %s, nodes %+v; want nvidia.com/gpu on both nodes, allocatable %v", f.Resource, f.Nodes, tc.alloc)
			}
			if risks := plan.fitRisks(); len(risks) != boolCount(got.Risk) {
				t.Errorf("fitRisks() = %q, want %d", risks, boolCount(got.Risk))
			}
		})
	}
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}
