package gpu

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// verdict is the part of a Classification a table row asserts: everything
// but the evidence list and the findings' wording.
type verdict struct {
	GPU         bool
	Vendor      Vendor
	Product     string
	Family      string
	Count       int64
	LabelCount  int64
	MemoryMiB   int64
	Resource    corev1.ResourceName
	Capacity    int64
	Allocatable int64
	Strategy    SharingStrategy
	Replicas    int64
	MIGStrategy string
	MIGProfiles []MIGProfile
	Dedicated   bool
	Status      Status
	Findings    []FindingCode
}

func verdictOf(c Classification) verdict {
	v := verdict{
		GPU: c.GPU, Vendor: c.Vendor, Product: c.Product, Family: c.Family,
		Count: c.Count, LabelCount: c.LabelCount, MemoryMiB: c.MemoryMiB,
		Resource: c.Resource, Capacity: c.Capacity, Allocatable: c.Allocatable,
		Strategy: c.Sharing.Strategy, Replicas: c.Sharing.Replicas,
		MIGStrategy: c.Sharing.MIGStrategy, MIGProfiles: c.Sharing.MIGProfiles,
		Dedicated: c.Dedicated, Status: c.Status,
	}
	for _, f := range c.Findings {
		v.Findings = append(v.Findings, f.Code)
	}
	return v
}

