package gpu

import (
	"fmt"
	"github.com/udrain/udrain"
	"strings"
)

// Label keys and prefixes read by ClassifyNode. The NVIDIA keys are those of
// GPU Feature Discovery and the GPU Operator; the AMD keys those of the AMD
// node labeller (both its amd.com/gpu.<property>=<value> form and its
// beta.amd.com/gpu.<property>.<value>=<count> form); the Intel keys those of
// the Intel GPU plugin's NFD hook and rules.
const (
	labelNFDPrefix     = "feature.node.kubernetes.io/"
	labelNFDPCIPrefix  = labelNFDPrefix + "pci-"
	labelNFDAMDGPU     = labelNFDPrefix + "amd-gpu"
	labelNFDAMDVGPU    = labelNFDPrefix + "amd-vgpu"
	labelNFDIntelGPU   = "intel.feature.node.kubernetes.io/gpu"
	labelNVIDIAPrefix  = "nvidia.com/"
	labelAMDPrefix     = "amd.com/gpu."
	labelAMDBetaPrefix = "beta.amd.com/gpu."
	labelIntelPrefix   = "gpu.intel.com/"

	labelGKEAccelerator    = "cloud.google.com/gke-accelerator"
	labelGKETPUAccelerator = "cloud.google.com/gke-tpu-accelerator"
	labelGKESharing        = "cloud.google.com/gke-gpu-sharing-strategy"
	labelGKEMaxClients     = "cloud.google.com/gke-max-shared-clients-per-gpu"
	labelGKEPartitionSize  = "cloud.google.com/gke-gpu-partition-size"
	labelAKSAccelerator    = "kubernetes.azure.com/accelerator"
	labelKarpenterPrefix   = "karpenter.k8s.aws/instance-"
	labelEKSPrefix         = "eks.amazonaws.com/instance-"
	labelInstanceType      = "node.kubernetes.io/instance-type"
	labelInstanceTypeBeta  = "beta.kubernetes.io/instance-type"
)

// Priorities of the label sources that describe a device: a labeller that
// ran on the node (GFD, AMD, Intel) knows better than an autoscaler's
// instance catalogue, which knows better than a cloud accelerator name.
const (
	prioCloudName = 1
	prioCloud     = 2
	prioLabeller  = 3
)

type candidate[T comparable] struct {
	value  T
	prio   int
	vendor Vendor
	key    string
}

// best returns the highest-priority candidate of vendor v (or of no vendor);
// among equals, the first seen with the smallest key, so the result does not
// depend on map order.
func best[T comparable](cs []candidate[T], v Vendor) (candidate[T], bool) {
	var out candidate[T]
	found := false
	for _, c := range cs {
		if c.vendor != v && c.vendor != "" && c.vendor != VendorUnknown {
			continue
		}
		if !found || c.prio > out.prio || c.prio == out.prio && c.key < out.key {
			out, found = c, true
		}
	}
	return out, found
}

// observations is what the labels of one node say.
type observations struct {
	evidence []Evidence
	findings []Finding // malformed labels, sorted by key before use

	products []candidate[string]
	counts   []candidate[int64]
	memories []candidate[int64]
	families []candidate[string]

	// NVIDIA sharing and MIG.
	replicas          int64
	sharingStrategy   string
	productShared     bool
	productMIGProfile string
	migStrategy       string
	migCapable        bool
	migConfig         string
	migConfigState    string
	migProfiles       map[string]*MIGProfile
	deployPlugin      string
	hasDeployPlugin   bool

	// GKE sharing.
	gkeSharing    string
	gkeMaxClients int64
	gkePartition  string

	// Sums over per-property labels.
	amdBetaDeviceCount int64
	amdBetaFamilyCount int64
	intelDeviceCount   int64
	intelMillicores    int64
	intelMemoryMiB     int64

	karpenterGPU, karpenterAccel, eksGPU, eksAccel cloudInstance
}

func (o *observations) add(tier Tier, source Source, key, value string, v Vendor) {
	if o.evidence == nil {
		o.evidence = make([]Evidence, 0, 16) // a GPU Operator node yields about 12
	}
	o.evidence = append(o.evidence, Evidence{Tier: tier, Source: source, Key: key, Value: value, Vendor: v})
}

