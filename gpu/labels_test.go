package gpu

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/udrain/udrain"
)

// Helpers for the expected observations of TestScanLabels.
func evHW(src Source, key, value string, v Vendor) Evidence {
	return Evidence{Tier: TierHardware, Source: src, Key: key, Value: value, Vendor: v}
}

func evDesc(src Source, key, value string, v Vendor) Evidence {
	return Evidence{Tier: TierDescriptive, Source: src, Key: key, Value: value, Vendor: v}
}

func candS(value string, prio int, v Vendor, key string) candidate[string] {
	return candidate[string]{value: value, prio: prio, vendor: v, key: key}
}

func candN(value int64, prio int, v Vendor, key string) candidate[int64] {
	return candidate[int64]{value: value, prio: prio, vendor: v, key: key}
}

func malformedLabel(key, value string) Finding {
	return Finding{Code: FindingMalformedLabel, Severity: udrain.SeverityWarning, Key: key, Value: value}
}

// labelCase is one label set and everything scanLabels observes in it.
type labelCase struct {
	labels map[string]string
	want   observations
	opts   []cmp.Option // for a case whose result depends on map order
}

func (c labelCase) name() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c.labels)) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + c.labels[k])
	}
	return b.String()
}

// anyCandidateKey ignores which key a candidate names, for the cloud
// instance labels, whose candidates name the first label seen in map order.
var anyCandidateKey = []cmp.Option{
	cmpopts.IgnoreFields(candidate[int64]{}, "key"),
	cmpopts.IgnoreFields(candidate[string]{}, "key"),
}

const (
	kNFD       = "feature.node.kubernetes.io/"
	kNV        = "nvidia.com/"
	kAMD       = "amd.com/gpu."
	kAMDBeta   = "beta.amd.com/gpu."
	kIntel     = "gpu.intel.com/"
	kKarpenter = "karpenter.k8s.aws/instance-"
	kEKS       = "eks.amazonaws.com/instance-"
	kGKE       = "cloud.google.com/gke-"
	kIT        = "node.kubernetes.io/instance-type"
	kITBeta    = "beta.kubernetes.io/instance-type"
)

// exactKeyCases are the labels read by their whole key.
var exactKeyCases = []labelCase{
	{labels: map[string]string{kNFD + "amd-gpu": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"amd-gpu", "true", VendorAMD)}}},
	{labels: map[string]string{kNFD + "amd-gpu": "false"}},
	{labels: map[string]string{kNFD + "amd-vgpu": "True"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"amd-vgpu", "True", VendorAMD)}}},
	{labels: map[string]string{"intel.feature.node.kubernetes.io/gpu": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, "intel.feature.node.kubernetes.io/gpu", "true", VendorIntel)}}},
	{labels: map[string]string{"intel.feature.node.kubernetes.io/gpu": "no"}},
	{labels: map[string]string{"kubernetes.azure.com/accelerator": "nvidia"}, want: observations{evidence: []Evidence{evHW(SourceAKS, "kubernetes.azure.com/accelerator", "nvidia", VendorNVIDIA)}}},
	{labels: map[string]string{"kubernetes.azure.com/accelerator": "qualcomm"}, want: observations{evidence: []Evidence{evHW(SourceAKS, "kubernetes.azure.com/accelerator", "qualcomm", VendorUnknown)}}},
	{labels: map[string]string{kGKE + "accelerator": "nvidia-tesla-t4"}, want: observations{
		evidence: []Evidence{evHW(SourceGKE, kGKE+"accelerator", "nvidia-tesla-t4", VendorNVIDIA)},
		products: []candidate[string]{candS("nvidia-tesla-t4", prioCloudName, VendorNVIDIA, kGKE+"accelerator")},
	}},
	{labels: map[string]string{kGKE + "accelerator": "amd-mi300x"}, want: observations{
		evidence: []Evidence{evHW(SourceGKE, kGKE+"accelerator", "amd-mi300x", VendorUnknown)},
		products: []candidate[string]{candS("amd-mi300x", prioCloudName, VendorUnknown, kGKE+"accelerator")},
	}},
	{labels: map[string]string{kGKE + "accelerator": "nvidia/t4"}, want: observations{
		evidence: []Evidence{evHW(SourceGKE, kGKE+"accelerator", "nvidia/t4", VendorUnknown)},
		findings: []Finding{malformedLabel(kGKE+"accelerator", "nvidia/t4")},
	}},
	{labels: map[string]string{kGKE + "tpu-accelerator": "tpu-v5-lite-podslice"}, want: observations{
		evidence: []Evidence{evHW(SourceGKE, kGKE+"tpu-accelerator", "tpu-v5-lite-podslice", VendorGoogleTPU)},
		products: []candidate[string]{candS("tpu-v5-lite-podslice", prioCloudName, VendorGoogleTPU, kGKE+"tpu-accelerator")},
	}},
	{labels: map[string]string{kGKE + "gpu-sharing-strategy": "time-sharing"}, want: observations{gkeSharing: "time-sharing"}},
	{labels: map[string]string{kGKE + "max-shared-clients-per-gpu": "4"}, want: observations{gkeMaxClients: 4}},
	{labels: map[string]string{kGKE + "max-shared-clients-per-gpu": "four"}, want: observations{findings: []Finding{malformedLabel(kGKE+"max-shared-clients-per-gpu", "four")}}},
	{labels: map[string]string{kGKE + "gpu-partition-size": "1g.5gb"}, want: observations{gkePartition: "1g.5gb"}},
	{labels: map[string]string{kGKE + "gpu-partition-size": "big"}, want: observations{findings: []Finding{malformedLabel(kGKE+"gpu-partition-size", "big")}}},
	{labels: map[string]string{kGKE + "nodepool": "gpu-pool"}},
}

