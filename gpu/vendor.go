package gpu

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Vendor names the maker of a node's accelerators. The values are stable
// lower-case words, safe to match in scripts.
type Vendor string

// The vendors ClassifyNode recognises. A node whose accelerators are known
// only from a cloud label naming another maker gets VendorUnknown.
const (
	VendorUnknown   Vendor = "unknown"
	VendorNVIDIA    Vendor = "nvidia"
	VendorAMD       Vendor = "amd"
	VendorIntel     Vendor = "intel"
	VendorHabana    Vendor = "habana"
	VendorAWSNeuron Vendor = "aws-neuron"
	VendorGoogleTPU Vendor = "google-tpu"
)

// vendorOrder breaks ties between vendors deterministically.
var vendorOrder = [...]Vendor{VendorNVIDIA, VendorAMD, VendorIntel, VendorHabana, VendorAWSNeuron, VendorGoogleTPU, VendorUnknown}

func vendorRank(v Vendor) int {
	for i, o := range vendorOrder {
		if o == v {
			return i
		}
	}
	return len(vendorOrder)
}

// DefaultResource returns the extended resource name that the vendor's
// standard device plugin advertises, or "" for VendorUnknown.
func (v Vendor) DefaultResource() corev1.ResourceName {
	switch v {
	case VendorNVIDIA:
		return "nvidia.com/gpu"
	case VendorAMD:
		return "amd.com/gpu"
	case VendorIntel:
		return "gpu.intel.com/i915"
	case VendorHabana:
		return "habana.ai/gaudi"
	case VendorAWSNeuron:
		return "aws.amazon.com/neuron"
	case VendorGoogleTPU:
		return "google.com/tpu"
	}
	return ""
}

// resourceVendor says whether name is an accelerator resource and whose. The
// rank orders the resources of one vendor: the lowest-ranked resource present
// on a node is its primary resource (whole devices before slices of them).
// Only names that count devices are accepted: nvidia.com/ also holds NIC and
// RDMA resources of the network operator, gpu.intel.com/ holds millicores
// and memory, which are not devices.
func resourceVendor(name corev1.ResourceName, extra map[corev1.ResourceName]Vendor) (v Vendor, rank int, ok bool) {
	if v, ok := extra[name]; ok {
		return v, 0, true
	}
	s := string(name)
	switch {
	case s == "nvidia.com/gpu":
		return VendorNVIDIA, 0, true
	case s == "nvidia.com/gpu.shared":
		return VendorNVIDIA, 1, true
	case strings.HasPrefix(s, "nvidia.com/mig-"):
		return VendorNVIDIA, 2, true
	case s == "amd.com/gpu":
		return VendorAMD, 0, true
	case s == "gpu.intel.com/i915":
		return VendorIntel, 0, true
	case s == "gpu.intel.com/xe":
		return VendorIntel, 1, true
	case strings.HasPrefix(s, "habana.ai/gaudi"):
		return VendorHabana, 0, true
	case s == "aws.amazon.com/neuron":
		return VendorAWSNeuron, 0, true
	case s == "aws.amazon.com/neurondevice":
		return VendorAWSNeuron, 1, true
	case s == "aws.amazon.com/neuroncore":
		return VendorAWSNeuron, 2, true
	case s == "google.com/tpu":
		return VendorGoogleTPU, 0, true
	}
	return "", 0, false
}

// vendorFromManufacturer maps the manufacturer words of cloud and autoscaler
// labels (Karpenter's instance-gpu-manufacturer, EKS Auto Mode's, AKS's
// accelerator) to a Vendor.
func vendorFromManufacturer(s string) Vendor {
	switch strings.ToLower(s) {
	case "nvidia":
		return VendorNVIDIA
	case "amd":
		return VendorAMD
	case "intel":
		return VendorIntel
	case "habana":
		return VendorHabana
	case "aws", "amazon", "amazon web services", "annapurna":
		return VendorAWSNeuron
	case "google":
		return VendorGoogleTPU
	}
	return VendorUnknown
}
