package gpu

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain"
)

// judge sets Status and returns the findings about the resource, readiness
// and labels.
func (c *Classification) judge(o *observations, res resources, labelled bool, opts Options) []Finding {
	var fs []Finding
	advertised := res.allocatable(c.Vendor) > 0
	switch {
	case !labelled:
		c.Status = StatusUnlabeled
		fs = append(fs, Finding{
			Code:     FindingUnlabeled,
			Severity: udrain.SeverityWarning,
			Key:      string(c.Resource),
			Message: fmt.Sprintf("node advertises %s but carries no GPU label: workloads and pools that select GPU nodes by label miss it; "+
				"deploy Node Feature Discovery and the vendor's labeller (GPU Feature Discovery for NVIDIA), or label the node by hand.", c.Resource),
		})
	case advertised:
		c.Status = StatusReady
	case !c.NodeReady:
		c.Status = StatusNodeNotReady
	default:
		fs = append(fs, c.notAdvertised(o, opts))
	}
	if !c.NodeReady {
		fs = append(fs, Finding{
			Code:     FindingNodeNotReady,
			Severity: udrain.SeverityError,
			Message:  "node is not Ready: its devices cannot be used until the kubelet reports Ready; check the kubelet and the node's conditions (kubectl describe node).",
		})
	}
	if advertised {
		fs = append(fs, c.checkAmounts(res)...)
	} else if c.Capacity > 0 {
		fs = append(fs, Finding{
			Code:     FindingAllocatableZero,
			Severity: udrain.SeverityError,
			Key:      string(c.Resource),
			Value:    fmt.Sprintf("%d/%d", c.Capacity, c.Allocatable),
			Message: fmt.Sprintf("capacity lists %d %s but none is allocatable: the device plugin stopped or reports every device unhealthy; check its pod's log on this node and the driver (nvidia-smi, dmesg).",
				c.Capacity, c.Resource),
		})
	}
	if c.Status == StatusReady && hasProblem(fs) {
		c.Status = StatusDegraded
	}
	if c.Sharing.MIGConfigState == "failed" {
		fs = append(fs, Finding{
			Code:     FindingMIGConfigFailed,
			Severity: udrain.SeverityError,
			Key:      "nvidia.com/mig.config.state",
			Value:    "failed",
			Message: fmt.Sprintf("the MIG manager failed to apply MIG configuration %q: the GPUs' partitions may not match what the device plugin advertises; check the nvidia-mig-manager pod's log on this node, then relabel nvidia.com/mig.config to retry.",
				c.Sharing.MIGConfig),
		})
	}
	if !advertised && o.hasDeployPlugin && !isTrue(o.deployPlugin) {
		fs = append(fs, Finding{
			Code:     FindingDevicePluginDisabled,
			Severity: udrain.SeverityError,
			Key:      "nvidia.com/gpu.deploy.device-plugin",
			Value:    o.deployPlugin,
			Message: fmt.Sprintf("the GPU Operator keeps its device plugin off this node (nvidia.com/gpu.deploy.device-plugin=%s); %s",
				o.deployPlugin, deployPluginAdvice(o.deployPlugin)),
			Fix: deployPluginFix(c.Node, o.deployPlugin),
		})
	}
	return append(fs, c.notices(o)...)
}

// notices are the informational findings: a GPU node no taint dedicates,
// evidence naming several vendors.
func (c *Classification) notices(o *observations) []Finding {
	var fs []Finding
	if !c.Dedicated {
		fs = append(fs, Finding{
			Code:     FindingNotDedicated,
			Severity: udrain.SeverityInfo,
			Message:  "no NoSchedule or NoExecute taint keeps other pods off this GPU node: CPU-only pods can take its CPU and memory and leave the GPUs stranded. Taint it if the node is for GPU work only, and make sure the device plugin DaemonSet tolerates the taint.",
			Fix:      fmt.Sprintf("kubectl taint node %s %s:NoSchedule", c.Node, dedicationTaint(c.Resource)),
		})
	}
	if vs := distinctVendors(o.evidence); len(vs) > 1 {
		fs = append(fs, Finding{
			Code:     FindingVendorConflict,
			Severity: udrain.SeverityInfo,
			Value:    strings.Join(vs, ","),
			Message:  fmt.Sprintf("evidence names several vendors (%s); classified as %s. A second vendor's label may be stale, or the node mixes devices (an integrated GPU beside the accelerators).", strings.Join(vs, ", "), c.Vendor),
		})
	}
	return fs
}