// nvidiaCases are the labels of GPU Feature Discovery and the GPU Operator.
var nvidiaCases = []labelCase{
	{labels: map[string]string{kNV + "gpu.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNVIDIAOperator, kNV+"gpu.present", "true", VendorNVIDIA)}}},
	{labels: map[string]string{kNV + "gpu.present": "false"}},
	{labels: map[string]string{kNV + "gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"}, want: observations{
		evidence:          []Evidence{evDesc(SourceGFD, kNV+"gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", VendorNVIDIA)},
		products:          []candidate[string]{candS("NVIDIA-A100-SXM4-40GB", prioLabeller, VendorNVIDIA, kNV+"gpu.product")},
		productShared:     true,
		productMIGProfile: "1g.5gb",
	}},
	{labels: map[string]string{kNV + "gpu.product": "NVIDIA/A100"}, want: observations{
		evidence: []Evidence{evDesc(SourceGFD, kNV+"gpu.product", "NVIDIA/A100", VendorNVIDIA)},
		findings: []Finding{malformedLabel(kNV+"gpu.product", "NVIDIA/A100")},
	}},
	{labels: map[string]string{kNV + "gpu.count": "8"}, want: observations{
		evidence: []Evidence{evDesc(SourceGFD, kNV+"gpu.count", "8", VendorNVIDIA)},
		counts:   []candidate[int64]{candN(8, prioLabeller, VendorNVIDIA, kNV+"gpu.count")},
	}},
	{labels: map[string]string{kNV + "gpu.count": "eight"}, want: observations{
		evidence: []Evidence{evDesc(SourceGFD, kNV+"gpu.count", "eight", VendorNVIDIA)},
		findings: []Finding{malformedLabel(kNV+"gpu.count", "eight")},
	}},
	{labels: map[string]string{kNV + "gpu.memory": "81559"}, want: observations{
		evidence: []Evidence{evDesc(SourceGFD, kNV+"gpu.memory", "81559", VendorNVIDIA)},
		memories: []candidate[int64]{candN(81559, prioLabeller, VendorNVIDIA, kNV+"gpu.memory")},
	}},
	{labels: map[string]string{kNV + "gpu.family": "hopper"}, want: observations{
		evidence: []Evidence{evDesc(SourceGFD, kNV+"gpu.family", "hopper", VendorNVIDIA)},
		families: []candidate[string]{candS("hopper", prioLabeller, VendorNVIDIA, kNV+"gpu.family")},
	}},
	{labels: map[string]string{kNV + "gpu.family": ""}, want: observations{evidence: []Evidence{evDesc(SourceGFD, kNV+"gpu.family", "", VendorNVIDIA)}}},
	{labels: map[string]string{kNV + "gpu.replicas": "4"}, want: observations{replicas: 4}},
	{labels: map[string]string{kNV + "gpu.replicas": "x"}, want: observations{findings: []Finding{malformedLabel(kNV+"gpu.replicas", "x")}}},
	{labels: map[string]string{kNV + "gpu.sharing-strategy": "mps"}, want: observations{sharingStrategy: "mps"}},
	{labels: map[string]string{kNV + "mig.strategy": "mixed"}, want: observations{migStrategy: "mixed"}},
	{labels: map[string]string{kNV + "mig.capable": "TRUE"}, want: observations{migCapable: true}},
	{labels: map[string]string{kNV + "mig.capable": "false"}},
	{labels: map[string]string{kNV + "mig.config": "all-1g.10gb"}, want: observations{migConfig: "all-1g.10gb"}},
	{labels: map[string]string{kNV + "mig.config.state": "failed"}, want: observations{migConfigState: "failed"}},
	{labels: map[string]string{kNV + "gpu.deploy.device-plugin": "false"}, want: observations{deployPlugin: "false", hasDeployPlugin: true}},
	{labels: map[string]string{kNV + "gpu.deploy.device-plugin": ""}, want: observations{hasDeployPlugin: true}},
	{labels: map[string]string{kNV + "mig-1g.10gb.count": "14"}, want: observations{
		evidence:    []Evidence{evDesc(SourceGFD, kNV+"mig-1g.10gb.count", "14", VendorNVIDIA)},
		migProfiles: map[string]*MIGProfile{"1g.10gb": {Name: "1g.10gb", Count: 14}},
	}},
	{labels: map[string]string{kNV + "mig-1g.10gb+me.memory": "9728"}, want: observations{
		evidence:    []Evidence{evDesc(SourceGFD, kNV+"mig-1g.10gb+me.memory", "9728", VendorNVIDIA)},
		migProfiles: map[string]*MIGProfile{"1g.10gb+me": {Name: "1g.10gb+me", MemoryMiB: 9728}},
	}},
	{labels: map[string]string{kNV + "mig-1g.10gb.count": "x"}, want: observations{
		evidence:    []Evidence{evDesc(SourceGFD, kNV+"mig-1g.10gb.count", "x", VendorNVIDIA)},
		findings:    []Finding{malformedLabel(kNV+"mig-1g.10gb.count", "x")},
		migProfiles: map[string]*MIGProfile{"1g.10gb": {Name: "1g.10gb"}},
	}},
	{labels: map[string]string{kNV + "mig-1x.10gb.count": "1"}, want: observations{findings: []Finding{malformedLabel(kNV+"mig-1x.10gb.count", "1")}}},
	{labels: map[string]string{kNV + "mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}},
	{labels: map[string]string{kNV + "mig-1g.10.count": "1"}},
	{labels: map[string]string{kNV + "gpu.machine": "DGXH100"}},
}

// amdCases are the labels of the AMD node labeller, in both forms.
var amdCases = []labelCase{
	{labels: map[string]string{kAMD + "product-name": "AMD_Instinct_MI300X_OAM"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMD+"product-name", "AMD_Instinct_MI300X_OAM", VendorAMD)},
		products: []candidate[string]{candS("AMD-Instinct-MI300X-OAM", prioLabeller, VendorAMD, kAMD+"product-name")},
	}},
	{labels: map[string]string{kAMD + "vram": "192G"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMD+"vram", "192G", VendorAMD)},
		memories: []candidate[int64]{candN(196608, prioLabeller, VendorAMD, kAMD+"vram")},
	}},
	{labels: map[string]string{kAMD + "family": "AI"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMD+"family", "AI", VendorAMD)},
		families: []candidate[string]{candS("AI", prioLabeller, VendorAMD, kAMD+"family")},
	}},
	{labels: map[string]string{kAMD + "device-id": "74a1"}, want: observations{evidence: []Evidence{evDesc(SourceAMDLabeller, kAMD+"device-id", "74a1", VendorAMD)}}},
	{labels: map[string]string{kAMD + "cu-count": "304"}},
	{labels: map[string]string{kAMDBeta + "family.AI": "8"}, want: observations{
		evidence:           []Evidence{evDesc(SourceAMDLabeller, kAMDBeta+"family.AI", "8", VendorAMD)},
		families:           []candidate[string]{candS("AI", prioLabeller-1, VendorAMD, kAMDBeta+"family.AI")},
		amdBetaFamilyCount: 8,
	}},
	{labels: map[string]string{kAMDBeta + "device-id.74a1": "4", kAMDBeta + "device-id.74a5": "4"}, want: observations{
		evidence: []Evidence{
			evDesc(SourceAMDLabeller, kAMDBeta+"device-id.74a1", "4", VendorAMD),
			evDesc(SourceAMDLabeller, kAMDBeta+"device-id.74a5", "4", VendorAMD),
		},
		amdBetaDeviceCount: 8,
	}},
	{labels: map[string]string{kAMDBeta + "vram.192G": "8"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMDBeta+"vram.192G", "8", VendorAMD)},
		memories: []candidate[int64]{candN(196608, prioLabeller-1, VendorAMD, kAMDBeta+"vram.192G")},
	}},
	{labels: map[string]string{kAMDBeta + "product-name.AMD_Instinct_MI300X_OAM": "8"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMDBeta+"product-name.AMD_Instinct_MI300X_OAM", "8", VendorAMD)},
		products: []candidate[string]{candS("AMD-Instinct-MI300X-OAM", prioLabeller-1, VendorAMD, kAMDBeta+"product-name.AMD_Instinct_MI300X_OAM")},
	}},
	{labels: map[string]string{kAMDBeta + "family.AI": "x"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMDBeta+"family.AI", "x", VendorAMD)},
		findings: []Finding{malformedLabel(kAMDBeta+"family.AI", "x")},
	}},
	{labels: map[string]string{kAMDBeta + "vram.big": "8"}, want: observations{
		evidence: []Evidence{evDesc(SourceAMDLabeller, kAMDBeta+"vram.big", "8", VendorAMD)},
		findings: []Finding{malformedLabel(kAMDBeta+"vram.big", "big")},
	}},
	{labels: map[string]string{kAMDBeta + "family.": "8"}},
	{labels: map[string]string{kAMDBeta + "family": "8"}},
	{labels: map[string]string{kAMDBeta + "cu-count.304": "8"}},
}

