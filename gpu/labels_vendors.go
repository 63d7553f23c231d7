package gpu

import "strings"

// nfdLabels are the Node Feature Discovery labels read by their name after
// "feature.node.kubernetes.io/"; the PCI labels are read by scanPCI.
var nfdLabels = []namedRule{
	// NFD rules that found AMD GPUs.
	{"amd-gpu", labelRule{tier: TierHardware, source: SourceNFD, vendor: VendorAMD, ifTrue: true}},
	{"amd-vgpu", labelRule{tier: TierHardware, source: SourceNFD, vendor: VendorAMD, ifTrue: true}},
}

// A pciVendor is an accelerator maker's PCI vendor ID, with what a PCI
// label with it proves and what else the label must name to prove it.
type pciVendor struct {
	id         uint16
	vendor     Vendor
	needsClass bool            // the label must name a device class
	devices    map[string]bool // if set, the label must name one of these devices
}

// pciVendors are the PCI vendor IDs of accelerator makers.
var pciVendors = [...]pciVendor{
	{id: 0x10de, vendor: VendorNVIDIA},
	{id: 0x1002, vendor: VendorAMD},                     // ATI/AMD graphics; AMD's CPU chipsets are 1022
	{id: 0x8086, vendor: VendorIntel, needsClass: true}, // every Intel server has Intel PCI devices
	{id: 0x1da3, vendor: VendorHabana},
	{id: 0x1d0f, vendor: VendorAWSNeuron, devices: neuronDevices},
}

// pciMaker returns the accelerator maker whose vendor ID the NFD label field
// f is, or nil.
func pciMaker(f string) *pciVendor {
	id, ok := pciID(f)
	if !ok {
		return nil
	}
	for i := range pciVendors {
		if pciVendors[i].id == id {
			return &pciVendors[i]
		}
	}
	return nil
}

// pciID reads a PCI ID as NFD writes it: four lower-case hex digits.
func pciID(f string) (uint16, bool) {
	if len(f) != 4 {
		return 0, false
	}
	var id uint16
	for i := range 4 {
		c := f[i]
		switch {
		case '0' <= c && c <= '9':
			id = id<<4 | uint16(c-'0')
		case 'a' <= c && c <= 'f':
			id = id<<4 | uint16(c-'a'+10)
		default:
			return 0, false
		}
	}
	return id, true
}

// neuronDevices are the PCI device IDs of AWS Inferentia and Trainium chips.
// Amazon's vendor ID also covers ENA NICs and EBS NVMe, so the vendor alone
// proves nothing.
var neuronDevices = map[string]bool{"7064": true, "7164": true, "7264": true, "7364": true}

// pciAcceleratorClass reports whether an NFD class field is a display
// controller (03xx) or a processing accelerator (1200).
func pciAcceleratorClass(class string) bool {
	return len(class) == 4 && (strings.HasPrefix(class, "03") || class == "1200")
}

// scanPCI reads Node Feature Discovery's PCI labels; name is the key without
// "feature.node.kubernetes.io/". A PCI label is pci-<fields>.present, its
// fields joined by "_" in the order NFD is configured with: the default is
// class then vendor ("pci-0302_10de"), the GPU Operator's configuration
// vendor only ("pci-10de"); device IDs may follow.
func (o *observations) scanPCI(key, name, value string) {
	fields, ok := strings.CutPrefix(name, "pci-")
	if !ok {
		return
	}
	fields, ok = strings.CutSuffix(fields, ".present")
	if !ok || !isTrue(value) {
		return
	}
	var class, device string
	var maker *pciVendor
	for i := 0; fields != ""; i++ {
		var f string
		f, fields, _ = strings.Cut(fields, "_")
		switch {
		case maker != nil:
			if device == "" {
				device = f
			}
		case i == 0:
			if maker = pciMaker(f); maker == nil {
				class = f
			}
		default:
			maker = pciMaker(f)
		}
	}
	if class != "" && !pciAcceleratorClass(class) {
		return // an NVSwitch, a NIC, a chipset of the same vendor
	}
	if maker == nil || maker.needsClass && class == "" || maker.devices != nil && !maker.devices[device] {
		return
	}
	o.add(TierHardware, SourceNFD, key, value, maker.vendor)
}

