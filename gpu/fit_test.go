package gpu

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/udrain/udrain/topology"
)

// h100 is an 8-GPU H100 node that advertises alloc nvidia.com/gpu.
func h100(name string, alloc int64) *corev1.Node {
	return newNode(name, gpuOperatorH100, withResource("nvidia.com/gpu", 8, alloc))
}

// mi300x is an 8-GPU AMD node that advertises alloc amd.com/gpu.
func mi300x(name string, alloc int64) *corev1.Node {
	return newNode(name, amdMI300X, withResource("amd.com/gpu", 8, alloc))
}

// gpuPod is a pod in namespace "ns" on node whose one container requests
// n of resource ("nvidia.com/gpu" when empty).
func gpuPod(name, node string, n int64, res ...corev1.ResourceName) *corev1.Pod {
	r := corev1.ResourceName("nvidia.com/gpu")
	if len(res) > 0 {
		r = res[0]
	}
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{r: q}, Limits: corev1.ResourceList{r: q}}}}},
	}
}

// podGPUs is the PodGPUs of gpuPod(name, node, n).
func podGPUs(name, node string, n int64) PodGPUs {
	return PodGPUs{Pod: topology.PodRef{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Node: node}, GPUs: n}
}

// fitsCase is a case of TestFits.
type fitsCase struct {
	name             string
	nodes            []*corev1.Node
	evicted, staying []*corev1.Pod
	want             []Fit
}

// two returns the 8-GPU nodes n1 and n2, advertising a and b GPUs.
func two(a, b int64) []*corev1.Node { return []*corev1.Node{h100("n1", a), h100("n2", b)} }

// twoFree is the NodeGPUs of two(8, 8) with a and b GPUs free.
func twoFree(a, b int64) []NodeGPUs {
	return []NodeGPUs{{Node: "n1", Allocatable: 8, Free: a}, {Node: "n2", Allocatable: 8, Free: b}}
}

// placementCases are TestFits' cases about where the evicted pods go.
func placementCases() []fitsCase {
	return []fitsCase{
		{
			name:    "a group of four 4-GPU pods fits whatever the order",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 4), gpuPod("b", "n2", 4), gpuPod("c", "n1", 4), gpuPod("d", "n2", 4)},
			want:    []Fit{{Resource: "nvidia.com/gpu", Requested: 16, Free: 16, Nodes: twoFree(8, 8)}},
		},
		{
			// Spread smallest first, the 2-GPU pods take a node each and
			// leave 6 free on both; the 4-GPU pods take 4 of them, and the
			// third finds 2 free on each.
			name:    "4-GPU and 2-GPU pods fragment when spread",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 4), gpuPod("b", "n1", 4), gpuPod("c", "n2", 4), gpuPod("x", "n2", 2), gpuPod("y", "n2", 2)},
			want: []Fit{{Resource: "nvidia.com/gpu", Requested: 16, Free: 16, Nodes: twoFree(8, 8),
				SpreadUnplaced: []PodGPUs{podGPUs("c", "n2", 4)}}},
		},
		{
			name:    "a node that lost GPUs while its pods held theirs",
			nodes:   []*corev1.Node{h100("n1", 8), h100("n2", 6)},
			evicted: []*corev1.Pod{gpuPod("a", "n1", 4), gpuPod("b", "n1", 4), gpuPod("c", "n2", 4), gpuPod("d", "n2", 4)},
			want: []Fit{{Resource: "nvidia.com/gpu", Requested: 16, Free: 14,
				Nodes:    []NodeGPUs{{Node: "n1", Allocatable: 8, Free: 8}, {Node: "n2", Allocatable: 6, Free: 6}},
				Unplaced: []PodGPUs{podGPUs("d", "n2", 4)}}},
		},
		{
			name:    "pods that stay hold their GPUs",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 4), gpuPod("b", "n1", 4), gpuPod("c", "n2", 4)},
			staying: []*corev1.Pod{gpuPod("agent", "n2", 2)},
			want:    []Fit{{Resource: "nvidia.com/gpu", Requested: 12, Free: 14, Nodes: twoFree(8, 6)}},
		},
		{
			// Spread smallest first, the 6-GPU pod takes the empty node.
			name:    "a whole-node pod after a smaller one",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 8), gpuPod("b", "n2", 6)},
			staying: []*corev1.Pod{gpuPod("agent", "n2", 2)},
			want: []Fit{{Resource: "nvidia.com/gpu", Requested: 14, Free: 14, Nodes: twoFree(8, 6),
				SpreadUnplaced: []PodGPUs{podGPUs("a", "n1", 8)}}},
		},
		{
			name:    "a pod that stays leaves too little",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 8), gpuPod("b", "n2", 8)},
			staying: []*corev1.Pod{gpuPod("agent", "n2", 1)},
			want: []Fit{{Resource: "nvidia.com/gpu", Requested: 16, Free: 15, Nodes: twoFree(8, 7),
				Unplaced: []PodGPUs{podGPUs("b", "n2", 8)}}},
		},
		{
			name:    "equal requests are placed in the order given",
			nodes:   []*corev1.Node{h100("n1", 4)},
			evicted: []*corev1.Pod{gpuPod("b", "n1", 4), gpuPod("a", "n1", 4), gpuPod("c", "n1", 4)},
			want: []Fit{{Resource: "nvidia.com/gpu", Requested: 12, Free: 4,
				Nodes:    []NodeGPUs{{Node: "n1", Allocatable: 4, Free: 4}},
				Unplaced: []PodGPUs{podGPUs("a", "n1", 4), podGPUs("c", "n1", 4)}}},
		},
	}
}

