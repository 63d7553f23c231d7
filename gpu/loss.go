package gpu

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Loss is a GPU node that advertises fewer GPUs than it had: one that
// came back from an upgrade (a reboot, a new driver) without them.
type Loss struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Resource is the extended resource (nvidia.com/gpu); Before and
	// After its allocatable amounts before (see Losses) and now.
	Resource corev1.ResourceName `json:"resource"`
	Before   int64               `json:"before"`
	After    int64               `json:"after"`
	// Findings are ClassifyNode's problems of the node now
	// (ResourceMissing, AllocatableZero, ...); Diagnoses the device plugin
	// DaemonSets checked against it (an untolerated taint, a node
	// selector or affinity it fails), each with its fix.
	Findings  []Finding   `json:"findings,omitempty"`
	Diagnoses []Diagnosis `json:"diagnoses,omitempty"`
}

// Advertised returns, by node name, the GPUs each GPU node of nodes
// (ClassifyNode with opts) advertises: the allocatable amount of its
// primary resource, 0 for one whose resource is missing. Nodes that are
// not GPU nodes are left out.
// Taken before an upgrade, it is what Losses compares with after it.
func Advertised(nodes []*corev1.Node, opts Options) map[string]int64 {
	out := map[string]int64{}
	for _, n := range nodes {
		if c := ClassifyNode(n, opts); c.GPU {
			out[n.Name] = c.Allocatable
		}
	}
	return out
}

// Losses returns the GPU nodes of nodes, in their order, that advertise
// fewer GPUs than they should: what before (see Advertised) says they
// had, or, for a node before does not name, what its labels or capacity
// count. A node to which before gives 0 (its GPUs were missing already)
// is never a loss: what happened since is not to blame. Nodes are
// classified with opts, as Advertised classified them.
//
// When daemonSets is not empty, each loss is diagnosed against every one
// of them that Options.DevicePlugin (by default DevicePluginVendor) calls
// a device plugin of the node's vendor (see DiagnoseDaemonSet), sorted by
// DaemonSet: pass the DaemonSets as a lister or a List finds them.
func Losses(before map[string]int64, nodes []*corev1.Node, daemonSets []*appsv1.DaemonSet, opts Options) []Loss {
	var out []Loss
	for _, n := range nodes {
		c := ClassifyNode(n, opts)
		if !c.GPU {
			continue
		}
		want, ok := before[c.Node]
		if !ok {
			want = max(c.LabelCount, c.Capacity)
		}
		if c.Allocatable >= want {
			continue
		}
		l := Loss{Node: c.Node, Resource: c.Resource, Before: want, After: c.Allocatable, Findings: c.Problems()}
		for _, p := range devicePlugins(daemonSets, opts) {
			if p.vendor == c.Vendor {
				l.Diagnoses = append(l.Diagnoses, DiagnoseDaemonSet(p.ds, n))
			}
		}
		slices.SortFunc(l.Diagnoses, func(a, b Diagnosis) int { return strings.Compare(a.DaemonSet, b.DaemonSet) })
		out = append(out, l)
	}
	return out
}
