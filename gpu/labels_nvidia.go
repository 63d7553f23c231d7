package gpu

import "strings"

// nvidiaLabels are the GPU Feature Discovery and GPU Operator labels read,
// by their name after "nvidia.com/". The per-profile MIG labels,
// mig-<profile>.<attribute>, are read by scanMIGProfileLabel.
var nvidiaLabels = []namedRule{
	// The operator's NFD rule: the GPUs are on the PCI bus.
	{"gpu.present", labelRule{tier: TierHardware, source: SourceNVIDIAOperator, vendor: VendorNVIDIA, ifTrue: true}},

	// GFD's description of the GPUs.
	{"gpu.product", labelRule{tier: TierDescriptive, source: SourceGFD, vendor: VendorNVIDIA, fact: factSharingProduct, prio: prioLabeller}},
	{"gpu.count", labelRule{tier: TierDescriptive, source: SourceGFD, vendor: VendorNVIDIA, fact: factCount, prio: prioLabeller}},
	{"gpu.memory", labelRule{tier: TierDescriptive, source: SourceGFD, vendor: VendorNVIDIA, fact: factMemory, prio: prioLabeller}},
	{"gpu.family", labelRule{tier: TierDescriptive, source: SourceGFD, vendor: VendorNVIDIA, fact: factFamily, prio: prioLabeller}},

	// Not evidence: how the GPUs are shared and partitioned, and whether the
	// operator deploys the device plugin.
	{"gpu.replicas", labelRule{set: setReplicas}},
	{"gpu.sharing-strategy", labelRule{set: setSharingStrategy}},
	{"mig.strategy", labelRule{set: setMIGStrategy}},
	{"mig.capable", labelRule{set: setMIGCapable}},
	{"mig.config", labelRule{set: setMIGConfig}},
	{"mig.config.state", labelRule{set: setMIGConfigState}},
	{"gpu.deploy.device-plugin", labelRule{set: setDeployPlugin}},
}

// scanMIGProfileLabel reads nvidia.com/mig-<profile>.<attribute>, which GFD
// writes per MIG profile under the mixed strategy; name is the key without
// "nvidia.com/". The profile contains dots itself ("1g.10gb"), so it ends at
// the first dot after its "gb".
func (o *observations) scanMIGProfileLabel(key, name, value string) {
	rest, ok := strings.CutPrefix(name, "mig-")
	if !ok {
		return
	}
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
		o.setNumber(&p.Count, key, value, parseCount)
	case "memory":
		o.setNumber(&p.MemoryMiB, key, value, parseMemoryMiB)
	}
}
