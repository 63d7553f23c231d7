package gpu

import (
	"fmt"
	"strings"

	"github.com/udrain/udrain"
)

// Label prefixes and keys read by ClassifyNode. The NVIDIA labels are those
// of GPU Feature Discovery and the GPU Operator; the AMD labels those of the
// AMD node labeller (both its amd.com/gpu.<property>=<value> form and its
// beta.amd.com/gpu.<property>.<value>=<count> form); the Intel labels those
// of the Intel GPU plugin's NFD hook and rules. Which labels under each
// prefix are read, and as what, is said by labelPrefixes and the tables it
// names.
const (
	labelNFDPrefix        = "feature.node.kubernetes.io/"
	labelNFDIntelPrefix   = "intel.feature.node.kubernetes.io/"
	labelNVIDIAPrefix     = "nvidia.com/"
	labelAMDPrefix        = "amd.com/gpu."
	labelAMDBetaPrefix    = "beta.amd.com/gpu."
	labelIntelPrefix      = "gpu.intel.com/"
	labelGKEPrefix        = "cloud.google.com/gke-"
	labelAKSPrefix        = "kubernetes.azure.com/"
	labelKarpenterPrefix  = "karpenter.k8s.aws/instance-"
	labelEKSPrefix        = "eks.amazonaws.com/instance-"
	labelInstanceType     = "node.kubernetes.io/instance-type"
	labelInstanceTypeBeta = "beta.kubernetes.io/instance-type"
)

// Priorities of the label sources that describe a device: a labeller that
// ran on the node (GFD, AMD, Intel) knows better than an autoscaler's
// instance catalogue, which knows better than a cloud accelerator name.
const (
	prioCloudName = 1
	prioCloud     = 2
	prioLabeller  = 3
)

// A labelPrefix is a family of labels ClassifyNode reads: a label whose
// name (its key after the prefix) is in names is read by that rule, any
// other as others says.
type labelPrefix struct {
	prefix string
	names  []namedRule
	others scanner
}

// A scanner reads the labels of a family that its names table does not
// list, whose names hold a value (a PCI ID, a MIG profile, a property).
type scanner uint8

const (
	scanNone scanner = iota
	scanNFDPCI
	scanNVIDIAMIGProfile
	scanAMDBetaProperty
	scanIntelPattern
	scanKarpenterInstance
	scanEKSInstance
)

// labelPrefixes are the label families ClassifyNode reads. No prefix starts
// another, so a label belongs to one family at most.
var labelPrefixes = [...]labelPrefix{
	{labelNFDPrefix, nfdLabels, scanNFDPCI},
	{labelNFDIntelPrefix, nfdIntelLabels, scanNone},
	{labelNVIDIAPrefix, nvidiaLabels, scanNVIDIAMIGProfile},
	{labelAMDPrefix, amdLabels, scanNone},
	{labelAMDBetaPrefix, nil, scanAMDBetaProperty},
	{labelIntelPrefix, intelLabels, scanIntelPattern},
	{labelKarpenterPrefix, nil, scanKarpenterInstance},
	{labelEKSPrefix, nil, scanEKSInstance},
	{labelGKEPrefix, gkeLabels, scanNone},
	{labelAKSPrefix, aksLabels, scanNone},
}

// scanLabels reads every label once, dispatching on its prefix, into o.
func scanLabels(labels map[string]string, o *observations) {
	for key, value := range labels {
		o.scanLabel(key, value)
	}
	o.finishCloudInstances()
	if it, ok := labels[labelInstanceType]; ok {
		o.scanInstanceType(labelInstanceType, it)
	} else if it, ok := labels[labelInstanceTypeBeta]; ok {
		o.scanInstanceType(labelInstanceTypeBeta, it)
	}
}

func (o *observations) scanLabel(key, value string) {
	if key == "" {
		return
	}
	for i := range labelPrefixes {
		p := &labelPrefixes[i]
		if p.prefix[0] != key[0] {
			continue // cheaper than comparing the whole prefix
		}
		name, ok := strings.CutPrefix(key, p.prefix)
		if !ok {
			continue
		}
		if r := lookup(p.names, name); r != nil {
			o.apply(r, key, value, value)
		} else {
			o.scan(p.others, key, name, value)
		}
		return
	}
}

// scan reads the label key=value, whose name is the key after its family's
// prefix, with scanner s. The scanners are called directly, not through
// function values, so that the observations of ClassifyNode stay on its
// stack.
func (o *observations) scan(s scanner, key, name, value string) {
	switch s {
	case scanNFDPCI:
		o.scanPCI(key, name, value)
	case scanNVIDIAMIGProfile:
		o.scanMIGProfileLabel(key, name, value)
	case scanAMDBetaProperty:
		o.scanAMDBeta(key, name, value)
	case scanIntelPattern:
		o.scanIntelPattern(key, name, value)
	case scanKarpenterInstance:
		o.scanCloudInstance(&o.karpenterGPU, &o.karpenterAccel, SourceKarpenter, key, name, value)
	case scanEKSInstance:
		o.scanCloudInstance(&o.eksGPU, &o.eksAccel, SourceEKS, key, name, value)
	}
}

// fact is what a label's value tells about the devices. The same fact from
// several labels is ranked by their priority (best).
type fact uint8

const (
	factNone fact = iota
	// factProduct is the product name.
	factProduct
	// factSharingProduct is the product name as GFD writes it, whose
	// -SHARED and -MIG-<profile> suffixes say how the GPUs are shared.
	factSharingProduct
	// factCount is the number of devices.
	factCount
	// factMemory is the memory of one device.
	factMemory
	// factFamily is the architecture or family of the devices.
	factFamily
)