// accountingCases are TestFits' cases about what is requested and free,
// and which resources are reported.
func accountingCases() []fitsCase {
	withInit := gpuPod("init", "n1", 2)
	withInit.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("6")}}}}
	return []fitsCase{
		{
			name:    "free GPUs never go below zero",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 4)},
			staying: []*corev1.Pod{gpuPod("big", "n2", 6), gpuPod("more", "n2", 6)},
			want:    []Fit{{Resource: "nvidia.com/gpu", Requested: 4, Free: 8, Nodes: twoFree(8, 0)}},
		},
		{
			name:    "a staying pod on another node holds nothing here",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("a", "n1", 8)},
			staying: []*corev1.Pod{gpuPod("elsewhere", "n9", 8)},
			want:    []Fit{{Resource: "nvidia.com/gpu", Requested: 8, Free: 16, Nodes: twoFree(8, 8)}},
		},
		{
			name:    "requests count as the scheduler counts them (an init container's)",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{withInit},
			want:    []Fit{{Resource: "nvidia.com/gpu", Requested: 6, Free: 16, Nodes: twoFree(8, 8)}},
		},
		{
			name:    "one fit per resource, sorted; CPU nodes are not GPU nodes",
			nodes:   []*corev1.Node{h100("n1", 8), newNode("cpu", nfdCPU), mi300x("m1", 8)},
			evicted: []*corev1.Pod{gpuPod("a", "n1", 8), gpuPod("m", "m1", 8, "amd.com/gpu"), gpuPod("web", "cpu", 0)},
			want: []Fit{
				{Resource: "amd.com/gpu", Requested: 8, Free: 8, Nodes: []NodeGPUs{{Node: "m1", Allocatable: 8, Free: 8}}},
				{Resource: "nvidia.com/gpu", Requested: 8, Free: 8, Nodes: []NodeGPUs{{Node: "n1", Allocatable: 8, Free: 8}}},
			},
		},
		{
			name:    "a resource no evicted pod requests is not reported",
			nodes:   []*corev1.Node{h100("n1", 8), mi300x("m1", 8)},
			evicted: []*corev1.Pod{gpuPod("m", "m1", 8, "amd.com/gpu")},
			staying: []*corev1.Pod{gpuPod("agent", "n1", 2)},
			want:    []Fit{{Resource: "amd.com/gpu", Requested: 8, Free: 8, Nodes: []NodeGPUs{{Node: "m1", Allocatable: 8, Free: 8}}}},
		},
		{
			name:    "no evicted pod requests GPUs",
			nodes:   two(8, 8),
			evicted: []*corev1.Pod{gpuPod("web", "n1", 0)},
			staying: []*corev1.Pod{gpuPod("agent", "n2", 2)},
		},
		{name: "no nodes", evicted: []*corev1.Pod{gpuPod("a", "n1", 4)}},
	}
}

// TestFits: what fits back, what fragments when the pods come back
// spread smallest first, what cannot fit at all (a node lost GPUs while
// its pods held theirs, a pod that stays holds too many), one Fit per
// resource.
func TestFits(t *testing.T) {
	for _, tc := range append(placementCases(), accountingCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			got := Fits(tc.nodes, tc.evicted, tc.staying, Options{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Fits (-want +got):\n%s", diff)
			}
			for _, f := range got {
				if want := len(f.Unplaced)+len(f.SpreadUnplaced) > 0; f.Risk() != want {
					t.Errorf("%s: Risk() = %v, want %v", f.Resource, f.Risk(), want)
				}
				if len(f.Unplaced) > 0 && len(f.SpreadUnplaced) > 0 {
					t.Errorf("%s: SpreadUnplaced %v although Unplaced is not empty", f.Resource, f.SpreadUnplaced)
				}
			}
		})
	}
}

