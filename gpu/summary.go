package gpu

import (
	"fmt"
	"github.com/udrain/udrain"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// PoolKind names a pool of nodes.
type PoolKind string

const (
	// PoolDedicatedGPU holds GPU nodes that a NoSchedule or NoExecute taint
	// reserves for pods that tolerate it.
	PoolDedicatedGPU PoolKind = "dedicated-gpu"
	// PoolSharedGPU holds GPU nodes that any pod may land on.
	PoolSharedGPU PoolKind = "shared-gpu"
	// PoolCPU holds nodes without accelerators.
	PoolCPU PoolKind = "cpu"
)

// Pool is a set of nodes of one kind.
type Pool struct {
	// Kind says which nodes the pool holds.
	Kind PoolKind `json:"kind"`
	// Nodes are the pool's node names, in the order given to Summarize.
	Nodes []string `json:"nodes"`
	// GPUs is the sum of the nodes' Count; AdvertisedGPUs counts only the
	// nodes whose resource is allocatable, that is what the scheduler can
	// hand out.
	GPUs           int64 `json:"gpus"`
	AdvertisedGPUs int64 `json:"advertisedGPUs"`
	// ProblemNodes counts the nodes with at least one problem.
	ProblemNodes int `json:"problemNodes"`
}

// ProductTotal adds up the nodes of one product.
type ProductTotal struct {
	// Vendor and Product identify the product as in Classification;
	// Product is empty for nodes whose labels name none.
	Vendor  Vendor `json:"vendor"`
	Product string `json:"product"`
	// Nodes counts the nodes with this product.
	Nodes int `json:"nodes"`
	// GPUs and AdvertisedGPUs are as in Pool.
	GPUs           int64 `json:"gpus"`
	AdvertisedGPUs int64 `json:"advertisedGPUs"`
	// MemoryMiB is the device memory of all GPUs, where labels give it.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// Problem is a finding that needs action, with the node (and DaemonSet) it
// is about.
type Problem struct {
	// Node is the node's name.
	Node string `json:"node"`
	// DaemonSet is "namespace/name" of the device plugin DaemonSet the
	// finding is about, empty for findings about the node itself.
	DaemonSet string `json:"daemonSet,omitempty"`
	Finding
}

// Summary is a cluster's GPU nodes at a glance.
type Summary struct {
	// Nodes are the classifications, in the order the nodes were given.
	Nodes []Classification `json:"nodes"`
	// Pools are always the three kinds, dedicated GPU, shared GPU and CPU,
	// in that order.
	Pools []Pool `json:"pools"`
	// Products add up GPU nodes by vendor and product, sorted.
	Products []ProductTotal `json:"products"`
	// Statuses counts the nodes of each status.
	Statuses map[Status]int `json:"statuses"`
	// Diagnoses are the device plugin DaemonSets checked against the GPU
	// nodes that do not advertise their resource.
	Diagnoses []Diagnosis `json:"diagnoses,omitempty"`
	// Problems lists every warning and error, node by node.
	Problems []Problem `json:"problems,omitempty"`
}

// Summarize classifies nodes (see ClassifyNode), groups them into pools and
// products, and collects every problem. Hand it the nodes and the
// DaemonSets as a lister or a List finds them: it picks the device plugins
// among the DaemonSets itself (Options.DevicePlugin, by default
// DevicePluginVendor). When daemonSets is not empty, every GPU node that
// does not advertise its resource (StatusPending or StatusResourceMissing)
// is diagnosed against each device plugin of the node's vendor; a node of
// a vendor whose plugins DevicePluginVendor does not know is diagnosed
// only when Options.DevicePlugin is set. Nil daemonSets (not listed, e.g.
// not allowed to) diagnose nothing. Problems
// name the DaemonSets that explain the missing resource: none when one of
// them can run on the node; else those that select the node but do not
// tolerate its taints; else all (Diagnoses keeps every diagnosis). A
// DaemonSet that cannot run on a Pending node is reported at once, before
// the grace period ends. ProblemNodes lists the nodes that need action.
func Summarize(nodes []*corev1.Node, daemonSets []*appsv1.DaemonSet, opts Options) Summary {
	s := Summary{
		Nodes:    make([]Classification, 0, len(nodes)),
		Pools:    []Pool{{Kind: PoolDedicatedGPU, Nodes: []string{}}, {Kind: PoolSharedGPU, Nodes: []string{}}, {Kind: PoolCPU, Nodes: []string{}}},
		Products: []ProductTotal{},
		Statuses: map[Status]int{},
	}
	plugins := devicePlugins(daemonSets, opts)
	products := map[[2]string]*ProductTotal{}
	for i := range nodes {
		c := ClassifyNode(nodes[i], opts)
		s.Nodes = append(s.Nodes, c)
		s.Statuses[c.Status]++
		for _, f := range c.Problems() {
			s.Problems = append(s.Problems, Problem{Node: c.Node, Finding: f})
		}
		problem := c.Status.IsProblem() || len(c.Problems()) > 0

		if len(daemonSets) > 0 && (pluginVendors[c.Vendor] || opts.DevicePlugin != nil) && (c.Status == StatusPending || c.Status == StatusResourceMissing) && s.diagnose(nodes[i], c, len(daemonSets), plugins) {
			problem = true
		}

		pool := &s.Pools[2]
		if c.GPU && c.Dedicated {
			pool = &s.Pools[0]
		} else if c.GPU {
			pool = &s.Pools[1]
		}
		pool.Nodes = append(pool.Nodes, c.Node)
		if problem {
			pool.ProblemNodes++
		}
		if !c.GPU {
			continue
		}
		advertised := int64(0)
		if c.Allocatable > 0 {
			advertised = c.Count
		}
		pool.GPUs += c.Count
		pool.AdvertisedGPUs += advertised
		key := [2]string{string(c.Vendor), c.Product}
		p := products[key]
		if p == nil {
			p = &ProductTotal{Vendor: c.Vendor, Product: c.Product}
			products[key] = p
		}
		p.Nodes++
		p.GPUs += c.Count
		p.AdvertisedGPUs += advertised
		p.MemoryMiB += c.Count * c.MemoryMiB
	}
	for _, p := range products {
		s.Products = append(s.Products, *p)
	}
	slices.SortFunc(s.Products, func(a, b ProductTotal) int {
		if d := strings.Compare(string(a.Vendor), string(b.Vendor)); d != 0 {
			return d
		}
		return strings.Compare(a.Product, b.Product)
	})
	return s
}

// ProblemNodes returns the nodes that need action, in the order of Nodes:
// those whose status is a problem (Status.IsProblem), and those with a
// problem among Problems (a finding of their classification, or a device
// plugin that cannot run there). Pools count the same nodes
// (Pool.ProblemNodes).
func (s Summary) ProblemNodes() []string {
	problem := map[string]bool{}
	for _, p := range s.Problems {
		problem[p.Node] = true
	}
	var out []string
	for _, c := range s.Nodes {
		if c.Status.IsProblem() || problem[c.Node] {
			out = append(out, c.Node)
		}
	}
	return out
}

// devicePlugin is a DaemonSet that DevicePluginVendor calls a device
// plugin, with its vendor.
type devicePlugin struct {
	ds     *appsv1.DaemonSet
	vendor Vendor
}

// devicePlugins picks the device plugins among daemonSets, with
// opts.DevicePlugin or DevicePluginVendor.
func devicePlugins(daemonSets []*appsv1.DaemonSet, opts Options) []devicePlugin {
	is := opts.DevicePlugin
	if is == nil {
		is = DevicePluginVendor
	}
	var out []devicePlugin
	for _, ds := range daemonSets {
		if v, ok := is(ds); ok && ds != nil {
			out = append(out, devicePlugin{ds, v})
		}
	}
	return out
}

// diagnose adds to the summary why a GPU node does not advertise its
// resource, from the device plugins among the listed DaemonSets, and
// reports whether it found a problem.
func (s *Summary) diagnose(node *corev1.Node, c Classification, listed int, plugins []devicePlugin) bool {
	diagnoses := diagnoseNode(node, c, plugins)
	if len(diagnoses) == 0 {
		f := Finding{
			Code:     FindingNoDevicePlugin,
			Severity: udrain.SeverityError,
			Message: fmt.Sprintf("none of the %d DaemonSets is a device plugin for %s so nothing can advertise %s on this node; install the vendor's device plugin (or its GPU operator).",
				listed, c.Vendor, c.Resource),
		}
		s.Problems = append(s.Problems, Problem{Node: c.Node, Finding: f})
		return true
	}
	s.Diagnoses = append(s.Diagnoses, diagnoses...)
	problem := false
	for _, d := range culprits(diagnoses) {
		for _, f := range d.Findings {
			if f.IsProblem() {
				s.Problems = append(s.Problems, Problem{Node: c.Node, DaemonSet: d.DaemonSet, Finding: f})
				problem = true
			}
		}
	}
	return problem
}

// culprits picks the diagnoses whose findings explain the missing resource.
// A vendor often ships several plugin DaemonSets, each selecting its own
// nodes (GKE has one per OS image and machine size); those that do not
// select the node are not meant to run there. So: none when one of them
// can run there; else those that select the node but do not tolerate its
// taints; else, when none selects it, all of them.
func culprits(diagnoses []Diagnosis) []Diagnosis {
	var selecting []Diagnosis
	for _, d := range diagnoses {
		if d.CanRun {
			return nil
		}
		if d.SelectsNode {
			selecting = append(selecting, d)
		}
	}
	if len(selecting) > 0 {
		return selecting
	}
	return diagnoses
}

// diagnoseNode checks the device plugins of c's vendor against node.
// When one of them can run there, the missing resource has another cause,
// which a finding says.
func diagnoseNode(node *corev1.Node, c Classification, plugins []devicePlugin) []Diagnosis {
	var out []Diagnosis
	for _, p := range plugins {
		if p.vendor != c.Vendor {
			continue
		}
		d := DiagnoseDaemonSet(p.ds, node)
		if d.CanRun {
			d.Findings = append(d.Findings, Finding{
				Code:     FindingDevicePluginSchedulable,
				Severity: udrain.SeverityInfo,
				Message: fmt.Sprintf("DaemonSet %s can run on node %s, so %s is missing for another reason: look at its pod there (kubectl -n %s get pods -o wide --field-selector spec.nodeName=%s) and its log, the driver and the container runtime's GPU support.",
					d.DaemonSet, d.Node, c.Resource, p.ds.Namespace, d.Node),
			})
		}
		out = append(out, d)
	}
	return out
}
