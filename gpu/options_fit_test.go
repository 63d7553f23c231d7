package gpu

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestFitAndLossHonourOptions: a device plugin's resource that package gpu
// does not know counts as GPUs in Fits, CapacityOf, Advertised and Losses
// only when Options.ExtraResources names it; without it the nodes are not
// GPU nodes and nothing is reported.
func TestFitAndLossHonourOptions(t *testing.T) {
	const npu corev1.ResourceName = "example.com/npu"
	node := func(name string, alloc int64) *corev1.Node {
		return newNode(name, nil, withResource(string(npu), 8, alloc))
	}
	extra := Options{ExtraResources: map[corev1.ResourceName]Vendor{npu: "example"}}
	tests := []struct {
		name         string
		opts         Options
		wantFits     []Fit
		wantCapacity []Capacity
		wantBefore   map[string]int64
		wantLosses   []string
	}{
		{
			name: "named in ExtraResources",
			opts: extra,
			wantFits: []Fit{{Resource: npu, Requested: 16, Free: 12, Nodes: []NodeGPUs{{Node: "n1", Allocatable: 8, Free: 8}, {Node: "n2", Allocatable: 4, Free: 4}},
				Unplaced: []PodGPUs{podGPUs("c", "n3", 4)}}},
			wantCapacity: []Capacity{{Vendor: "example", Product: "unknown", GPUs: 12, Nodes: 2}},
			wantBefore:   map[string]int64{"n1": 8, "n2": 4},
			wantLosses:   []string{"n2"},
		},
		{
			name:         "unknown without it",
			opts:         Options{},
			wantCapacity: []Capacity{},
			wantBefore:   map[string]int64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := []*corev1.Node{node("n1", 8), node("n2", 4)}
			evicted := []*corev1.Pod{gpuPod("a", "n1", 8, npu), gpuPod("b", "n2", 4, npu), gpuPod("c", "n3", 4, npu)}
			if diff := cmp.Diff(tt.wantFits, Fits(nodes, evicted, nil, tt.opts)); diff != "" {
				t.Errorf("Fits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCapacity, CapacityOf(nodes, tt.opts)); diff != "" {
				t.Errorf("CapacityOf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBefore, Advertised(nodes, tt.opts)); diff != "" {
				t.Errorf("Advertised (-want +got):\n%s", diff)
			}
			// n2 had 8 before the upgrade and came back with 4.
			var lost []string
			for _, l := range Losses(map[string]int64{"n1": 8, "n2": 8}, nodes, nil, tt.opts) {
				lost = append(lost, l.Node)
			}
			if diff := cmp.Diff(tt.wantLosses, lost); diff != "" {
				t.Errorf("Losses (-want +got):\n%s", diff)
			}
		})
	}
}