// intelCases are the labels of Intel's GPU plugin NFD hook and rules.
var intelCases = []labelCase{
	{labels: map[string]string{kIntel + "device-id.0bd5.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kIntel+"device-id.0bd5.present", "true", VendorIntel)}}},
	{labels: map[string]string{kIntel + "device-id.0bd5.present": "false"}},
	{labels: map[string]string{kIntel + "device-id.0bd5.count": "2", kIntel + "device-id.0bd6.count": "3"}, want: observations{
		evidence: []Evidence{
			evDesc(SourceIntelPlugin, kIntel+"device-id.0bd5.count", "2", VendorIntel),
			evDesc(SourceIntelPlugin, kIntel+"device-id.0bd6.count", "3", VendorIntel),
		},
		intelDeviceCount: 5,
	}},
	{labels: map[string]string{kIntel + "device-id.0bd5.count": "x"}, want: observations{
		evidence: []Evidence{evDesc(SourceIntelPlugin, kIntel+"device-id.0bd5.count", "x", VendorIntel)},
		findings: []Finding{malformedLabel(kIntel+"device-id.0bd5.count", "x")},
	}},
	{labels: map[string]string{kIntel + "product": "Max_1550"}, want: observations{
		evidence: []Evidence{evDesc(SourceIntelPlugin, kIntel+"product", "Max_1550", VendorIntel)},
		products: []candidate[string]{candS("Max-1550", prioLabeller, VendorIntel, kIntel+"product")},
	}},
	{labels: map[string]string{kIntel + "memory.max": "549755813888"}, want: observations{
		evidence:       []Evidence{evDesc(SourceIntelPlugin, kIntel+"memory.max", "549755813888", VendorIntel)},
		intelMemoryMiB: 524288,
	}},
	{labels: map[string]string{kIntel + "memory.max": "16G"}, want: observations{
		evidence: []Evidence{evDesc(SourceIntelPlugin, kIntel+"memory.max", "16G", VendorIntel)},
		findings: []Finding{malformedLabel(kIntel+"memory.max", "16G")},
	}},
	{labels: map[string]string{kIntel + "millicores": "4000"}, want: observations{
		evidence:        []Evidence{evDesc(SourceIntelPlugin, kIntel+"millicores", "4000", VendorIntel)},
		intelMillicores: 4000,
	}},
	{labels: map[string]string{kIntel + "platform_pvc.present": "true"}, want: observations{
		evidence: []Evidence{evDesc(SourceIntelPlugin, kIntel+"platform_pvc.present", "true", VendorIntel)},
		families: []candidate[string]{candS("pvc", prioLabeller, VendorIntel, kIntel+"platform_pvc.present")},
	}},
	{labels: map[string]string{kIntel + "platform_pvc.present": "false"}},
	{labels: map[string]string{kIntel + "platform_.present": "true"}, want: observations{evidence: []Evidence{evDesc(SourceIntelPlugin, kIntel+"platform_.present", "true", VendorIntel)}}},
	{labels: map[string]string{kIntel + "platform_gen": "12"}},
	{labels: map[string]string{kIntel + "cards": "card0.card1"}},
}

// pciCases are Node Feature Discovery's PCI labels.
var pciCases = []labelCase{
	{labels: map[string]string{kNFD + "pci-10de.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-10de.present", "true", VendorNVIDIA)}}},
	{labels: map[string]string{kNFD + "pci-10de.present": "false"}},
	{labels: map[string]string{kNFD + "pci-10de.sriov.capable": "true"}},
	{labels: map[string]string{kNFD + "pci-0302_10de.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-0302_10de.present", "true", VendorNVIDIA)}}},
	{labels: map[string]string{kNFD + "pci-0680_10de.present": "true"}},
	{labels: map[string]string{kNFD + "pci-10de_1002.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-10de_1002.present", "true", VendorNVIDIA)}}},
	{labels: map[string]string{kNFD + "pci-1002.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-1002.present", "true", VendorAMD)}}},
	{labels: map[string]string{kNFD + "pci-0380_1002.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-0380_1002.present", "true", VendorAMD)}}},
	{labels: map[string]string{kNFD + "pci-1022.present": "true"}},
	{labels: map[string]string{kNFD + "pci-8086.present": "true"}},
	{labels: map[string]string{kNFD + "pci-0380_8086.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-0380_8086.present", "true", VendorIntel)}}},
	{labels: map[string]string{kNFD + "pci-0200_8086.present": "true"}},
	{labels: map[string]string{kNFD + "pci-1da3.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-1da3.present", "true", VendorHabana)}}},
	{labels: map[string]string{kNFD + "pci-1d0f.present": "true"}},
	{labels: map[string]string{kNFD + "pci-0200_1d0f.present": "true"}},
	{labels: map[string]string{kNFD + "pci-1d0f_ec20.present": "true"}},
	{labels: map[string]string{kNFD + "pci-1d0f_7164.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-1d0f_7164.present", "true", VendorAWSNeuron)}}},
	{labels: map[string]string{kNFD + "pci-1200_1d0f_7064.present": "true"}, want: observations{evidence: []Evidence{evHW(SourceNFD, kNFD+"pci-1200_1d0f_7064.present", "true", VendorAWSNeuron)}}},
	{labels: map[string]string{kNFD + "pci-15b3.present": "true"}},
	{labels: map[string]string{kNFD + "cpu-model.vendor_id": "AMD"}},
}

