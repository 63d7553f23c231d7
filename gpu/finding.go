package gpu

import "github.com/udrain/udrain"

// FindingCode identifies a kind of finding. The values are stable, for
// scripts that filter them.
type FindingCode string

// Findings of ClassifyNode.
const (
	// FindingResourceMissing: the node has GPU labels but no allocatable
	// GPU resource, past the grace period.
	FindingResourceMissing FindingCode = "ResourceMissing"
	// FindingResourcePending: as FindingResourceMissing, but still within
	// the grace period after the node became Ready.
	FindingResourcePending FindingCode = "ResourcePending"
	// FindingNodeNotReady: the node's Ready condition is not True.
	FindingNodeNotReady FindingCode = "NodeNotReady"
	// FindingAllocatableZero: capacity lists devices but allocatable has
	// none: the device plugin stopped or every device is unhealthy.
	FindingAllocatableZero FindingCode = "AllocatableZero"
	// FindingUnhealthyDevices: allocatable is below capacity.
	FindingUnhealthyDevices FindingCode = "UnhealthyDevices"
	// FindingCountMismatch: fewer devices are advertised than the labels
	// count.
	FindingCountMismatch FindingCode = "CountMismatch"
	// FindingUnlabeled: a GPU resource is advertised but no label says the
	// node has GPUs.
	FindingUnlabeled FindingCode = "Unlabeled"
	// FindingMalformedLabel: a label value could not be read.
	FindingMalformedLabel FindingCode = "MalformedLabel"
	// FindingVendorConflict: the evidence names more than one vendor.
	FindingVendorConflict FindingCode = "VendorConflict"
	// FindingNotDedicated: a GPU node has no NoSchedule or NoExecute taint,
	// so any pod may land on it.
	FindingNotDedicated FindingCode = "NotDedicated"
	// FindingMIGConfigFailed: the NVIDIA MIG manager reports that applying
	// the node's MIG configuration failed.
	FindingMIGConfigFailed FindingCode = "MIGConfigFailed"
	// FindingDevicePluginDisabled: the NVIDIA GPU Operator's
	// nvidia.com/gpu.deploy.device-plugin label keeps the device plugin off
	// the node.
	FindingDevicePluginDisabled FindingCode = "DevicePluginDisabled"
)

// Findings of DiagnoseDaemonSet and Summarize.
const (
	// FindingUntoleratedTaint: the DaemonSet's pods do not tolerate a
	// NoSchedule or NoExecute taint of the node.
	FindingUntoleratedTaint FindingCode = "UntoleratedTaint"
	// FindingNodeSelectorMismatch: the node lacks a label of the
	// DaemonSet's nodeSelector, or has another value.
	FindingNodeSelectorMismatch FindingCode = "NodeSelectorMismatch"
	// FindingNodeAffinityMismatch: no term of the DaemonSet's required node
	// affinity matches the node.
	FindingNodeAffinityMismatch FindingCode = "NodeAffinityMismatch"
	// FindingInvalidNodeAffinity: a term of the required node affinity
	// cannot be parsed; it matches no node.
	FindingInvalidNodeAffinity FindingCode = "InvalidNodeAffinity"
	// FindingNodeNameMismatch: the pod template pins another node by name.
	FindingNodeNameMismatch FindingCode = "NodeNameMismatch"
	// FindingDevicePluginSchedulable: the DaemonSet's pods can run on the
	// node, so the missing resource has another cause.
	FindingDevicePluginSchedulable FindingCode = "DevicePluginSchedulable"
	// FindingNoDevicePlugin: none of the DaemonSets given to Summarize is a
	// device plugin for the node's vendor.
	FindingNoDevicePlugin FindingCode = "NoDevicePlugin"
)

// Finding is one thing found wrong with, or worth knowing about, a node.
type Finding struct {
	// Code identifies the kind of finding.
	Code FindingCode `json:"code"`
	// Severity ranks it.
	Severity udrain.Severity `json:"severity"`
	// Message says what is wrong and what to do, in one or two sentences.
	Message string `json:"message"`
	// Key is the label, resource, taint or selector key involved, if any.
	Key string `json:"key,omitempty"`
	// Value is the offending value, if any.
	Value string `json:"value,omitempty"`
	// Fix is a ready-to-run command or ready-to-paste snippet that
	// resolves the finding, when there is an obvious one.
	Fix string `json:"fix,omitempty"`
}

// IsProblem reports whether the finding needs action: a warning or an
// error.
func (f Finding) IsProblem() bool {
	return f.Severity == udrain.SeverityWarning || f.Severity == udrain.SeverityError
}
