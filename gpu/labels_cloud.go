package gpu

import "strings"

// gkeLabels are the labels of GKE node pools read, by their name after
// "cloud.google.com/gke-": the accelerator and GPU sharing.
var gkeLabels = []namedRule{
	{"accelerator", labelRule{tier: TierHardware, source: SourceGKE, vendorOf: gkeAcceleratorVendor, fact: factProduct, prio: prioCloudName}},
	{"tpu-accelerator", labelRule{tier: TierHardware, source: SourceGKE, vendor: VendorGoogleTPU, fact: factProduct, prio: prioCloudName}},

	// Not evidence: how the GPUs are shared and partitioned.
	{"gpu-sharing-strategy", labelRule{set: setGKESharing}},
	{"max-shared-clients-per-gpu", labelRule{set: setGKEMaxClients}},
	{"gpu-partition-size", labelRule{set: setGKEPartition}},
}

// gkeAcceleratorVendor reads the vendor from a GKE accelerator name
// ("nvidia-tesla-t4"); any other name is of VendorUnknown.
func gkeAcceleratorVendor(accelerator string) Vendor {
	if strings.HasPrefix(accelerator, "nvidia-") {
		return VendorNVIDIA
	}
	return VendorUnknown
}

// aksLabels are the labels of AKS node pools read, by their name after
// "kubernetes.azure.com/".
var aksLabels = []namedRule{
	{"accelerator", labelRule{tier: TierHardware, source: SourceAKS, vendorOf: vendorFromManufacturer}},
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

// scanCloudInstance reads the instance-gpu-* and instance-accelerator-*
// labels that Karpenter (karpenter.k8s.aws/) and EKS Auto Mode
// (eks.amazonaws.com/) copy from the EC2 instance type; name is the key
// after "instance-".
func (o *observations) scanCloudInstance(gpu, accel *cloudInstance, source Source, key, name, value string) {
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
		n, ok := o.parse(key, value, parseCount)
		if !ok {
			return
		}
		c.count = n
	case "memory":
		n, ok := o.parse(key, value, parseMemoryMiB)
		if !ok {
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

// gceFamilies maps Compute Engine machine families with accelerators to
// their vendor.
var gceFamilies = map[string]Vendor{
	"a2": VendorNVIDIA, "a3": VendorNVIDIA, "a4": VendorNVIDIA, "a4x": VendorNVIDIA, "g2": VendorNVIDIA, "g4": VendorNVIDIA,
	"ct4p": VendorGoogleTPU, "ct5l": VendorGoogleTPU, "ct5lp": VendorGoogleTPU, "ct5p": VendorGoogleTPU, "ct6e": VendorGoogleTPU,
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
		// sizes (NVv4 "as_v4", NG, ND MI300X). The size names follow no
		// family table, so this stays code.
		switch {
		case rest[0] == 'G' || strings.Contains(rest, "MI300X") || rest[0] == 'V' && strings.HasSuffix(rest, "as_v4"):
			return VendorAMD, SourceAKS
		case rest[0] == 'C' || rest[0] == 'D' || rest[0] == 'V':
			return VendorNVIDIA, SourceAKS
		}
		return "", ""
	}
	family, _, _ := strings.Cut(it, "-")
	if v, ok := gceFamilies[family]; ok {
		return v, SourceGKE
	}
	return "", ""
}