func TestClassifyNode(t *testing.T) {
	gpuTaint := withTaint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)
	tests := []struct {
		name string
		node *corev1.Node
		want verdict
	}{
		{
			name: "GPU Operator H100, tainted, advertised",
			node: newNode("h100", gpuOperatorH100, gpuTaint, withResource("nvidia.com/gpu", 8, 8)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper",
				Count: 8, LabelCount: 8, MemoryMiB: 81559, Resource: "nvidia.com/gpu", Capacity: 8, Allocatable: 8,
				Strategy: SharingNone, Replicas: 1, MIGStrategy: "single", Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "GFD time-slicing: -SHARED product, replicas multiply allocatable",
			node: newNode("a10g-ts", merge(eksG5, map[string]string{
				"nvidia.com/gpu.present":          "true",
				"nvidia.com/gpu.product":          "NVIDIA-A10G-SHARED",
				"nvidia.com/gpu.count":            "4",
				"nvidia.com/gpu.memory":           "23028",
				"nvidia.com/gpu.replicas":         "4",
				"nvidia.com/gpu.sharing-strategy": "time-slicing",
			}), withResource("nvidia.com/gpu", 16, 16)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-A10G", Count: 4, LabelCount: 4, MemoryMiB: 23028,
				Resource: "nvidia.com/gpu", Capacity: 16, Allocatable: 16, Strategy: SharingTimeSlicing, Replicas: 4,
				Status: StatusReady, Findings: []FindingCode{FindingNotDedicated},
			},
		},
		{
			name: "time-slicing with renameByDefault: nvidia.com/gpu.shared, old GFD without strategy label",
			node: newNode("a10g-rename", map[string]string{
				"nvidia.com/gpu.present":  "true",
				"nvidia.com/gpu.product":  "NVIDIA-A10G",
				"nvidia.com/gpu.count":    "1",
				"nvidia.com/gpu.replicas": "4",
			}, gpuTaint, withResource("nvidia.com/gpu.shared", 4, 4)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-A10G", Count: 1, LabelCount: 1,
				Resource: "nvidia.com/gpu.shared", Capacity: 4, Allocatable: 4, Strategy: SharingTimeSlicing, Replicas: 4,
				Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "MPS with MIG single: both suffixes split off the product",
			node: newNode("a100-mps", map[string]string{
				"nvidia.com/gpu.present":          "true",
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED",
				"nvidia.com/gpu.count":            "56",
				"nvidia.com/gpu.memory":           "4864",
				"nvidia.com/gpu.replicas":         "2",
				"nvidia.com/gpu.sharing-strategy": "mps",
				"nvidia.com/mig.strategy":         "single",
			}, gpuTaint, withResource("nvidia.com/gpu", 112, 112)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-A100-SXM4-40GB", Count: 56, LabelCount: 56, MemoryMiB: 4864,
				Resource: "nvidia.com/gpu", Capacity: 112, Allocatable: 112, Strategy: SharingMPS, Replicas: 2,
				MIGStrategy: "single", MIGProfiles: []MIGProfile{{Name: "1g.5gb", Count: 56}},
				Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "MIG mixed: one resource per profile, Count is physical GPUs",
			node: newNode("a100-mixed", gfdA100MixedMIG, gpuTaint,
				withResource("nvidia.com/mig-1g.10gb", 14, 14), withResource("nvidia.com/mig-3g.40gb", 4, 4), withResource("nvidia.com/gpu", 0, 0)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-A100-SXM4-80GB", Family: "ampere", Count: 8, LabelCount: 8, MemoryMiB: 81920,
				Resource: "nvidia.com/mig-1g.10gb", Capacity: 14, Allocatable: 14, Strategy: SharingNone, Replicas: 1,
				MIGStrategy: "mixed", MIGProfiles: []MIGProfile{
					{Name: "1g.10gb", Count: 14, MemoryMiB: 9728, Resource: "nvidia.com/mig-1g.10gb", Capacity: 14, Allocatable: 14},
					{Name: "3g.40gb", Count: 4, MemoryMiB: 40192, Resource: "nvidia.com/mig-3g.40gb", Capacity: 4, Allocatable: 4},
				},
				Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "AMD GPU Operator MI300X, both labeller forms",
			node: newNode("mi300x", amdMI300X, withTaint("amd.com/gpu", "", corev1.TaintEffectNoSchedule), withResource("amd.com/gpu", 8, 8)),
			want: verdict{
				GPU: true, Vendor: VendorAMD, Product: "AMD-Instinct-MI300X-OAM", Family: "AI", Count: 8, LabelCount: 8, MemoryMiB: 196608,
				Resource: "amd.com/gpu", Capacity: 8, Allocatable: 8, Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "AMD labeller beta form only",
			node: newNode("mi250", map[string]string{
				"beta.amd.com/gpu.family.AI":      "4",
				"beta.amd.com/gpu.device-id.740c": "4",
				"beta.amd.com/gpu.vram.64G":       "4",
			}, withResource("amd.com/gpu", 4, 4)),
			want: verdict{
				GPU: true, Vendor: VendorAMD, Family: "AI", Count: 4, LabelCount: 4, MemoryMiB: 65536,
				Resource: "amd.com/gpu", Capacity: 4, Allocatable: 4, Strategy: SharingNone, Replicas: 1, Status: StatusReady,
				Findings: []FindingCode{FindingNotDedicated},
			},
		},
		{
			name: "Intel Max 1550: memory.max is the sum over GPUs in bytes",
			node: newNode("pvc", intelMax1550, withTaint("gpu.intel.com/i915", "", corev1.TaintEffectNoSchedule), withResource("gpu.intel.com/i915", 4, 4),
				withResource("gpu.intel.com/millicores", 4000, 4000)),
			want: verdict{
				GPU: true, Vendor: VendorIntel, Product: "Max-1550", Family: "pvc", Count: 4, LabelCount: 4, MemoryMiB: 131072,
				Resource: "gpu.intel.com/i915", Capacity: 4, Allocatable: 4, Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "GKE L4 with GKE's automatic taint",
			node: newNode("gke-l4", gkeL4, gpuTaint, withResource("nvidia.com/gpu", 1, 1)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "nvidia-l4", Count: 1,
				Resource: "nvidia.com/gpu", Capacity: 1, Allocatable: 1, Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "GKE time-sharing",
			node: newNode("gke-ts", merge(gkeL4, map[string]string{
				"cloud.google.com/gke-gpu-sharing-strategy":       "time-sharing",
				"cloud.google.com/gke-max-shared-clients-per-gpu": "3",
			}), gpuTaint, withResource("nvidia.com/gpu", 3, 3)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "nvidia-l4", Count: 1,
				Resource: "nvidia.com/gpu", Capacity: 3, Allocatable: 3, Strategy: SharingTimeSlicing, Replicas: 3, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "GKE TPU",
			node: newNode("gke-tpu", gkeTPU, withTaint("google.com/tpu", "present", corev1.TaintEffectNoSchedule), withResource("google.com/tpu", 4, 4)),
			want: verdict{
				GPU: true, Vendor: VendorGoogleTPU, Product: "tpu-v5-lite-podslice", Count: 4,
				Resource: "google.com/tpu", Capacity: 4, Allocatable: 4, Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "EKS managed node group g5 without a device plugin",
			node: newNode("eks-g5", eksG5),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Resource: "nvidia.com/gpu", Strategy: SharingNone, Replicas: 1, Status: StatusResourceMissing,
				Findings: []FindingCode{FindingResourceMissing, FindingNotDedicated},
			},
		},
		{
			name: "AKS A100 with the recommended sku=gpu taint",
			node: newNode("aks-a100", aksA100, withTaint("sku", "gpu", corev1.TaintEffectNoSchedule), withResource("nvidia.com/gpu", 1, 1)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Count: 1, Resource: "nvidia.com/gpu", Capacity: 1, Allocatable: 1,
				Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "Karpenter p4d: product, count and memory from the instance catalogue",
			node: newNode("karpenter-p4d", karpenterP4d, gpuTaint, withResource("nvidia.com/gpu", 8, 8)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "a100", Count: 8, LabelCount: 8, MemoryMiB: 40960,
				Resource: "nvidia.com/gpu", Capacity: 8, Allocatable: 8, Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "Karpenter inf2: Neuron devices before Neuron cores",
			node: newNode("karpenter-inf2", karpenterInf2, withTaint("aws.amazon.com/neuron", "", corev1.TaintEffectNoSchedule),
				withResource("aws.amazon.com/neuron", 1, 1), withResource("aws.amazon.com/neuroncore", 2, 2)),
			want: verdict{
				GPU: true, Vendor: VendorAWSNeuron, Product: "inferentia", Count: 1, LabelCount: 1,
				Resource: "aws.amazon.com/neuron", Capacity: 1, Allocatable: 1, Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "Habana Gaudi found by its PCI vendor",
			node: newNode("dl1", map[string]string{"feature.node.kubernetes.io/pci-1200_1da3.present": "true", "node.kubernetes.io/instance-type": "dl1.24xlarge"},
				withTaint("habana.ai/gaudi", "", corev1.TaintEffectNoExecute), withResource("habana.ai/gaudi", 8, 8)),
			want: verdict{
				GPU: true, Vendor: VendorHabana, Count: 8, Resource: "habana.ai/gaudi", Capacity: 8, Allocatable: 8,
				Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady,
			},
		},
		{
			name: "CPU node: Intel chipset and Amazon NIC PCI labels are not accelerators",
			node: newNode("cpu", merge(nfdCPU, map[string]string{"node.kubernetes.io/instance-type": "m7i.8xlarge"})),
			want: verdict{Status: StatusNotGPU, Strategy: SharingNone, Replicas: 1},
		},
		{
			name: "NVSwitch and NIC of NVIDIA's vendor with class fields are not GPUs",
			node: newNode("nvswitch-only", map[string]string{
				"feature.node.kubernetes.io/pci-0680_10de.present": "true",
				"feature.node.kubernetes.io/pci-0200_15b3.present": "true",
			}),
			want: verdict{Status: StatusNotGPU, Strategy: SharingNone, Replicas: 1},
		},
		{
			name: "resource listed as zero on a CPU node is no evidence",
			node: newNode("cpu-zero", nfdCPU, withResource("nvidia.com/gpu", 0, 0)),
			want: verdict{Status: StatusNotGPU, Strategy: SharingNone, Replicas: 1},
		},
		{
			name: "advertised without any GPU label",
			node: newNode("unlabeled", nfdCPU, gpuTaint, withResource("nvidia.com/gpu", 2, 2)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Count: 2, Resource: "nvidia.com/gpu", Capacity: 2, Allocatable: 2,
				Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusUnlabeled, Findings: []FindingCode{FindingUnlabeled},
			},
		},
		{
			name: "within the grace period after Ready: pending, not yet a problem",
			node: newNode("fresh", map[string]string{"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, readyFor(3*time.Minute), gpuTaint),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Resource: "nvidia.com/gpu", Strategy: SharingNone, Replicas: 1, Dedicated: true,
				Status: StatusPending, Findings: []FindingCode{FindingResourcePending},
			},
		},
		{
			name: "past the grace period: resource missing",
			node: newNode("stale", map[string]string{"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, readyFor(11*time.Minute), gpuTaint),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Resource: "nvidia.com/gpu", Strategy: SharingNone, Replicas: 1, Dedicated: true,
				Status: StatusResourceMissing, Findings: []FindingCode{FindingResourceMissing},
			},
		},
		{
			name: "GPU labels on a node that is not Ready",
			node: newNode("down", gpuOperatorH100, notReady(), gpuTaint, withTaint("node.kubernetes.io/unreachable", "", corev1.TaintEffectNoExecute)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper", Count: 8, LabelCount: 8, MemoryMiB: 81559,
				Resource: "nvidia.com/gpu", Strategy: SharingNone, Replicas: 1, MIGStrategy: "single", Dedicated: true,
				Status: StatusNodeNotReady, Findings: []FindingCode{FindingNodeNotReady},
			},
		},
		{
			name: "capacity without allocatable: plugin gone or all devices unhealthy",
			node: newNode("plugin-gone", gpuOperatorH100, gpuTaint, withResource("nvidia.com/gpu", 8, 0)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper", Count: 8, LabelCount: 8, MemoryMiB: 81559,
				Resource: "nvidia.com/gpu", Capacity: 8, Strategy: SharingNone, Replicas: 1, MIGStrategy: "single", Dedicated: true,
				Status: StatusResourceMissing, Findings: []FindingCode{FindingResourceMissing, FindingAllocatableZero},
			},
		},
		{
			name: "one unhealthy device",
			node: newNode("xid", gpuOperatorH100, gpuTaint, withResource("nvidia.com/gpu", 8, 7)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper", Count: 7, LabelCount: 8, MemoryMiB: 81559,
				Resource: "nvidia.com/gpu", Capacity: 8, Allocatable: 7, Strategy: SharingNone, Replicas: 1, MIGStrategy: "single", Dedicated: true,
				Status: StatusDegraded, Findings: []FindingCode{FindingUnhealthyDevices, FindingCountMismatch},
			},
		},
		{
			name: "malformed labels are findings, the rest still counts",
			node: newNode("bad-labels", merge(gpuOperatorH100, map[string]string{
				"nvidia.com/gpu.count":  "eight",
				"nvidia.com/gpu.memory": "80 gigs",
			}), gpuTaint, withResource("nvidia.com/gpu", 8, 8)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper", Count: 8,
				Resource: "nvidia.com/gpu", Capacity: 8, Allocatable: 8, Strategy: SharingNone, Replicas: 1, MIGStrategy: "single", Dedicated: true,
				Status: StatusReady, Findings: []FindingCode{FindingMalformedLabel, FindingMalformedLabel},
			},
		},
		{
			name: "MIG manager failed and the operator paused the device plugin",
			node: newNode("mig-failed", merge(gfdA100MixedMIG, map[string]string{
				"nvidia.com/mig.config.state":         "failed",
				"nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
			}), gpuTaint),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "NVIDIA-A100-SXM4-80GB", Family: "ampere", Count: 8, LabelCount: 8, MemoryMiB: 81920,
				Resource: "nvidia.com/gpu", Strategy: SharingNone, Replicas: 1, MIGStrategy: "mixed", MIGProfiles: []MIGProfile{
					{Name: "1g.10gb", Count: 14, MemoryMiB: 9728}, {Name: "3g.40gb", Count: 4, MemoryMiB: 40192},
				},
				Dedicated: true, Status: StatusResourceMissing,
				Findings: []FindingCode{FindingResourceMissing, FindingMIGConfigFailed, FindingDevicePluginDisabled},
			},
		},
		{
			name: "lifecycle taints do not make a node dedicated",
			node: newNode("cordoned-gpu", gkeL4, cordoned(), withTaint("node.kubernetes.io/unschedulable", "", corev1.TaintEffectNoSchedule),
				withTaint("ToBeDeletedByClusterAutoscaler", "1767225600", corev1.TaintEffectNoSchedule),
				withTaint("nvidia.com/gpu", "present", corev1.TaintEffectPreferNoSchedule), withResource("nvidia.com/gpu", 1, 1)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Product: "nvidia-l4", Count: 1, Resource: "nvidia.com/gpu", Capacity: 1, Allocatable: 1,
				Strategy: SharingNone, Replicas: 1, Status: StatusReady, Findings: []FindingCode{FindingNotDedicated},
			},
		},
		{
			name: "an Intel integrated GPU beside NVIDIA GPUs: conflict noted, the advertised vendor wins",
			node: newNode("workstation", map[string]string{
				"feature.node.kubernetes.io/pci-0300_8086.present": "true",
				"feature.node.kubernetes.io/pci-0300_10de.present": "true",
			}, gpuTaint, withResource("nvidia.com/gpu", 1, 1)),
			want: verdict{
				GPU: true, Vendor: VendorNVIDIA, Count: 1, Resource: "nvidia.com/gpu", Capacity: 1, Allocatable: 1,
				Strategy: SharingNone, Replicas: 1, Dedicated: true, Status: StatusReady, Findings: []FindingCode{FindingVendorConflict},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verdictOf(ClassifyNode(tt.node, testOptions()))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ClassifyNode(%s) mismatch (-want +got):\n%s", tt.node.Name, diff)
			}
		})
	}
}

// TestClassifyNodeEvidence checks that the evidence keeps the three tiers
// apart and names its sources.
func TestClassifyNodeEvidence(t *testing.T) {
	n := newNode("h100", map[string]string{
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.product":                      "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":                        "8",
		"karpenter.k8s.aws/instance-gpu-count":        "8",
		"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
		"node.kubernetes.io/instance-type":            "p5.48xlarge",
		"kubernetes.io/hostname":                      "h100",
	}, withResource("nvidia.com/gpu", 8, 8))
	want := []Evidence{
		{Tier: TierHardware, Source: SourceNFD, Key: "feature.node.kubernetes.io/pci-10de.present", Value: "true", Vendor: VendorNVIDIA},
		{Tier: TierHardware, Source: SourceKarpenter, Key: "karpenter.k8s.aws/instance-gpu-count", Value: "8", Vendor: VendorNVIDIA},
		{Tier: TierHardware, Source: SourceKarpenter, Key: "karpenter.k8s.aws/instance-gpu-manufacturer", Value: "nvidia", Vendor: VendorNVIDIA},
		{Tier: TierHardware, Source: SourceEKS, Key: "node.kubernetes.io/instance-type", Value: "p5.48xlarge", Vendor: VendorNVIDIA},
		{Tier: TierHardware, Source: SourceNVIDIAOperator, Key: "nvidia.com/gpu.present", Value: "true", Vendor: VendorNVIDIA},
		{Tier: TierResource, Source: SourceKubelet, Key: "nvidia.com/gpu", Value: "8/8", Vendor: VendorNVIDIA},
		{Tier: TierDescriptive, Source: SourceGFD, Key: "nvidia.com/gpu.count", Value: "8", Vendor: VendorNVIDIA},
		{Tier: TierDescriptive, Source: SourceGFD, Key: "nvidia.com/gpu.product", Value: "NVIDIA-H100-80GB-HBM3", Vendor: VendorNVIDIA},
	}
	got := ClassifyNode(n, testOptions()).Evidence
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evidence mismatch (-want +got):\n%s", diff)
	}
}

func TestClassifyNodeGracePeriod(t *testing.T) {
	labels := map[string]string{"nvidia.com/gpu.present": "true"}
	tests := []struct {
		name  string
		ready time.Duration
		grace time.Duration
		want  Status
	}{
		{"zero value uses the default: inside", DefaultGracePeriod - time.Second, 0, StatusPending},
		{"zero value uses the default: at the boundary", DefaultGracePeriod, 0, StatusResourceMissing},
		{"longer grace for slow driver builds", 25 * time.Minute, 30 * time.Minute, StatusPending},
		{"negative means none", time.Second, -1, StatusResourceMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Clock: clocktesting.NewFakePassiveClock(testNow), GracePeriod: tt.grace}
			got := ClassifyNode(newNode("n", labels, readyFor(tt.ready)), opts).Status
			if got != tt.want {
				t.Errorf("Status = %s, want %s", got, tt.want)
			}
		})
	}

	// The same node moves from Pending to ResourceMissing as the clock
	// advances, without sleeping.
	clock := clocktesting.NewFakePassiveClock(testNow)
	n := newNode("n", labels, readyFor(time.Minute))
	if got := ClassifyNode(n, Options{Clock: clock}).Status; got != StatusPending {
		t.Fatalf("at first Status = %s, want %s", got, StatusPending)
	}
	clock.SetTime(testNow.Add(DefaultGracePeriod))
	if got := ClassifyNode(n, Options{Clock: clock}).Status; got != StatusResourceMissing {
		t.Fatalf("after the grace period Status = %s, want %s", got, StatusResourceMissing)
	}
}

func TestClassifyNodeExtraResources(t *testing.T) {
	n := newNode("renamed", map[string]string{"nvidia.com/gpu.present": "true"}, withResource("nvidia.com/a100", 4, 4))
	if got := ClassifyNode(n, testOptions()).Status; got != StatusResourceMissing {
		t.Fatalf("without ExtraResources Status = %s, want %s", got, StatusResourceMissing)
	}
	opts := testOptions()
	opts.ExtraResources = map[corev1.ResourceName]Vendor{"nvidia.com/a100": VendorNVIDIA}
	c := ClassifyNode(n, opts)
	if c.Status != StatusReady || c.Resource != "nvidia.com/a100" || c.Count != 4 {
		t.Errorf("with ExtraResources got Status=%s Resource=%s Count=%d, want Ready nvidia.com/a100 4", c.Status, c.Resource, c.Count)
	}
}

func TestClassifyNodeExtraVendor(t *testing.T) {
	n := newNode("cloud-ai", nil, withResource("qualcomm.com/qaic", 8, 8))
	opts := testOptions()
	opts.ExtraResources = map[corev1.ResourceName]Vendor{"qualcomm.com/qaic": "qualcomm"}
	got := verdictOf(ClassifyNode(n, opts))
	want := verdict{
		GPU: true, Vendor: "qualcomm", Count: 8, Resource: "qualcomm.com/qaic", Capacity: 8, Allocatable: 8,
		Strategy: SharingNone, Replicas: 1, Status: StatusUnlabeled, Findings: []FindingCode{FindingUnlabeled, FindingNotDedicated},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestClassifyNodeManyVendors has more distinct vendors than the tally
// keeps inline; the one with most advertised resources still wins.
func TestClassifyNodeManyVendors(t *testing.T) {
	opts := testOptions()
	opts.ExtraResources = map[corev1.ResourceName]Vendor{}
	var res []nodeOption
	for _, v := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		name := v + ".example.com/accel"
		opts.ExtraResources[corev1.ResourceName(name)] = Vendor(v)
		res = append(res, withResource(name, 1, 1))
	}
	opts.ExtraResources["j.example.com/accel-2"] = "j"
	res = append(res, withResource("j.example.com/accel-2", 1, 1))
	if got := ClassifyNode(newNode("many", nil, res...), opts).Vendor; got != "j" {
		t.Errorf("Vendor = %q, want j", got)
	}
}

func TestClassifyNodeNil(t *testing.T) {
	c := ClassifyNode(nil, Options{})
	if c.GPU || c.Status != StatusNotGPU {
		t.Errorf("ClassifyNode(nil) = GPU %v Status %s, want not a GPU node", c.GPU, c.Status)
	}
}

// TestClassifyNodeFindingMessages checks that the findings a user acts on
// say what to do.
func TestClassifyNodeFindingMessages(t *testing.T) {
	c := ClassifyNode(newNode("eks-g5", eksG5), testOptions())
	if len(c.Findings) == 0 {
		t.Fatal("no findings")
	}
	f := c.Findings[0]
	for _, want := range []string{"nvidia.com/gpu", "node.kubernetes.io/instance-type=g5.12xlarge", "2h0m0s", "device plugin DaemonSet", "two on one card"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("ResourceMissing message %q lacks %q", f.Message, want)
		}
	}
	nd := c.Findings[1]
	if nd.Code != FindingNotDedicated || nd.Fix != "kubectl taint node eks-g5 nvidia.com/gpu=present:NoSchedule" {
		t.Errorf("NotDedicated finding = %+v", nd)
	}
}

// TestClassificationJSON checks the field names the CLI's -o json prints.
func TestClassificationJSON(t *testing.T) {
	c := ClassifyNode(newNode("h100", gpuOperatorH100, withTaint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule), withResource("nvidia.com/gpu", 8, 8)), testOptions())
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"node", "gpu", "vendor", "product", "count", "memoryMiB", "resource", "capacity", "allocatable", "sharing", "dedicated", "dedicatedTaints", "nodeReady", "readySince", "status", "evidence"} {
		if _, ok := m[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, b)
		}
	}
	var back Classification
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Errorf("JSON round trip changed the classification (-before +after):\n%s", diff)
	}
}