// amdLabels are the AMD node labeller's amd.com/gpu.<property>=<value>
// labels read, by property.
var amdLabels = []namedRule{
	{"product-name", labelRule{tier: TierDescriptive, source: SourceAMDLabeller, vendor: VendorAMD, fact: factProduct, prio: prioLabeller}},
	{"vram", labelRule{tier: TierDescriptive, source: SourceAMDLabeller, vendor: VendorAMD, fact: factMemory, prio: prioLabeller}},
	{"family", labelRule{tier: TierDescriptive, source: SourceAMDLabeller, vendor: VendorAMD, fact: factFamily, prio: prioLabeller}},
	{"device-id", labelRule{tier: TierDescriptive, source: SourceAMDLabeller, vendor: VendorAMD}},
}

// amdBetaProperties are the properties of the AMD node labeller's
// beta.amd.com/gpu.<property>.<value>=<count> labels read: the fact the
// property value gives, ranked below the amd.com/gpu. form, and the sum of
// the counts, if kept.
var amdBetaProperties = map[string]struct {
	fact fact
	sum  setting
}{
	"family":       {fact: factFamily, sum: sumAMDBetaFamilies},
	"device-id":    {sum: sumAMDBetaDevices},
	"vram":         {fact: factMemory},
	"product-name": {fact: factProduct},
}

// scanAMDBeta reads beta.amd.com/gpu.<property>.<value>=<count>, where the
// label value counts the GPUs that have that property value.
func (o *observations) scanAMDBeta(key, name, value string) {
	prop, propValue, ok := strings.Cut(name, ".")
	p, known := amdBetaProperties[prop]
	if !ok || propValue == "" || !known {
		return
	}
	o.add(TierDescriptive, SourceAMDLabeller, key, value, VendorAMD)
	n, ok := o.parse(key, value, parseCount)
	if !ok {
		return
	}
	o.addTo(p.sum, n)
	o.record(p.fact, key, propValue, prioLabeller-1, VendorAMD)
}

// nfdIntelLabels are the labels of the Intel GPU plugin's NFD rules read, by
// their name after "intel.feature.node.kubernetes.io/".
var nfdIntelLabels = []namedRule{
	{"gpu", labelRule{tier: TierHardware, source: SourceNFD, vendor: VendorIntel, ifTrue: true}},
}

// intelLabels are the labels of Intel's GPU plugin NFD hook read, by their
// name after "gpu.intel.com/"; those that name a device or platform are read
// by intelPatterns.
var intelLabels = []namedRule{
	{"product", labelRule{tier: TierDescriptive, source: SourceIntelPlugin, vendor: VendorIntel, fact: factProduct, prio: prioLabeller}},
	// The sum of the local memory of all GPUs, in bytes.
	{"memory.max", labelRule{tier: TierDescriptive, source: SourceIntelPlugin, vendor: VendorIntel, set: setIntelMemory}},
	{"millicores", labelRule{tier: TierDescriptive, source: SourceIntelPlugin, vendor: VendorIntel, set: setIntelMillicores}},
}

// A labelPattern reads the labels named <prefix><subject><suffix> by rule;
// the rule's fact is read from the subject.
type labelPattern struct {
	prefix, suffix string
	rule           labelRule
}

// intelPatterns are the Intel labels that name a device ID or a platform.
var intelPatterns = [...]labelPattern{
	{"device-id.", ".present", labelRule{tier: TierHardware, source: SourceNFD, vendor: VendorIntel, ifTrue: true}},
	{"device-id.", ".count", labelRule{tier: TierDescriptive, source: SourceIntelPlugin, vendor: VendorIntel, set: sumIntelDevices}},
	{"platform_", ".present", labelRule{tier: TierDescriptive, source: SourceIntelPlugin, vendor: VendorIntel, ifTrue: true, fact: factFamily, prio: prioLabeller}},
}

// scanIntelPattern reads the gpu.intel.com/ label name by the first of
// intelPatterns it matches.
func (o *observations) scanIntelPattern(key, name, value string) {
	for i := range intelPatterns {
		p := &intelPatterns[i]
		if strings.HasPrefix(name, p.prefix) && strings.HasSuffix(name, p.suffix) {
			o.apply(&p.rule, key, value, strings.TrimSuffix(strings.TrimPrefix(name, p.prefix), p.suffix))
			return
		}
	}
}
