package gpu

import "github.com/udrain/udrain"

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

func severityRank(s udrain.Severity) int {
	switch s {
	case udrain.SeverityError:
		return 2
	case udrain.SeverityWarning:
		return 1
	}
	return 0
}

func tierRank(t Tier) int {
	switch t {
	case TierHardware:
		return 0
	case TierResource:
		return 1
	}
	return 2
}

// chooseVendor picks the vendor with the most votes in the first tier that
// names one: an allocatable resource is the strongest word (it is what the
// scheduler acts on), then hardware labels, then descriptive ones, then a
// resource with capacity but nothing allocatable (a device plugin registered
// devices once). Labels that name no known vendor (a cloud label for another
// maker) still make the node a GPU node, of VendorUnknown. It returns ""
// for a node without any evidence.
func chooseVendor(ev []Evidence, res resources) Vendor {
	var t tally
	for _, a := range res.amounts {
		if a.Allocatable > 0 {
			t.add(a.Vendor)
		}
	}
	if v := t.winner(); v != "" {
		return v
	}
	for _, tier := range [...]Tier{TierHardware, TierDescriptive} {
		any := false
		for _, e := range ev {
			if e.Tier != tier {
				continue
			}
			any = true
			if e.Vendor != "" && e.Vendor != VendorUnknown {
				t.add(e.Vendor)
			}
		}
		if v := t.winner(); v != "" {
			return v
		}
		if any {
			return VendorUnknown
		}
	}
	for _, a := range res.amounts {
		t.add(a.Vendor)
	}
	return t.winner()
}

// tally counts votes for vendors, including vendors named only in
// Options.ExtraResources. The array holds as many vendors as there are
// built-in ones, so a tally stays on the stack; more spill into a slice.
type tally struct {
	fixed [len(vendorOrder)]vote
	n     int
	more  []vote
}

type vote struct {
	v Vendor
	n int
}

func (t *tally) add(v Vendor) {
	for i := range t.n {
		if t.fixed[i].v == v {
			t.fixed[i].n++
			return
		}
	}
	for i := range t.more {
		if t.more[i].v == v {
			t.more[i].n++
			return
		}
	}
	if t.n < len(t.fixed) {
		t.fixed[t.n] = vote{v, 1}
		t.n++
		return
	}
	t.more = append(t.more, vote{v, 1})
}

// winner returns the vendor with the most votes; ties go to the first in
// vendorOrder, then to the smallest name. It returns "" without votes.
func (t *tally) winner() Vendor {
	var best Vendor
	n := 0
	for _, votes := range [2][]vote{t.fixed[:t.n], t.more} {
		for _, c := range votes {
			if c.n > n || c.n == n && (vendorRank(c.v) < vendorRank(best) || vendorRank(c.v) == vendorRank(best) && c.v < best) {
				best, n = c.v, c.n
			}
		}
	}
	return best
}
