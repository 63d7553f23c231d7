package gpu

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// testCluster is the production cluster of the seed story after the GPU
// nodes were tainted: two dedicated H100 nodes (one joined after the device
// plugin was installed and got the new taint), an untainted L4 node, an AMD
// node still installing its driver, and CPU nodes.
func testCluster() []*corev1.Node {
	dedicated := withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	return []*corev1.Node{
		newNode("cpu-01", nfdCPU),
		newNode("gpu-01", gpuOperatorH100, dedicated, withResource("nvidia.com/gpu", 8, 8)),
		newNode("gpu-02", gpuOperatorH100, dedicated),
		newNode("gpu-03", gkeL4, withResource("nvidia.com/gpu", 1, 1)),
		newNode("mi-01", amdMI300X, readyFor(time.Minute), withTaint("amd.com/gpu", "", corev1.TaintEffectNoSchedule)),
		newNode("cpu-02", nfdCPU, cordoned(), withTaint("node.kubernetes.io/unschedulable", "", corev1.TaintEffectNoSchedule)),
	}
}

func TestSummarize(t *testing.T) {
	nvidiaDS := devicePluginDS(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	kubeProxy := devicePluginDS()
	kubeProxy.Name, kubeProxy.Spec.Template.Spec.Containers[0].Image = "kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2"
	// The DaemonSets as a List finds them: Summarize picks the plugins.
	s := Summarize(testCluster(), []*appsv1.DaemonSet{kubeProxy, nvidiaDS}, testOptions())

	wantPools := []Pool{
		{Kind: PoolDedicatedGPU, Nodes: []string{"gpu-01", "gpu-02", "mi-01"}, GPUs: 24, AdvertisedGPUs: 8, ProblemNodes: 2},
		{Kind: PoolSharedGPU, Nodes: []string{"gpu-03"}, GPUs: 1, AdvertisedGPUs: 1},
		{Kind: PoolCPU, Nodes: []string{"cpu-01", "cpu-02"}},
	}
	if diff := cmp.Diff(wantPools, s.Pools); diff != "" {
		t.Errorf("pools mismatch (-want +got):\n%s", diff)
	}
	wantProducts := []ProductTotal{
		{Vendor: VendorAMD, Product: "AMD-Instinct-MI300X-OAM", Nodes: 1, GPUs: 8, MemoryMiB: 8 * 196608},
		{Vendor: VendorNVIDIA, Product: "NVIDIA-H100-80GB-HBM3", Nodes: 2, GPUs: 16, AdvertisedGPUs: 8, MemoryMiB: 16 * 81559},
		{Vendor: VendorNVIDIA, Product: "nvidia-l4", Nodes: 1, GPUs: 1, AdvertisedGPUs: 1},
	}
	if diff := cmp.Diff(wantProducts, s.Products); diff != "" {
		t.Errorf("products mismatch (-want +got):\n%s", diff)
	}
	wantStatuses := map[Status]int{StatusNotGPU: 2, StatusReady: 2, StatusResourceMissing: 1, StatusPending: 1}
	if diff := cmp.Diff(wantStatuses, s.Statuses); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}

	// gpu-02 misses its resource because the plugin does not tolerate
	// dedicated=gpu; mi-01 is within its grace period, but no AMD plugin
	// was given, which is reported at once.
	type problem struct {
		Node, DaemonSet string
		Code            FindingCode
	}
	var got []problem
	for _, p := range s.Problems {
		got = append(got, problem{p.Node, p.DaemonSet, p.Code})
	}
	want := []problem{
		{"gpu-02", "", FindingResourceMissing},
		{"gpu-02", "kube-system/nvdp-nvidia-device-plugin", FindingUntoleratedTaint},
		{"mi-01", "", FindingNoDevicePlugin},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if len(s.Diagnoses) != 1 || s.Diagnoses[0].Node != "gpu-02" || s.Diagnoses[0].CanRun {
		t.Errorf("diagnoses = %+v, want one for gpu-02 that cannot run", s.Diagnoses)
	}
	if len(s.Nodes) != 6 || s.Nodes[2].Node != "gpu-02" {
		t.Errorf("nodes not in input order: %d nodes", len(s.Nodes))
	}
	// The nodes that need action are those the pools count.
	if diff := cmp.Diff([]string{"gpu-02", "mi-01"}, s.ProblemNodes()); diff != "" {
		t.Errorf("ProblemNodes (-want +got):\n%s", diff)
	}
	counted := 0
	for _, p := range s.Pools {
		counted += p.ProblemNodes
	}
	if counted != len(s.ProblemNodes()) {
		t.Errorf("pools count %d problem nodes, ProblemNodes lists %d", counted, len(s.ProblemNodes()))
	}
}

func TestSummarizeDaemonSetSelection(t *testing.T) {
	node := newNode("gpu-02", gpuOperatorH100, withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule))
	tolerant := devicePluginDS(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
	amd := devicePluginDS()
	amd.Name, amd.Spec.Template.Spec.Containers[0].Image = "amdgpu-device-plugin-daemonset", "rocm/k8s-device-plugin:1.31"
	custom := devicePluginDS()
	custom.Name, custom.Spec.Template.Spec.Containers[0].Image = "in-house-plugin", "registry.internal/accel:1"
	// A cloud label names an accelerator of a maker gpu does not know.
	unknownVendor := newNode("acc-01", map[string]string{"cloud.google.com/gke-accelerator": "acme-x1"})
	// The in-house plugin serves NVIDIA's resource.
	inHouse := func(ds *appsv1.DaemonSet) (Vendor, bool) {
		if ds.Name == "in-house-plugin" {
			return VendorNVIDIA, true
		}
		return DevicePluginVendor(ds)
	}
	// GKE-style variants: each plugin DaemonSet selects its own OS image.
	variant := func(name, image string, tolerations ...corev1.Toleration) *appsv1.DaemonSet {
		ds := withRequiredAffinity(devicePluginDS(tolerations...), corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			expr("cloud.google.com/gke-os-distribution", corev1.NodeSelectorOpIn, image),
		}})
		ds.Name = name
		return ds
	}
	cos := variant("nvidia-gpu-device-plugin-cos", "cos")
	ubuntu := variant("nvidia-gpu-device-plugin-ubuntu", "ubuntu")
	ubuntuNode := node.DeepCopy()
	ubuntuNode.Labels = merge(ubuntuNode.Labels, map[string]string{"cloud.google.com/gke-os-distribution": "ubuntu"})

	tests := []struct {
		name          string
		node          *corev1.Node
		daemonSets    []*appsv1.DaemonSet
		opts          Options
		wantDiagnosed []string
		wantCodes     []FindingCode
	}{
		{
			name: "variants: only the one selecting the node is blamed", node: ubuntuNode, daemonSets: []*appsv1.DaemonSet{cos, ubuntu},
			wantDiagnosed: []string{"kube-system/nvidia-gpu-device-plugin-cos", "kube-system/nvidia-gpu-device-plugin-ubuntu"},
			wantCodes:     []FindingCode{FindingResourceMissing, FindingUntoleratedTaint},
		},
		{
			name: "variants: when none selects the node, all are reported", node: node, daemonSets: []*appsv1.DaemonSet{cos, ubuntu},
			wantDiagnosed: []string{"kube-system/nvidia-gpu-device-plugin-cos", "kube-system/nvidia-gpu-device-plugin-ubuntu"},
			wantCodes: []FindingCode{FindingResourceMissing, FindingNodeAffinityMismatch, FindingUntoleratedTaint,
				FindingNodeAffinityMismatch, FindingUntoleratedTaint},
		},
		{
			name: "variants: one can run, so no DaemonSet is blamed", node: ubuntuNode,
			daemonSets:    []*appsv1.DaemonSet{cos, variant("nvidia-gpu-device-plugin-ubuntu", "ubuntu", corev1.Toleration{Operator: corev1.TolerationOpExists})},
			wantDiagnosed: []string{"kube-system/nvidia-gpu-device-plugin-cos", "kube-system/nvidia-gpu-device-plugin-ubuntu"},
			wantCodes:     []FindingCode{FindingResourceMissing},
		},
		{name: "no DaemonSets given: nothing diagnosed", node: node, wantCodes: []FindingCode{FindingResourceMissing}},
		{name: "another vendor's plugin only", node: node, daemonSets: []*appsv1.DaemonSet{amd}, wantCodes: []FindingCode{FindingResourceMissing, FindingNoDevicePlugin}},
		{name: "a plugin that can run: the cause is elsewhere", node: node, daemonSets: []*appsv1.DaemonSet{amd, tolerant}, wantDiagnosed: []string{"kube-system/nvdp-nvidia-device-plugin"}, wantCodes: []FindingCode{FindingResourceMissing}},
		{name: "a DaemonSet not known as a plugin is not one", node: node, daemonSets: []*appsv1.DaemonSet{custom}, wantCodes: []FindingCode{FindingResourceMissing, FindingNoDevicePlugin}},
		{
			name: "an in-house plugin named by Options.DevicePlugin", node: node, daemonSets: []*appsv1.DaemonSet{custom},
			opts:          Options{DevicePlugin: inHouse},
			wantDiagnosed: []string{"kube-system/in-house-plugin"}, wantCodes: []FindingCode{FindingResourceMissing, FindingUntoleratedTaint},
		},
		{
			name: "a vendor whose plugins gpu does not know: not diagnosed", node: unknownVendor, daemonSets: []*appsv1.DaemonSet{amd, tolerant},
			wantCodes: []FindingCode{FindingResourceMissing},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			opts.DevicePlugin = tt.opts.DevicePlugin
			s := Summarize([]*corev1.Node{tt.node}, tt.daemonSets, opts)
			var diagnosed []string
			for _, d := range s.Diagnoses {
				diagnosed = append(diagnosed, d.DaemonSet)
			}
			var codes []FindingCode
			for _, p := range s.Problems {
				codes = append(codes, p.Code)
			}
			if diff := cmp.Diff(tt.wantDiagnosed, diagnosed); diff != "" {
				t.Errorf("diagnosed mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCodes, codes); diff != "" {
				t.Errorf("problem codes mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// The schedulable plugin gets an informational finding that says where
	// to look instead.
	s := Summarize([]*corev1.Node{node}, []*appsv1.DaemonSet{tolerant}, testOptions())
	if fs := s.Diagnoses[0].Findings; len(fs) != 1 || fs[0].Code != FindingDevicePluginSchedulable {
		t.Errorf("findings of a schedulable plugin = %+v", fs)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	s := Summarize(nil, nil, Options{})
	want := Summary{
		Nodes:    []Classification{},
		Pools:    []Pool{{Kind: PoolDedicatedGPU, Nodes: []string{}}, {Kind: PoolSharedGPU, Nodes: []string{}}, {Kind: PoolCPU, Nodes: []string{}}},
		Products: []ProductTotal{},
		Statuses: map[Status]int{},
	}
	if diff := cmp.Diff(want, s, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("empty summary mismatch (-want +got):\n%s", diff)
	}
}