// TestFitString: the sentence of the plan's warning, five pods at most.
func TestFitString(t *testing.T) {
	nodes := []NodeGPUs{{Node: "n1", Allocatable: 8, Free: 8}, {Node: "n2", Allocatable: 8, Free: 8}}
	var seven []PodGPUs
	for i := range 7 {
		seven = append(seven, podGPUs(fmt.Sprintf("p%d", i), "n1", 4))
	}
	for _, tc := range []struct {
		name string
		fit  Fit
		want string
	}{
		{"fits", Fit{Resource: "nvidia.com/gpu", Requested: 16, Free: 16, Nodes: nodes},
			"nvidia.com/gpu: 16 requested, 16 free on 2 node(s)"},
		{"does not fit", Fit{Resource: "nvidia.com/gpu", Requested: 16, Free: 14, Nodes: nodes, Unplaced: []PodGPUs{podGPUs("d", "n2", 4)}},
			"nvidia.com/gpu: 16 requested, 14 free on 2 node(s); they do not fit back: placed largest first, ns/d (4) finds no node"},
		{"fragments", Fit{Resource: "nvidia.com/gpu", Requested: 16, Free: 16, Nodes: nodes, SpreadUnplaced: []PodGPUs{podGPUs("c", "n2", 4), podGPUs("e", "n2", 2)}},
			"nvidia.com/gpu: 16 requested, 16 free on 2 node(s); fragmentation risk: coming back smallest first, each onto the node with the most free, ns/c (4), ns/e (2) find no node"},
		{"names five pods at most", Fit{Resource: "nvidia.com/gpu", Requested: 28, Free: 0, Nodes: nodes, Unplaced: seven},
			"nvidia.com/gpu: 28 requested, 0 free on 2 node(s); they do not fit back: placed largest first, ns/p0 (4), ns/p1 (4), ns/p2 (4), ns/p3 (4), ns/p4 (4), and 2 more find no node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fit.String(); got != tc.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestFitJSON pins the JSON of a Fit: it is the gpuFit of the plan
// reports (apiVersion udrain.dev/v1alpha3), whose fields only ever grow.
func TestFitJSON(t *testing.T) {
	f := Fit{Resource: "nvidia.com/gpu", Requested: 8, Free: 6,
		Nodes:    []NodeGPUs{{Node: "n1", Allocatable: 8, Free: 6}},
		Unplaced: []PodGPUs{podGPUs("a", "n1", 8), {Pod: topology.PodRef{Namespace: "ns", Name: "b"}, GPUs: 2}}}
	got, err := json.Marshal([]any{f, Fit{Resource: "amd.com/gpu"}, Capacity{Product: "unknown", GPUs: 1, Nodes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"resource":"nvidia.com/gpu","requested":8,"free":6,` +
		`"unplaced":[{"pod":{"namespace":"ns","name":"a","uid":"uid-a","node":"n1"},"gpus":8},{"pod":{"namespace":"ns","name":"b"},"gpus":2}],` +
		`"nodes":[{"node":"n1","allocatable":8,"free":6}]},` +
		`{"resource":"amd.com/gpu","requested":0,"free":0,"nodes":null},` +
		`{"product":"unknown","gpus":1,"nodes":1}]`
	if string(got) != want {
		t.Errorf("JSON\n%s\nwant\n%s", got, want)
	}
}

// TestCapacityOf: GPUs per vendor and product, sorted.
func TestCapacityOf(t *testing.T) {
	noProduct := newNode("np", map[string]string{"nvidia.com/gpu.present": "true"}, withResource("nvidia.com/gpu", 2, 2))
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  []Capacity
	}{
		{"none", nil, []Capacity{}},
		{"CPU nodes count for nothing", []*corev1.Node{newNode("cpu", nfdCPU)}, []Capacity{}},
		{"per vendor, then product", []*corev1.Node{mi300x("m1", 8), h100("n1", 8), h100("n2", 6), newNode("cpu", nfdCPU)},
			[]Capacity{
				{Vendor: "amd", Product: "AMD-Instinct-MI300X-OAM", GPUs: 8, Nodes: 1},
				{Vendor: "nvidia", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 14, Nodes: 2},
			}},
		{"a product no label names is unknown", []*corev1.Node{noProduct, h100("n1", 8)},
			[]Capacity{
				{Vendor: "nvidia", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, Nodes: 1},
				{Vendor: "nvidia", Product: "unknown", GPUs: 2, Nodes: 1},
			}},
		{"the labels' count when nothing is advertised", []*corev1.Node{newNode("n0", gpuOperatorH100)},
			[]Capacity{{Vendor: "nvidia", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, Nodes: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CapacityOf(tc.nodes, Options{})); diff != "" {
				t.Errorf("CapacityOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequestOfIsPodRequests: a pod's GPUs are resourcehelper.PodRequests'
// on the quick path (containers alone) and on the other.
func TestRequestOfIsPodRequests(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	c := func(n string) corev1.Container {
		return corev1.Container{Name: "c" + n, Resources: corev1.ResourceRequirements{Requests: gpus(n)}}
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{"none", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, 0},
		{"one container", corev1.PodSpec{Containers: []corev1.Container{c("4")}}, 4},
		{"two containers", corev1.PodSpec{Containers: []corev1.Container{c("4"), c("2")}}, 6},
		{"an init container asking more", corev1.PodSpec{InitContainers: []corev1.Container{c("8")}, Containers: []corev1.Container{c("4")}}, 8},
		{"overhead", corev1.PodSpec{Overhead: gpus("1"), Containers: []corev1.Container{c("4")}}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.spec}
			q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})["nvidia.com/gpu"]
			if got := requestOf(p, "nvidia.com/gpu"); got != tc.want || got != q.Value() {
				t.Errorf("requestOf = %d, want %d (PodRequests: %d)", got, tc.want, q.Value())
			}
		})
	}
}