// cloudCases are the instance labels of Karpenter and EKS Auto Mode and the
// instance type.
var cloudCases = []labelCase{
	{labels: map[string]string{kKarpenter + "gpu-count": "8"}, want: observations{
		evidence:     []Evidence{evHW(SourceKarpenter, kKarpenter+"gpu-count", "8", VendorUnknown)},
		counts:       []candidate[int64]{candN(8, prioCloud, VendorUnknown, kKarpenter+"gpu-count")},
		karpenterGPU: cloudInstance{source: SourceKarpenter, count: 8, keys: []string{kKarpenter + "gpu-count"}, values: []string{"8"}},
	}},
	{labels: map[string]string{kKarpenter + "gpu-manufacturer": "nvidia"}, want: observations{
		evidence:     []Evidence{evHW(SourceKarpenter, kKarpenter+"gpu-manufacturer", "nvidia", VendorNVIDIA)},
		karpenterGPU: cloudInstance{source: SourceKarpenter, manufacturer: "nvidia", keys: []string{kKarpenter + "gpu-manufacturer"}, values: []string{"nvidia"}},
	}},
	{labels: map[string]string{kKarpenter + "gpu-name": "a100"}, want: observations{
		evidence:     []Evidence{evHW(SourceKarpenter, kKarpenter+"gpu-name", "a100", VendorUnknown)},
		products:     []candidate[string]{candS("a100", prioCloudName, VendorUnknown, kKarpenter+"gpu-name")},
		karpenterGPU: cloudInstance{source: SourceKarpenter, name: "a100", keys: []string{kKarpenter + "gpu-name"}, values: []string{"a100"}},
	}},
	{labels: map[string]string{kKarpenter + "gpu-memory": "40960"}, want: observations{
		karpenterGPU: cloudInstance{source: SourceKarpenter, memoryMiB: 40960, keys: []string{kKarpenter + "gpu-memory"}, values: []string{"40960"}},
	}},
	{labels: map[string]string{kKarpenter + "gpu-memory": "40960", kKarpenter + "gpu-manufacturer": "nvidia"}, opts: anyCandidateKey, want: observations{
		evidence: []Evidence{
			evHW(SourceKarpenter, kKarpenter+"gpu-manufacturer", "nvidia", VendorNVIDIA),
			evHW(SourceKarpenter, kKarpenter+"gpu-memory", "40960", VendorNVIDIA),
		},
		memories: []candidate[int64]{candN(40960, prioCloud, VendorNVIDIA, "")},
		karpenterGPU: cloudInstance{source: SourceKarpenter, manufacturer: "nvidia", memoryMiB: 40960,
			keys: []string{kKarpenter + "gpu-manufacturer", kKarpenter + "gpu-memory"}, values: []string{"40960", "nvidia"}},
	}},
	{labels: map[string]string{kKarpenter + "gpu-memory": "forty"}, want: observations{
		findings:     []Finding{malformedLabel(kKarpenter+"gpu-memory", "forty")},
		karpenterGPU: cloudInstance{source: SourceKarpenter},
	}},
	{labels: map[string]string{kKarpenter + "gpu-count": "x"}, want: observations{
		findings:     []Finding{malformedLabel(kKarpenter+"gpu-count", "x")},
		karpenterGPU: cloudInstance{source: SourceKarpenter},
	}},
	{labels: map[string]string{kKarpenter + "gpu-driver-version": "550"}, want: observations{karpenterGPU: cloudInstance{source: SourceKarpenter}}},
	{labels: map[string]string{kKarpenter + "accelerator-manufacturer": "aws"}, want: observations{
		evidence:       []Evidence{evHW(SourceKarpenter, kKarpenter+"accelerator-manufacturer", "aws", VendorAWSNeuron)},
		karpenterAccel: cloudInstance{source: SourceKarpenter, manufacturer: "aws", keys: []string{kKarpenter + "accelerator-manufacturer"}, values: []string{"aws"}},
	}},
	{labels: map[string]string{kKarpenter + "cpu": "8"}},
	{labels: map[string]string{kEKS + "gpu-count": "1"}, want: observations{
		evidence: []Evidence{evHW(SourceEKS, kEKS+"gpu-count", "1", VendorUnknown)},
		counts:   []candidate[int64]{candN(1, prioCloud, VendorUnknown, kEKS+"gpu-count")},
		eksGPU:   cloudInstance{source: SourceEKS, count: 1, keys: []string{kEKS + "gpu-count"}, values: []string{"1"}},
	}},
	{labels: map[string]string{kEKS + "accelerator-name": "inferentia", kEKS + "accelerator-count": "1"}, opts: anyCandidateKey, want: observations{
		evidence: []Evidence{
			evHW(SourceEKS, kEKS+"accelerator-count", "1", VendorUnknown),
			evHW(SourceEKS, kEKS+"accelerator-name", "inferentia", VendorUnknown),
		},
		counts:   []candidate[int64]{candN(1, prioCloud, VendorUnknown, "")},
		products: []candidate[string]{candS("inferentia", prioCloudName, VendorUnknown, "")},
		eksAccel: cloudInstance{source: SourceEKS, name: "inferentia", count: 1,
			keys: []string{kEKS + "accelerator-count", kEKS + "accelerator-name"}, values: []string{"1", "inferentia"}},
	}},
	{labels: map[string]string{kIT: "p5.48xlarge"}, want: observations{evidence: []Evidence{evHW(SourceEKS, kIT, "p5.48xlarge", VendorNVIDIA)}}},
	{labels: map[string]string{kITBeta: "g4ad.xlarge"}, want: observations{evidence: []Evidence{evHW(SourceEKS, kITBeta, "g4ad.xlarge", VendorAMD)}}},
	{labels: map[string]string{kIT: "m5.large", kITBeta: "p5.48xlarge"}},
	{labels: map[string]string{kIT: "Standard_ND96isr_H100_v5"}, want: observations{evidence: []Evidence{evHW(SourceAKS, kIT, "Standard_ND96isr_H100_v5", VendorNVIDIA)}}},
	{labels: map[string]string{kIT: "a3-highgpu-8g"}, want: observations{evidence: []Evidence{evHW(SourceGKE, kIT, "a3-highgpu-8g", VendorNVIDIA)}}},
}