func (o *observations) malformed(key, value string, err error) {
	o.findings = append(o.findings, Finding{
		Code:     FindingMalformedLabel,
		Severity: udrain.SeverityWarning,
		Message:  fmt.Sprintf("label %s: %v; fix or remove the label (its writer may be misconfigured or outdated).", key, err),
		Key:      key,
		Value:    value,
	})
}

func (o *observations) count(key, value string, prio int, v Vendor) {
	n, err := parseCount(value)
	if err != nil {
		o.malformed(key, value, err)
		return
	}
	o.counts = append(o.counts, candidate[int64]{value: n, prio: prio, vendor: v, key: key})
}

func (o *observations) memory(key, value string, prio int, v Vendor) {
	n, err := parseMemoryMiB(value)
	if err != nil {
		o.malformed(key, value, err)
		return
	}
	o.memories = append(o.memories, candidate[int64]{value: n, prio: prio, vendor: v, key: key})
}

// product records a product label value; it returns the parsed value for
// the caller's sharing facts.
func (o *observations) product(key, value string, prio int, v Vendor) (product, bool) {
	p, err := parseProduct(value)
	if err != nil {
		o.malformed(key, value, err)
		return product{}, false
	}
	o.products = append(o.products, candidate[string]{value: p.Name, prio: prio, vendor: v, key: key})
	return p, true
}

func (o *observations) family(key, value string, prio int, v Vendor) {
	if value == "" {
		return
	}
	o.families = append(o.families, candidate[string]{value: value, prio: prio, vendor: v, key: key})
}

// scanLabels reads every label once, dispatching on its prefix, into o.
func scanLabels(labels map[string]string, o *observations) {
	for key, value := range labels {
		switch {
		case strings.HasPrefix(key, labelNFDPrefix):
			o.scanNFD(key, value)
		case strings.HasPrefix(key, labelNVIDIAPrefix):
			o.scanNVIDIA(key, key[len(labelNVIDIAPrefix):], value)
		case strings.HasPrefix(key, labelAMDPrefix):
			o.scanAMD(key, key[len(labelAMDPrefix):], value)
		case strings.HasPrefix(key, labelAMDBetaPrefix):
			o.scanAMDBeta(key, key[len(labelAMDBetaPrefix):], value)
		case strings.HasPrefix(key, labelIntelPrefix):
			o.scanIntel(key, key[len(labelIntelPrefix):], value)
		case key == labelNFDIntelGPU:
			if isTrue(value) {
				o.add(TierHardware, SourceNFD, key, value, VendorIntel)
			}
		case strings.HasPrefix(key, labelKarpenterPrefix):
			scanCloudInstance(o, &o.karpenterGPU, &o.karpenterAccel, SourceKarpenter, key, key[len(labelKarpenterPrefix):], value)
		case strings.HasPrefix(key, labelEKSPrefix):
			scanCloudInstance(o, &o.eksGPU, &o.eksAccel, SourceEKS, key, key[len(labelEKSPrefix):], value)
		case strings.HasPrefix(key, "cloud.google.com/gke-"):
			o.scanGKE(key, value)
		case key == labelAKSAccelerator:
			v := vendorFromManufacturer(value)
			o.add(TierHardware, SourceAKS, key, value, v)
		}
	}
	o.finishCloudInstances()
	if it, ok := labels[labelInstanceType]; ok {
		o.scanInstanceType(labelInstanceType, it)
	} else if it, ok := labels[labelInstanceTypeBeta]; ok {
		o.scanInstanceType(labelInstanceTypeBeta, it)
	}
}

func isTrue(v string) bool { return strings.EqualFold(v, "true") }

func (o *observations) migProfile(name string) *MIGProfile {
	if o.migProfiles == nil {
		o.migProfiles = make(map[string]*MIGProfile)
	}
	p := o.migProfiles[name]
	if p == nil {
		p = &MIGProfile{Name: name}
		o.migProfiles[name] = p
	}
	return p
}
