package gpu

import "strings"

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