// TestScanLabels pins what scanLabels observes in each kind of label: a
// label read as the wrong fact, with the wrong priority, source, tier or
// vendor, fails it.
func TestScanLabels(t *testing.T) {
	opts := []cmp.Option{
		cmp.AllowUnexported(observations{}, candidate[string]{}, candidate[int64]{}, cloudInstance{}),
		cmpopts.IgnoreFields(Finding{}, "Message"),
		cmpopts.EquateEmpty(),
		cmpopts.SortSlices(func(a, b Evidence) bool { return a.Key < b.Key }),
		cmpopts.SortSlices(func(a, b Finding) bool { return a.Key < b.Key }),
		cmpopts.SortSlices(func(a, b string) bool { return a < b }),
	}
	for _, cases := range [][]labelCase{exactKeyCases, nvidiaCases, amdCases, intelCases, pciCases, cloudCases} {
		for _, c := range cases {
			t.Run(c.name(), func(t *testing.T) {
				var got observations
				scanLabels(c.labels, &got)
				if diff := cmp.Diff(c.want, got, append(opts, c.opts...)...); diff != "" {
					t.Errorf("scanLabels(%v) mismatch (-want +got):\n%s", c.labels, diff)
				}
			})
		}
	}
}

// instanceTypeCases name one instance type of each accelerated family of
// EC2, Azure and Compute Engine, and some that are not.
var instanceTypeCases = []struct {
	instanceType string
	vendor       Vendor
	source       Source
}{
	{"p2.xlarge", VendorNVIDIA, SourceEKS},
	{"p3.2xlarge", VendorNVIDIA, SourceEKS},
	{"p3dn.24xlarge", VendorNVIDIA, SourceEKS},
	{"p4d.24xlarge", VendorNVIDIA, SourceEKS},
	{"p4de.24xlarge", VendorNVIDIA, SourceEKS},
	{"p5.48xlarge", VendorNVIDIA, SourceEKS},
	{"p5e.48xlarge", VendorNVIDIA, SourceEKS},
	{"p5en.48xlarge", VendorNVIDIA, SourceEKS},
	{"p6-b200.48xlarge", VendorNVIDIA, SourceEKS},
	{"p6e-gb200.36xlarge", VendorNVIDIA, SourceEKS},
	{"g3.4xlarge", VendorNVIDIA, SourceEKS},
	{"g3s.xlarge", VendorNVIDIA, SourceEKS},
	{"g4dn.xlarge", VendorNVIDIA, SourceEKS},
	{"g5.xlarge", VendorNVIDIA, SourceEKS},
	{"g5g.xlarge", VendorNVIDIA, SourceEKS},
	{"g6.xlarge", VendorNVIDIA, SourceEKS},
	{"g6e.xlarge", VendorNVIDIA, SourceEKS},
	{"g6f.large", VendorNVIDIA, SourceEKS},
	{"gr6.4xlarge", VendorNVIDIA, SourceEKS},
	{"gr6f.4xlarge", VendorNVIDIA, SourceEKS},
	{"g4ad.xlarge", VendorAMD, SourceEKS},
	{"dl1.24xlarge", VendorHabana, SourceEKS},
	{"inf1.xlarge", VendorAWSNeuron, SourceEKS},
	{"inf2.xlarge", VendorAWSNeuron, SourceEKS},
	{"trn1.2xlarge", VendorAWSNeuron, SourceEKS},
	{"trn1n.32xlarge", VendorAWSNeuron, SourceEKS},
	{"trn2.48xlarge", VendorAWSNeuron, SourceEKS},
	{"m5.large", "", ""},
	{"g4.xlarge", "", ""},
	{"Standard_NC24ads_A100_v4", VendorNVIDIA, SourceAKS},
	{"Standard_ND96isr_H100_v5", VendorNVIDIA, SourceAKS},
	{"Standard_NV36ads_A10_v5", VendorNVIDIA, SourceAKS},
	{"Standard_NV32as_v4", VendorAMD, SourceAKS},
	{"Standard_NG32ads_V620_v1", VendorAMD, SourceAKS},
	{"Standard_ND96isr_MI300X_v5", VendorAMD, SourceAKS},
	{"Standard_NP10s", "", ""},
	{"Standard_N", "", ""},
	{"Standard_D4s_v5", "", ""},
	{"a2-highgpu-1g", VendorNVIDIA, SourceGKE},
	{"a3-highgpu-8g", VendorNVIDIA, SourceGKE},
	{"a4-highgpu-8g", VendorNVIDIA, SourceGKE},
	{"a4x-highgpu-4g", VendorNVIDIA, SourceGKE},
	{"g2-standard-4", VendorNVIDIA, SourceGKE},
	{"g4-standard-48", VendorNVIDIA, SourceGKE},
	{"ct4p-hightpu-4t", VendorGoogleTPU, SourceGKE},
	{"ct5l-hightpu-8t", VendorGoogleTPU, SourceGKE},
	{"ct5lp-hightpu-4t", VendorGoogleTPU, SourceGKE},
	{"ct5p-hightpu-4t", VendorGoogleTPU, SourceGKE},
	{"ct6e-standard-4t", VendorGoogleTPU, SourceGKE},
	{"n2-standard-8", "", ""},
	{"a2", VendorNVIDIA, SourceGKE},
	{"", "", ""},
}

