package gpu

// Tier says how much a piece of evidence proves. The three tiers are
// independent: comparing them is what finds a broken node.
type Tier string

const (
	// TierHardware is evidence that the devices are physically there,
	// written by something that looked at the PCI bus or at the instance
	// type: Node Feature Discovery PCI labels, the GPU operators' NFD rules
	// (nvidia.com/gpu.present), cloud provider and autoscaler labels.
	TierHardware Tier = "hardware"
	// TierResource is an extended resource in the node's capacity or
	// allocatable: the device plugin registered the devices with the
	// kubelet, so the scheduler can hand them out.
	TierResource Tier = "resource"
	// TierDescriptive is a label that describes the devices (product,
	// count, memory, family), written by a labeller that ran on the node:
	// NVIDIA GPU Feature Discovery, the AMD node labeller, Intel's GPU
	// plugin hook.
	TierDescriptive Tier = "descriptive"
)

// Source names what wrote a piece of evidence.
type Source string

// The sources ClassifyNode reads.
const (
	SourceNFD            Source = "node-feature-discovery"
	SourceNVIDIAOperator Source = "nvidia-gpu-operator"
	SourceGFD            Source = "nvidia-gpu-feature-discovery"
	SourceAMDLabeller    Source = "amd-node-labeller"
	SourceIntelPlugin    Source = "intel-gpu-plugin"
	SourceGKE            Source = "gke"
	SourceEKS            Source = "eks"
	SourceAKS            Source = "aks"
	SourceKarpenter      Source = "karpenter"
	SourceInstanceType   Source = "instance-type"
	SourceKubelet        Source = "kubelet"
)

// Evidence is one label or resource that ClassifyNode took into account.
type Evidence struct {
	// Tier says what the evidence proves.
	Tier Tier `json:"tier"`
	// Source says what wrote it.
	Source Source `json:"source"`
	// Key is the label key or the resource name.
	Key string `json:"key"`
	// Value is the label value, or for a resource "capacity/allocatable".
	Value string `json:"value"`
	// Vendor is the vendor the evidence points to, when it points to one.
	Vendor Vendor `json:"vendor,omitempty"`
}