// notAdvertised sets Status for a Ready, labelled node that does not
// advertise its resource, and returns the finding: Pending within the
// grace period after the node became Ready, ResourceMissing after it.
func (c *Classification) notAdvertised(o *observations, opts Options) Finding {
	since := opts.now().Sub(c.ReadySince)
	grace := opts.gracePeriod()
	if !c.ReadySince.IsZero() && since < grace {
		c.Status = StatusPending
		return Finding{
			Code:     FindingResourcePending,
			Severity: udrain.SeverityInfo,
			Key:      string(c.Resource),
			Message: fmt.Sprintf("node has %s hardware but does not advertise %s yet; it became Ready %s ago, within the %s grace period for drivers and the device plugin to start.",
				c.Vendor, resourceWords(c.Resource), since.Round(time.Second), grace),
		}
	}
	c.Status = StatusResourceMissing
	age := "an unknown time"
	if !c.ReadySince.IsZero() {
		age = since.Round(time.Second).String()
	}
	return Finding{
		Code:     FindingResourceMissing,
		Severity: udrain.SeverityError,
		Key:      string(c.Resource),
		Message: fmt.Sprintf("node has %s hardware (%s) but allocatable has no %s, %s after it became Ready: pods requesting %s stay Pending, and pods that do not request it can use the devices unaccounted, two on one card. "+
			"Check that the device plugin DaemonSet runs on this node (taints, nodeSelector, node affinity) and that the driver is loaded.",
			c.Vendor, firstLabel(o.evidence), resourceWords(c.Resource), age, resourceWords(c.Resource)),
	}
}

// dedicationTaint is the taint proposed to dedicate a GPU node: the
// resource name, as GKE and the device plugins' default tolerations use it.
func dedicationTaint(r corev1.ResourceName) string {
	if r == "" {
		return "dedicated=accelerator"
	}
	return string(r) + "=present"
}

// resourceWords names the resource in a message, also when the vendor's is
// unknown.
func resourceWords(r corev1.ResourceName) string {
	if r == "" {
		return "an accelerator resource"
	}
	return string(r)
}

func deployPluginAdvice(v string) string {
	if v == "paused-for-mig-change" {
		return "the MIG manager pauses it while it repartitions the GPUs; if that does not finish, check the nvidia-mig-manager pod's log."
	}
	return "set the label to true to let the operator deploy it."
}

func deployPluginFix(node, v string) string {
	if v == "paused-for-mig-change" {
		return ""
	}
	return fmt.Sprintf("kubectl label node %s nvidia.com/gpu.deploy.device-plugin=true --overwrite", node)
}

// checkAmounts compares the advertised amounts with the capacity and the
// labels' count.
func (c *Classification) checkAmounts(res resources) []Finding {
	var fs []Finding
	for _, r := range res.amounts {
		if r.Vendor != c.Vendor || r.Allocatable >= r.Capacity {
			continue
		}
		fs = append(fs, Finding{
			Code:     FindingUnhealthyDevices,
			Severity: udrain.SeverityWarning,
			Key:      string(r.Name),
			Value:    fmt.Sprintf("%d/%d", r.Capacity, r.Allocatable),
			Message: fmt.Sprintf("%d of %d %s are not allocatable: the device plugin reports them unhealthy; check the driver's log (Xid errors for NVIDIA: dmesg, nvidia-smi) and drain the node to reset or replace them.",
				r.Capacity-r.Allocatable, r.Capacity, r.Name),
		})
	}
	if c.LabelCount > 0 && c.Sharing.MIGStrategy != "mixed" && c.Count < c.LabelCount {
		fs = append(fs, Finding{
			Code:     FindingCountMismatch,
			Severity: udrain.SeverityWarning,
			Key:      string(c.Resource),
			Value:    fmt.Sprintf("%d/%d", c.Count, c.LabelCount),
			Message: fmt.Sprintf("labels count %d devices but only %d are advertised as %s: a device fell off the bus or failed, or the labels are stale; compare with nvidia-smi (or the vendor's tool) on the node.",
				c.LabelCount, c.Count, c.Resource),
		})
	}
	return fs
}

func hasProblem(fs []Finding) bool {
	for _, f := range fs {
		if f.IsProblem() {
			return true
		}
	}
	return false
}

// firstLabel names the first hardware or descriptive label, as the evidence
// a message quotes.
func firstLabel(ev []Evidence) string {
	var pick *Evidence
	for i := range ev {
		e := &ev[i]
		if e.Tier == TierResource {
			continue
		}
		if pick == nil || tierRank(e.Tier) < tierRank(pick.Tier) || e.Tier == pick.Tier && e.Key < pick.Key {
			pick = e
		}
	}
	if pick == nil {
		return "no label"
	}
	return pick.Key + "=" + pick.Value
}

func distinctVendors(ev []Evidence) []string {
	var vs []string
	for _, e := range ev {
		if e.Vendor == "" || e.Vendor == VendorUnknown {
			continue
		}
		if !slices.Contains(vs, string(e.Vendor)) {
			vs = append(vs, string(e.Vendor))
		}
	}
	slices.Sort(vs)
	return vs
}
