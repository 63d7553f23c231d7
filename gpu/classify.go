package gpu

import (
	"fmt"
	appsv1 "k8s.io/api/apps/v1"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// DefaultGracePeriod is how long after a node became Ready a GPU node may go
// without advertising its resource before ClassifyNode calls it broken:
// long enough for a driver container to compile and load its module and the
// device plugin to register.
const DefaultGracePeriod = 10 * time.Minute

// Options tune ClassifyNode and Summarize. The zero value is ready to use.
type Options struct {
	// Clock gives the current time, against which the grace period is
	// measured. Nil means the real clock; tests pass a fake one
	// (k8s.io/utils/clock/testing).
	Clock clock.PassiveClock
	// GracePeriod is how long after becoming Ready a node with GPU hardware
	// may go without advertising its resource (StatusPending) before it is
	// StatusResourceMissing. Zero means DefaultGracePeriod; a negative
	// value means no grace at all.
	GracePeriod time.Duration
	// ExtraResources names extended resources of device plugins that
	// ClassifyNode does not know, with their vendor: a renamed NVIDIA
	// resource ("nvidia.com/a100"), an in-house plugin.
	ExtraResources map[corev1.ResourceName]Vendor
	// DevicePlugin says which of the DaemonSets given to Summarize and
	// Losses are device plugins, and of which vendor. Nil means
	// DevicePluginVendor, which knows the vendors' own plugins; set it to
	// name an in-house plugin too (and fall back to DevicePluginVendor).
	DevicePlugin func(ds *appsv1.DaemonSet) (Vendor, bool)
}

func (o Options) now() time.Time {
	if o.Clock == nil {
		return time.Now()
	}
	return o.Clock.Now()
}

func (o Options) gracePeriod() time.Duration {
	switch {
	case o.GracePeriod == 0:
		return DefaultGracePeriod
	case o.GracePeriod < 0:
		return 0
	}
	return o.GracePeriod
}

// Status is the verdict on a node's accelerators. The values are stable, for
// scripts that match them.
type Status string

const (
	// StatusReady: GPU labels and an allocatable GPU resource agree.
	StatusReady Status = "Ready"
	// StatusDegraded: the resource is advertised, but fewer devices are
	// allocatable than the capacity or the labels say.
	StatusDegraded Status = "Degraded"
	// StatusPending: GPU labels, no allocatable resource yet, and the node
	// became Ready less than the grace period ago: drivers may still be
	// installing.
	StatusPending Status = "Pending"
	// StatusResourceMissing: GPU labels, no allocatable resource, past the
	// grace period. Pods requesting the resource stay Pending; pods that
	// do not request it may use the devices unaccounted, two on one card.
	StatusResourceMissing Status = "ResourceMissing"
	// StatusNodeNotReady: GPU labels, no allocatable resource, and the node
	// is not Ready, so no device plugin can advertise anything.
	StatusNodeNotReady Status = "NodeNotReady"
	// StatusUnlabeled: a GPU resource is advertised but no label says what
	// the node is, so pools that select GPU nodes by label miss it.
	StatusUnlabeled Status = "Unlabeled"
	// StatusNotGPU: no evidence of accelerators at all.
	StatusNotGPU Status = "NotGPU"
)

// IsProblem reports whether the status needs action. StatusPending is not a
// problem yet; StatusNotGPU never is.
func (s Status) IsProblem() bool {
	switch s {
	case StatusDegraded, StatusResourceMissing, StatusNodeNotReady, StatusUnlabeled:
		return true
	}
	return false
}

// SharingStrategy says how one device is shared between pods.
type SharingStrategy string

const (
	// SharingNone: one device per pod.
	SharingNone SharingStrategy = "none"
	// SharingTimeSlicing: the device plugin advertises each device several
	// times (NVIDIA time-slicing, GKE time-sharing); pods share it in turn,
	// without memory isolation.
	SharingTimeSlicing SharingStrategy = "time-slicing"
	// SharingMPS: NVIDIA Multi-Process Service replicas.
	SharingMPS SharingStrategy = "mps"
)

// Sharing describes how a node's devices are split or shared.
type Sharing struct {
	// Strategy is how a device is shared between pods.
	Strategy SharingStrategy `json:"strategy"`
	// Replicas is how many pods share one device (1 when not shared).
	Replicas int64 `json:"replicas"`
	// MIGStrategy is the NVIDIA MIG strategy: "none", "single" (every GPU
	// cut into one profile, advertised as nvidia.com/gpu) or "mixed" (one
	// resource per profile, nvidia.com/mig-<profile>). Empty when no label
	// says.
	MIGStrategy string `json:"migStrategy,omitempty"`
	// MIGCapable is true when GFD reports MIG-capable GPUs.
	MIGCapable bool `json:"migCapable,omitempty"`
	// MIGConfig is the MIG manager's requested configuration
	// (nvidia.com/mig.config) and MIGConfigState its progress
	// (nvidia.com/mig.config.state: pending, rebooting, success, failed).
	MIGConfig      string `json:"migConfig,omitempty"`
	MIGConfigState string `json:"migConfigState,omitempty"`
	// MIGProfiles lists the MIG profiles found in labels and resources,
	// sorted by name.
	MIGProfiles []MIGProfile `json:"migProfiles,omitempty"`
}

// MIGProfile is one MIG profile present on a node.
type MIGProfile struct {
	// Name is the profile, as in resource names: "1g.10gb".
	Name string `json:"name"`
	// Count is the number of instances the labels report.
	Count int64 `json:"count,omitempty"`
	// MemoryMiB is the memory of one instance, from labels.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// Resource is the extended resource advertising the profile under the
	// mixed strategy, with its capacity and allocatable.
	Resource    corev1.ResourceName `json:"resource,omitempty"`
	Capacity    int64               `json:"capacity,omitempty"`
	Allocatable int64               `json:"allocatable,omitempty"`
}

// ResourceAmount is one accelerator extended resource of a node.
type ResourceAmount struct {
	// Name is the resource name, e.g. "nvidia.com/mig-1g.10gb".
	Name corev1.ResourceName `json:"name"`
	// Vendor is the vendor whose device plugin advertises it.
	Vendor Vendor `json:"vendor"`
	// Capacity and Allocatable are its amounts in the node status.
	Capacity    int64 `json:"capacity"`
	Allocatable int64 `json:"allocatable"`
}

// Classification is what ClassifyNode found out about one node.
type Classification struct {
	// Node is the node's name.
	Node string `json:"node"`
	// GPU is true when any tier of evidence says the node has
	// accelerators (GPUs, or Gaudi, Neuron and TPU chips).
	GPU bool `json:"gpu"`
	// Vendor is the accelerators' maker; empty when GPU is false.
	Vendor Vendor `json:"vendor,omitempty"`
	// Product is the device model, normalised the way NVIDIA GPU Feature
	// Discovery writes it ("NVIDIA-H100-80GB-HBM3"), without the -SHARED
	// and -MIG-<profile> suffixes, which are in Sharing. Taken from the most
	// specific label present: a labeller on the node (GFD, AMD, Intel)
	// before an autoscaler or cloud label.
	Product string `json:"product,omitempty"`
	// Family is the architecture family, when a label names it ("hopper",
	// "AI", "pvc").
	Family string `json:"family,omitempty"`
	// Count is the number of devices on the node: the allocatable amount
	// of Resource when advertised (divided by Sharing.Replicas when
	// time-slicing or MPS multiplies it), else LabelCount. Under the MIG
	// single strategy it counts MIG instances; under the mixed strategy,
	// where the resources count MIG instances per profile and
	// nvidia.com/gpu only the GPUs left whole, it is LabelCount (physical
	// GPUs) when labels give one.
	Count int64 `json:"count"`
	// LabelCount is the device count that labels report, 0 if none does.
	LabelCount int64 `json:"labelCount,omitempty"`
	// MemoryMiB is the memory of one device in MiB, from labels; 0 if
	// unknown.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// Resource is the node's primary accelerator resource: the one
	// advertised, or when none is, the one the vendor's device plugin
	// would advertise.
	Resource corev1.ResourceName `json:"resource,omitempty"`
	// Capacity and Allocatable are Resource's amounts in the node status.
	Capacity    int64 `json:"capacity"`
	Allocatable int64 `json:"allocatable"`
	// Resources lists every accelerator resource of the node, sorted by
	// name.
	Resources []ResourceAmount `json:"resources,omitempty"`
	// Sharing says how devices are shared or partitioned.
	Sharing Sharing `json:"sharing"`
	// Dedicated is true when a NoSchedule or NoExecute taint keeps pods
	// without a matching toleration off the node. DedicatedTaints lists
	// those taints; lifecycle taints (node.kubernetes.io/*, cordons,
	// autoscaler scale-down) do not count.
	Dedicated       bool           `json:"dedicated"`
	DedicatedTaints []corev1.Taint `json:"dedicatedTaints,omitempty"`
	// NodeReady is the node's Ready condition; ReadySince is when it last
	// became True (zero when not Ready or unknown).
	NodeReady  bool      `json:"nodeReady"`
	ReadySince time.Time `json:"readySince,omitzero"`
	// Unschedulable is true when the node is cordoned.
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Status is the verdict.
	Status Status `json:"status"`
	// Evidence lists the labels and resources the verdict rests on, by
	// tier, then key.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Findings lists what is wrong or worth knowing, most severe first.
	Findings []Finding `json:"findings,omitempty"`
}

// Problems returns the findings that need action (warnings and errors).
func (c Classification) Problems() []Finding {
	var out []Finding
	for _, f := range c.Findings {
		if f.IsProblem() {
			out = append(out, f)
		}
	}
	return out
}

// ClassifyNode says whether node has accelerators, whose, which and how many,
// whether they are advertised to the scheduler, shared or dedicated, and
// what is wrong. It reads only the node object; it never fails: a label it
// cannot read is a finding. A nil node is not a GPU node.
func ClassifyNode(node *corev1.Node, opts Options) Classification {
	if node == nil {
		return Classification{Status: StatusNotGPU, Sharing: Sharing{Strategy: SharingNone, Replicas: 1}}
	}
	c := Classification{Node: node.Name, Unschedulable: node.Spec.Unschedulable}
	c.NodeReady, c.ReadySince = nodeReady(node)
	c.DedicatedTaints = dedicatedTaints(node.Spec.Taints)
	c.Dedicated = len(c.DedicatedTaints) > 0

	var o observations
	scanLabels(node.Labels, &o)
	res := scanResources(node, opts.ExtraResources)
	c.Resources = res.amounts
	for _, r := range res.amounts {
		o.add(TierResource, SourceKubelet, string(r.Name), fmt.Sprintf("%d/%d", r.Capacity, r.Allocatable), r.Vendor)
	}

	labelled := false // hardware or descriptive evidence
	for _, e := range o.evidence {
		if e.Tier != TierResource {
			labelled = true
			break
		}
	}
	c.Vendor = chooseVendor(o.evidence, res)
	c.GPU = c.Vendor != ""

	var findings []Finding
	if c.GPU {
		c.describe(&o)
		c.pickResource(res)
		c.sharing(&o, res)
		c.count()
		findings = c.judge(&o, res, labelled, opts)
	} else {
		c.Status = StatusNotGPU
		c.Sharing = Sharing{Strategy: SharingNone, Replicas: 1}
	}

	slices.SortFunc(o.findings, func(a, b Finding) int { return strings.Compare(a.Key, b.Key) })
	findings = append(findings, o.findings...)
	slices.SortStableFunc(findings, func(a, b Finding) int { return severityRank(b.Severity) - severityRank(a.Severity) })
	c.Findings = findings
	slices.SortFunc(o.evidence, func(a, b Evidence) int {
		if d := tierRank(a.Tier) - tierRank(b.Tier); d != 0 {
			return d
		}
		return strings.Compare(a.Key, b.Key)
	})
	c.Evidence = o.evidence
	return c
}

// describe fills product, family, memory and label count from the
// best-ranked labels of the chosen vendor.
func (c *Classification) describe(o *observations) {
	if p, ok := best(o.products, c.Vendor); ok {
		c.Product = p.value
	}
	if f, ok := best(o.families, c.Vendor); ok {
		c.Family = f.value
	}
	if n, ok := best(o.counts, c.Vendor); ok {
		c.LabelCount = n.value
	}
	if m, ok := best(o.memories, c.Vendor); ok {
		c.MemoryMiB = m.value
	}
	switch c.Vendor {
	case VendorAMD:
		if c.LabelCount == 0 {
			c.LabelCount = max(o.amdBetaDeviceCount, o.amdBetaFamilyCount)
		}
	case VendorIntel:
		if c.LabelCount == 0 {
			c.LabelCount = o.intelDeviceCount
		}
		if c.LabelCount == 0 {
			c.LabelCount = o.intelMillicores / 1000
		}
		if c.MemoryMiB == 0 && o.intelMemoryMiB > 0 && c.LabelCount > 0 {
			c.MemoryMiB = o.intelMemoryMiB / c.LabelCount
		}
	}
}

// sharing fills Sharing from NVIDIA and GKE labels and the MIG resources.
func (c *Classification) sharing(o *observations, res resources) {
	s := Sharing{
		Strategy:       SharingNone,
		Replicas:       1,
		MIGStrategy:    o.migStrategy,
		MIGCapable:     o.migCapable,
		MIGConfig:      o.migConfig,
		MIGConfigState: o.migConfigState,
	}
	replicas := max(o.replicas, o.gkeMaxClients)
	switch {
	case o.sharingStrategy == "mps" || o.gkeSharing == "mps":
		s.Strategy = SharingMPS
	case o.sharingStrategy == "time-slicing" || o.gkeSharing == "time-sharing":
		s.Strategy = SharingTimeSlicing
	case o.sharingStrategy == "" && (replicas > 1 || o.productShared || res.sharedResource):
		// GFD before v0.15 wrote no sharing-strategy label: replicas and
		// the -SHARED suffix can only mean time-slicing.
		s.Strategy = SharingTimeSlicing
	}
	if s.Strategy != SharingNone && replicas > 1 {
		s.Replicas = replicas
	}
	if o.productMIGProfile != "" {
		o.migProfile(o.productMIGProfile)
		if s.MIGStrategy == "" {
			s.MIGStrategy = "single"
		}
	}
	if o.gkePartition != "" {
		o.migProfile(o.gkePartition)
	}
	for _, r := range res.migs {
		p := o.migProfile(r.profile)
		p.Resource, p.Capacity, p.Allocatable = r.Name, r.Capacity, r.Allocatable
		if s.MIGStrategy == "" {
			s.MIGStrategy = "mixed"
		}
	}
	if o.productMIGProfile != "" && s.MIGStrategy == "single" {
		// Under the single strategy GFD's gpu.count counts MIG instances.
		p := o.migProfiles[o.productMIGProfile]
		if p.Count == 0 {
			p.Count = c.LabelCount
		}
	}
	for _, p := range o.migProfiles {
		s.MIGProfiles = append(s.MIGProfiles, *p)
	}
	slices.SortFunc(s.MIGProfiles, func(a, b MIGProfile) int { return strings.Compare(a.Name, b.Name) })
	c.Sharing = s
}

// count fills Count: allocatable devices when advertised, else the labels'
// count.
func (c *Classification) count() {
	if c.Allocatable <= 0 {
		c.Count = c.LabelCount
		return
	}
	n := c.Allocatable
	if c.Sharing.Replicas > 1 && (c.Resource == "nvidia.com/gpu" || c.Resource == "nvidia.com/gpu.shared") && n%c.Sharing.Replicas == 0 {
		n /= c.Sharing.Replicas
	}
	if c.Sharing.MIGStrategy == "mixed" && c.LabelCount > 0 {
		n = c.LabelCount // MIG resources count instances, nvidia.com/gpu only whole GPUs
	}
	c.Count = n
}

// nodeReady returns the Ready condition and when it last turned True.
func nodeReady(node *corev1.Node) (bool, time.Time) {
	for _, cond := range node.Status.Conditions {
		if cond.Type != corev1.NodeReady {
			continue
		}
		if cond.Status != corev1.ConditionTrue {
			return false, time.Time{}
		}
		return true, cond.LastTransitionTime.Time
	}
	return false, time.Time{}
}
