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

// cloudInstance holds the instance-gpu-* or instance-accelerator-* labels of
// Karpenter or EKS Auto Mode.
type cloudInstance struct {
	source       Source
	manufacturer string
	name         string
	count        int64
	memoryMiB    int64
	keys         []string // label keys seen, for evidence
	values       []string
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

// PCI vendor IDs of accelerator makers, as NFD writes them.
const (
	pciNVIDIA = "10de"
	pciAMD    = "1002" // ATI/AMD graphics; AMD's CPU chipsets are 1022
	pciIntel  = "8086"
	pciHabana = "1da3"
	pciAmazon = "1d0f"
)

// pciAcceleratorClass reports whether an NFD class field is a display
// controller (03xx) or a processing accelerator (1200).
func pciAcceleratorClass(class string) bool {
	return len(class) == 4 && (strings.HasPrefix(class, "03") || class == "1200")
}

// neuronDevices are the PCI device IDs of AWS Inferentia and Trainium chips.
// Amazon's vendor ID also covers ENA NICs and EBS NVMe, so the vendor alone
// proves nothing.
var neuronDevices = map[string]bool{"7064": true, "7164": true, "7264": true, "7364": true}

// scanNFD reads Node Feature Discovery labels. A PCI label is
// feature.node.kubernetes.io/pci-<fields>.present, its fields joined by "_"
// in the order NFD is configured with: the default is class then vendor
// ("pci-0302_10de"), the GPU Operator's configuration vendor only
// ("pci-10de"); device IDs may follow.
func (o *observations) scanNFD(key, value string) {
	switch key {
	case labelNFDAMDGPU, labelNFDAMDVGPU:
		if isTrue(value) {
			o.add(TierHardware, SourceNFD, key, value, VendorAMD)
		}
		return
	}
	rest, ok := strings.CutPrefix(key, labelNFDPCIPrefix)
	if !ok {
		return
	}
	fields, ok := strings.CutSuffix(rest, ".present")
	if !ok || !isTrue(value) {
		return
	}
	var class, vendorID, device string
	for i := 0; fields != ""; i++ {
		var f string
		f, fields, _ = strings.Cut(fields, "_")
		switch {
		case f == pciNVIDIA || f == pciAMD || f == pciIntel || f == pciHabana || f == pciAmazon:
			if vendorID == "" {
				vendorID = f
				continue
			}
		case i == 0:
			class = f
			continue
		}
		if vendorID != "" && device == "" {
			device = f
		}
	}
	if class != "" && !pciAcceleratorClass(class) {
		return // an NVSwitch, a NIC, a chipset of the same vendor
	}
	var v Vendor
	switch vendorID {
	case pciNVIDIA:
		v = VendorNVIDIA
	case pciAMD:
		v = VendorAMD
	case pciHabana:
		v = VendorHabana
	case pciIntel:
		if class == "" {
			return // every Intel server has Intel PCI devices
		}
		v = VendorIntel
	case pciAmazon:
		if !neuronDevices[device] {
			return
		}
		v = VendorAWSNeuron
	default:
		return
	}
	o.add(TierHardware, SourceNFD, key, value, v)
}

// scanNVIDIA reads GPU Feature Discovery and GPU Operator labels; name is the
// key without "nvidia.com/".
func (o *observations) scanNVIDIA(key, name, value string) {
	const v = VendorNVIDIA
	switch name {
	case "gpu.present":
		if isTrue(value) {
			o.add(TierHardware, SourceNVIDIAOperator, key, value, v)
		}
	case "gpu.product":
		o.add(TierDescriptive, SourceGFD, key, value, v)
		if p, ok := o.product(key, value, prioLabeller, v); ok {
			o.productShared = p.Shared
			o.productMIGProfile = p.MIGProfile
		}
	case "gpu.count":
		o.add(TierDescriptive, SourceGFD, key, value, v)
		o.count(key, value, prioLabeller, v)
	case "gpu.memory":
		o.add(TierDescriptive, SourceGFD, key, value, v)
		o.memory(key, value, prioLabeller, v)
	case "gpu.family":
		o.add(TierDescriptive, SourceGFD, key, value, v)
		o.family(key, value, prioLabeller, v)
	case "gpu.replicas":
		if n, err := parseCount(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.replicas = n
		}
	case "gpu.sharing-strategy":
		o.sharingStrategy = value
	case "mig.strategy":
		o.migStrategy = value
	case "mig.capable":
		o.migCapable = isTrue(value)
	case "mig.config":
		o.migConfig = value
	case "mig.config.state":
		o.migConfigState = value
	case "gpu.deploy.device-plugin":
		o.deployPlugin, o.hasDeployPlugin = value, true
	default:
		if rest, ok := strings.CutPrefix(name, "mig-"); ok {
			o.scanMIGProfileLabel(key, rest, value)
		}
	}
}

// scanMIGProfileLabel reads nvidia.com/mig-<profile>.<attribute>, which GFD
// writes per MIG profile under the mixed strategy. The profile contains dots
// itself ("1g.10gb"), so it ends at the first dot after its "gb".
func (o *observations) scanMIGProfileLabel(key, rest, value string) {
	gb := strings.Index(rest, "gb")
	if gb < 0 {
		return
	}
	dot := strings.IndexByte(rest[gb:], '.')
	if dot < 0 {
		return
	}
	profile, attr := rest[:gb+dot], rest[gb+dot+1:]
	if attr != "count" && attr != "memory" {
		return
	}
	if err := validMIGProfile(profile); err != nil {
		o.malformed(key, value, err)
		return
	}
	p := o.migProfile(profile)
	o.add(TierDescriptive, SourceGFD, key, value, VendorNVIDIA)
	switch attr {
	case "count":
		if n, err := parseCount(value); err != nil {
			o.malformed(key, value, err)
		} else {
			p.Count = n
		}
	case "memory":
		if n, err := parseMemoryMiB(value); err != nil {
			o.malformed(key, value, err)
		} else {
			p.MemoryMiB = n
		}
	}
}

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

// scanAMD reads amd.com/gpu.<property>=<value>; name is the property.
func (o *observations) scanAMD(key, name, value string) {
	const v = VendorAMD
	switch name {
	case "product-name":
		o.add(TierDescriptive, SourceAMDLabeller, key, value, v)
		o.product(key, value, prioLabeller, v)
	case "vram":
		o.add(TierDescriptive, SourceAMDLabeller, key, value, v)
		o.memory(key, value, prioLabeller, v)
	case "family":
		o.add(TierDescriptive, SourceAMDLabeller, key, value, v)
		o.family(key, value, prioLabeller, v)
	case "device-id":
		o.add(TierDescriptive, SourceAMDLabeller, key, value, v)
	}
}

// scanAMDBeta reads beta.amd.com/gpu.<property>.<value>=<count>, where the
// label value counts the GPUs that have that property value.
func (o *observations) scanAMDBeta(key, name, value string) {
	const v = VendorAMD
	prop, propValue, ok := strings.Cut(name, ".")
	if !ok || propValue == "" {
		return
	}
	switch prop {
	case "family", "device-id", "vram", "product-name":
	default:
		return
	}
	o.add(TierDescriptive, SourceAMDLabeller, key, value, v)
	n, err := parseCount(value)
	if err != nil {
		o.malformed(key, value, err)
		return
	}
	switch prop {
	case "family":
		o.amdBetaFamilyCount += n
		o.family(key, propValue, prioLabeller-1, v)
	case "device-id":
		o.amdBetaDeviceCount += n
	case "vram":
		o.memory(key, propValue, prioLabeller-1, v)
	case "product-name":
		o.product(key, propValue, prioLabeller-1, v)
	}
}

// scanIntel reads the labels of Intel's GPU plugin NFD hook and rules; name
// is the key without "gpu.intel.com/".
func (o *observations) scanIntel(key, name, value string) {
	const v = VendorIntel
	switch {
	case strings.HasPrefix(name, "device-id.") && strings.HasSuffix(name, ".present"):
		if isTrue(value) {
			o.add(TierHardware, SourceNFD, key, value, v)
		}
	case strings.HasPrefix(name, "device-id.") && strings.HasSuffix(name, ".count"):
		o.add(TierDescriptive, SourceIntelPlugin, key, value, v)
		if n, err := parseCount(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.intelDeviceCount += n
		}
	case name == "product":
		o.add(TierDescriptive, SourceIntelPlugin, key, value, v)
		o.product(key, value, prioLabeller, v)
	case name == "memory.max":
		// The hook writes the sum of the local memory of all GPUs, in bytes.
		o.add(TierDescriptive, SourceIntelPlugin, key, value, v)
		if n, err := parseBytesAsMiB(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.intelMemoryMiB = n
		}
	case name == "millicores":
		o.add(TierDescriptive, SourceIntelPlugin, key, value, v)
		if n, err := parseCount(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.intelMillicores = n
		}
	case strings.HasPrefix(name, "platform_") && strings.HasSuffix(name, ".present"):
		if isTrue(value) {
			o.add(TierDescriptive, SourceIntelPlugin, key, value, v)
			o.family(key, strings.TrimSuffix(strings.TrimPrefix(name, "platform_"), ".present"), prioLabeller, v)
		}
	}
}

// scanCloudInstance reads the instance-gpu-* and instance-accelerator-*
// labels that Karpenter (karpenter.k8s.aws/) and EKS Auto Mode
// (eks.amazonaws.com/) copy from the EC2 instance type.
func scanCloudInstance(o *observations, gpu, accel *cloudInstance, source Source, key, name, value string) {
	var c *cloudInstance
	var attr string
	switch {
	case strings.HasPrefix(name, "gpu-"):
		c, attr = gpu, name[len("gpu-"):]
	case strings.HasPrefix(name, "accelerator-"):
		c, attr = accel, name[len("accelerator-"):]
	default:
		return
	}
	c.source = source
	switch attr {
	case "manufacturer":
		c.manufacturer = value
	case "name":
		c.name = value
	case "count":
		n, err := parseCount(value)
		if err != nil {
			o.malformed(key, value, err)
			return
		}
		c.count = n
	case "memory":
		n, err := parseMemoryMiB(value)
		if err != nil {
			o.malformed(key, value, err)
			return
		}
		c.memoryMiB = n
	default:
		return
	}
	c.keys = append(c.keys, key)
	c.values = append(c.values, value)
}

// finishCloudInstances turns the cloud instance labels into evidence once
// the manufacturer, which may come after the count in map order, is known.
func (o *observations) finishCloudInstances() {
	for _, c := range []*cloudInstance{&o.karpenterGPU, &o.karpenterAccel, &o.eksGPU, &o.eksAccel} {
		if len(c.keys) == 0 || c.count == 0 && c.manufacturer == "" && c.name == "" {
			continue
		}
		v := VendorUnknown
		if c.manufacturer != "" {
			v = vendorFromManufacturer(c.manufacturer)
		}
		for i, k := range c.keys {
			o.add(TierHardware, c.source, k, c.values[i], v)
		}
		if c.count > 0 {
			o.counts = append(o.counts, candidate[int64]{value: c.count, prio: prioCloud, vendor: v, key: c.keys[0]})
		}
		if c.memoryMiB > 0 {
			o.memories = append(o.memories, candidate[int64]{value: c.memoryMiB, prio: prioCloud, vendor: v, key: c.keys[0]})
		}
		if c.name != "" {
			o.product(c.keys[0], c.name, prioCloudName, v)
		}
	}
}

// scanGKE reads the accelerator and GPU sharing labels of GKE node pools.
func (o *observations) scanGKE(key, value string) {
	switch key {
	case labelGKEAccelerator:
		v := VendorUnknown
		if strings.HasPrefix(value, "nvidia-") {
			v = VendorNVIDIA
		}
		o.add(TierHardware, SourceGKE, key, value, v)
		o.product(key, value, prioCloudName, v)
	case labelGKETPUAccelerator:
		o.add(TierHardware, SourceGKE, key, value, VendorGoogleTPU)
		o.product(key, value, prioCloudName, VendorGoogleTPU)
	case labelGKESharing:
		o.gkeSharing = value
	case labelGKEMaxClients:
		if n, err := parseCount(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.gkeMaxClients = n
		}
	case labelGKEPartitionSize:
		if err := validMIGProfile(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.gkePartition = value
		}
	}
}

// scanInstanceType recognises the accelerated instance families of EC2,
// Azure and Google Compute Engine. Managed node groups of EKS and AKS carry
// no GPU label of their own, so the instance type is their hardware
// evidence.
func (o *observations) scanInstanceType(key, value string) {
	v, source := instanceTypeVendor(value)
	if v != "" {
		o.add(TierHardware, source, key, value, v)
	}
}

// awsFamilies maps EC2 instance families with accelerators to their vendor.
var awsFamilies = map[string]Vendor{
	"p2": VendorNVIDIA, "p3": VendorNVIDIA, "p3dn": VendorNVIDIA, "p4d": VendorNVIDIA, "p4de": VendorNVIDIA,
	"p5": VendorNVIDIA, "p5e": VendorNVIDIA, "p5en": VendorNVIDIA, "p6-b200": VendorNVIDIA, "p6e-gb200": VendorNVIDIA,
	"g3": VendorNVIDIA, "g3s": VendorNVIDIA, "g4dn": VendorNVIDIA, "g5": VendorNVIDIA, "g5g": VendorNVIDIA,
	"g6": VendorNVIDIA, "g6e": VendorNVIDIA, "g6f": VendorNVIDIA, "gr6": VendorNVIDIA, "gr6f": VendorNVIDIA,
	"g4ad": VendorAMD,
	"dl1":  VendorHabana,
	"inf1": VendorAWSNeuron, "inf2": VendorAWSNeuron, "trn1": VendorAWSNeuron, "trn1n": VendorAWSNeuron, "trn2": VendorAWSNeuron,
}

func instanceTypeVendor(it string) (Vendor, Source) {
	if family, _, ok := strings.Cut(it, "."); ok {
		if v, ok := awsFamilies[family]; ok {
			return v, SourceEKS
		}
		return "", ""
	}
	if rest, ok := strings.CutPrefix(it, "Standard_N"); ok && rest != "" {
		// Azure N-series: NC, ND and NV carry NVIDIA GPUs except the AMD
		// sizes (NVv4 "as_v4", NG, ND MI300X).
		switch {
		case rest[0] == 'G' || strings.Contains(rest, "MI300X") || rest[0] == 'V' && strings.HasSuffix(rest, "as_v4"):
			return VendorAMD, SourceAKS
		case rest[0] == 'C' || rest[0] == 'D' || rest[0] == 'V':
			return VendorNVIDIA, SourceAKS
		}
		return "", ""
	}
	family, _, _ := strings.Cut(it, "-")
	switch family {
	case "a2", "a3", "a4", "a4x", "g2", "g4":
		return VendorNVIDIA, SourceGKE
	case "ct4p", "ct5l", "ct5lp", "ct5p", "ct6e":
		return VendorGoogleTPU, SourceGKE
	}
	return "", ""
}