// TestInstanceTypeVendor pins the accelerated instance families.
func TestInstanceTypeVendor(t *testing.T) {
	for _, c := range instanceTypeCases {
		if v, s := instanceTypeVendor(c.instanceType); v != c.vendor || s != c.source {
			t.Errorf("instanceTypeVendor(%q) = %q, %q; want %q, %q", c.instanceType, v, s, c.vendor, c.source)
		}
	}
}

// TestLabelTablesCovered checks that every row of the label tables has a
// case in TestScanLabels or TestInstanceTypeVendor, so that no row goes
// unchecked.
func TestLabelTablesCovered(t *testing.T) {
	var keys []string
	for _, cases := range [][]labelCase{exactKeyCases, nvidiaCases, amdCases, intelCases, pciCases, cloudCases} {
		for _, c := range cases {
			keys = slices.AppendSeq(keys, maps.Keys(c.labels))
		}
	}
	covered := func(match func(key string) bool) bool { return slices.ContainsFunc(keys, match) }
	for _, p := range labelPrefixes {
		if !covered(func(k string) bool { return strings.HasPrefix(k, p.prefix) }) {
			t.Errorf("no case for the labels under %s", p.prefix)
		}
		for _, r := range p.names {
			if !covered(func(k string) bool { return k == p.prefix+r.name }) {
				t.Errorf("no case for the label %s%s", p.prefix, r.name)
			}
		}
	}
	for _, p := range intelPatterns {
		if !covered(func(k string) bool {
			name, ok := strings.CutPrefix(k, labelIntelPrefix)
			return ok && strings.HasPrefix(name, p.prefix) && strings.HasSuffix(name, p.suffix)
		}) {
			t.Errorf("no case for the labels %s%s*%s", labelIntelPrefix, p.prefix, p.suffix)
		}
	}
	for prop := range amdBetaProperties {
		if !covered(func(k string) bool { return strings.HasPrefix(k, labelAMDBetaPrefix+prop+".") }) {
			t.Errorf("no case for the labels %s%s.*", labelAMDBetaPrefix, prop)
		}
	}
	for _, pv := range pciVendors {
		if !slices.ContainsFunc(pciCases, func(c labelCase) bool {
			return len(c.want.evidence) == 1 && c.want.evidence[0].Vendor == pv.vendor && strings.Contains(c.want.evidence[0].Key, fmt.Sprintf("%04x", pv.id))
		}) {
			t.Errorf("no case for a PCI label with vendor ID %04x", pv.id)
		}
	}
	families := map[string]bool{}
	for _, c := range instanceTypeCases {
		aws, _, _ := strings.Cut(c.instanceType, ".")
		gce, _, _ := strings.Cut(c.instanceType, "-")
		families[aws], families[gce] = true, true
	}
	for _, table := range []map[string]Vendor{awsFamilies, gceFamilies} {
		for family := range table {
			if !families[family] {
				t.Errorf("no case for the instance family %s", family)
			}
		}
	}
}

// TestLabelTablesUnique checks that a label belongs to one family at most
// and has one rule in it, as scanLabel and lookup, which take the first
// that matches, assume.
func TestLabelTablesUnique(t *testing.T) {
	for i, a := range labelPrefixes {
		for j, b := range labelPrefixes {
			if i != j && strings.HasPrefix(a.prefix, b.prefix) {
				t.Errorf("label prefix %s starts %s", b.prefix, a.prefix)
			}
		}
		names := map[string]bool{}
		for _, r := range a.names {
			if names[r.name] {
				t.Errorf("two rules for the label %s%s", a.prefix, r.name)
			}
			names[r.name] = true
		}
	}
	ids := map[uint16]bool{}
	for _, pv := range pciVendors {
		if ids[pv.id] {
			t.Errorf("two rows for PCI vendor ID %04x", pv.id)
		}
		ids[pv.id] = true
	}
	for i, a := range intelPatterns {
		for _, b := range intelPatterns[:i] {
			if a.prefix == b.prefix && a.suffix == b.suffix {
				t.Errorf("two rules for the labels %s%s*%s", labelIntelPrefix, a.prefix, a.suffix)
			}
		}
	}
}
