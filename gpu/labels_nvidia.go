package gpu

import "strings"

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