// A setting is an observation field that a label's value sets rather than
// ranks: how the GPUs are shared and managed, and sums over the labels of
// each device model. Like a scanner, it is a name that set resolves, not a
// function value, so that observations stay on the stack.
type setting uint8

const (
	setNone setting = iota
	setReplicas
	setSharingStrategy
	setMIGStrategy
	setMIGCapable
	setMIGConfig
	setMIGConfigState
	setDeployPlugin
	setGKESharing
	setGKEMaxClients
	setGKEPartition
	setIntelMillicores
	setIntelMemory
	// Sums over the labels of each device model.
	sumIntelDevices
	sumAMDBetaDevices
	sumAMDBetaFamilies
)

// A labelRule says what one label is: the evidence it is (none when tier is
// ""), the fact its value gives, and the setting its value sets.
type labelRule struct {
	tier     Tier
	source   Source
	vendor   Vendor
	vendorOf func(value string) Vendor // instead of vendor: the maker the value names
	ifTrue   bool                      // a presence label: nothing unless its value is "true"
	fact     fact
	prio     int
	set      setting
}

// A namedRule is the rule for the label of one name.
type namedRule struct {
	name string
	labelRule
}

// lookup returns the rule for the label name, or nil.
func lookup(rules []namedRule, name string) *labelRule {
	for i := range rules {
		if rules[i].name == name {
			return &rules[i].labelRule
		}
	}
	return nil
}

// apply records what rule r makes of the label key=value. The fact is read
// from subject: the value, or for a label matched by a pattern the part of
// its name the pattern leaves open.
func (o *observations) apply(r *labelRule, key, value, subject string) {
	if r.ifTrue && !isTrue(value) {
		return
	}
	v := r.vendor
	if r.vendorOf != nil {
		v = r.vendorOf(value)
	}
	if r.tier != "" {
		o.add(r.tier, r.source, key, value, v)
	}
	o.record(r.fact, key, subject, r.prio, v)
	o.set(r.set, key, value)
}

// set stores the value of label key in setting f; a malformed value is a
// finding and leaves the setting alone.
func (o *observations) set(f setting, key, value string) {
	switch f {
	case setReplicas:
		o.setNumber(&o.replicas, key, value, parseCount)
	case setSharingStrategy:
		o.sharingStrategy = value
	case setMIGStrategy:
		o.migStrategy = value
	case setMIGCapable:
		o.migCapable = isTrue(value)
	case setMIGConfig:
		o.migConfig = value
	case setMIGConfigState:
		o.migConfigState = value
	case setDeployPlugin:
		o.deployPlugin, o.hasDeployPlugin = value, true
	case setGKESharing:
		o.gkeSharing = value
	case setGKEMaxClients:
		o.setNumber(&o.gkeMaxClients, key, value, parseCount)
	case setGKEPartition:
		if err := validMIGProfile(value); err != nil {
			o.malformed(key, value, err)
		} else {
			o.gkePartition = value
		}
	case setIntelMillicores:
		o.setNumber(&o.intelMillicores, key, value, parseCount)
	case setIntelMemory:
		o.setNumber(&o.intelMemoryMiB, key, value, parseBytesAsMiB)
	case sumIntelDevices, sumAMDBetaDevices, sumAMDBetaFamilies:
		if n, ok := o.parse(key, value, parseCount); ok {
			o.addTo(f, n)
		}
	}
}

// addTo adds the count n to the sum f.
func (o *observations) addTo(f setting, n int64) {
	switch f {
	case sumIntelDevices:
		o.intelDeviceCount += n
	case sumAMDBetaDevices:
		o.amdBetaDeviceCount += n
	case sumAMDBetaFamilies:
		o.amdBetaFamilyCount += n
	}
}

// record ranks the fact f that value gives, from the label key.
func (o *observations) record(f fact, key, value string, prio int, v Vendor) {
	switch f {
	case factProduct:
		o.product(key, value, prio, v)
	case factSharingProduct:
		if p, ok := o.product(key, value, prio, v); ok {
			o.productShared = p.Shared
			o.productMIGProfile = p.MIGProfile
		}
	case factCount:
		o.count(key, value, prio, v)
	case factMemory:
		o.memory(key, value, prio, v)
	case factFamily:
		o.family(key, value, prio, v)
	}
}

func isTrue(v string) bool { return strings.EqualFold(v, "true") }

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

// parse reads a number from the value of label key with read; a value read
// refuses is a malformed label.
func (o *observations) parse(key, value string, read func(string) (int64, error)) (int64, bool) {
	n, err := read(value)
	if err != nil {
		o.malformed(key, value, err)
		return 0, false
	}
	return n, true
}

// setNumber sets *dst to the number the value of label key holds; a
// malformed value leaves *dst alone.
func (o *observations) setNumber(dst *int64, key, value string, read func(string) (int64, error)) {
	if n, ok := o.parse(key, value, read); ok {
		*dst = n
	}
}

func (o *observations) count(key, value string, prio int, v Vendor) {
	if n, ok := o.parse(key, value, parseCount); ok {
		o.counts = append(o.counts, candidate[int64]{value: n, prio: prio, vendor: v, key: key})
	}
}

func (o *observations) memory(key, value string, prio int, v Vendor) {
	if n, ok := o.parse(key, value, parseMemoryMiB); ok {
		o.memories = append(o.memories, candidate[int64]{value: n, prio: prio, vendor: v, key: key})
	}
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
