package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/udrain/udrain/topology"
)

// Capacity is a count of GPUs of one product on a set of nodes (the GPUs a
// drained domain takes out of service).
type Capacity struct {
	// Vendor and Product identify the product as in Classification;
	// Product is "unknown" for nodes whose labels name none.
	Vendor  string `json:"vendor,omitempty"`
	Product string `json:"product"`
	// GPUs adds up the nodes' Count; Nodes counts the nodes.
	GPUs  int64 `json:"gpus"`
	Nodes int   `json:"nodes"`
}

// CapacityOf adds up, per vendor and product, the GPUs of the nodes that
// ClassifyNode (with opts) calls GPU nodes, sorted by vendor, then
// product. Nodes without devices count for nothing.
func CapacityOf(nodes []*corev1.Node, opts Options) []Capacity {
	type key struct{ vendor, product string }
	acc := map[key]*Capacity{}
	for _, n := range nodes {
		c := ClassifyNode(n, opts)
		if !c.GPU || c.Count <= 0 {
			continue
		}
		product := c.Product
		if product == "" {
			product = "unknown"
		}
		k := key{string(c.Vendor), product}
		if acc[k] == nil {
			acc[k] = &Capacity{Vendor: string(c.Vendor), Product: product}
		}
		acc[k].GPUs += c.Count
		acc[k].Nodes++
	}
	out := make([]Capacity, 0, len(acc))
	for _, c := range acc {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Capacity) int {
		return cmp.Or(strings.Compare(a.Vendor, b.Vendor), strings.Compare(a.Product, b.Product))
	})
	return out
}

// Fit says, for one GPU resource, whether pods taken off a set of nodes
// (a drained domain) fit back onto them once the nodes are back (an
// upgrade): a pod that finds no node stays Pending. It is an estimate of
// two ways a scheduler may place the pods, not a scheduling decision. A
// Fit whose Risk is true is a warning to fix placement before the pods
// leave.
type Fit struct {
	// Resource is the extended resource (nvidia.com/gpu).
	Resource corev1.ResourceName `json:"resource"`
	// Requested is what the evicted pods request of it; Free what the
	// domain's nodes advertise, less the requests of the pods that stay
	// on them (DaemonSet pods, skipped pods).
	Requested int64 `json:"requested"`
	Free      int64 `json:"free"`
	// Unplaced are the pods a first fit, largest request first, finds no
	// node for: however they come back, they do not all fit (GPUs lost, or
	// a packing no order finds).
	Unplaced []PodGPUs `json:"unplaced,omitempty"`
	// SpreadUnplaced are the pods that find no node when the pods come
	// back smallest request first and each goes to the node with the most
	// GPUs free, as a scheduler that spreads pods (kube-scheduler's
	// default least-allocated scoring) may place them: the free GPUs then
	// fragment, some left on every node and not enough on any. Empty when
	// Unplaced is not.
	SpreadUnplaced []PodGPUs `json:"spreadUnplaced,omitempty"`
	// Nodes are the domain's nodes with the resource.
	Nodes []NodeGPUs `json:"nodes"`
}

// Risk reports whether some evicted pod may find no node on its return.
func (f Fit) Risk() bool { return len(f.Unplaced) > 0 || len(f.SpreadUnplaced) > 0 }

// String says what the fit found, e.g. "nvidia.com/gpu: 16 requested, 16
// free on 2 node(s); fragmentation risk: coming back smallest first, each
// onto the node with the most free, ns/llm-0-w-3 (4) finds no node".
func (f Fit) String() string {
	s := fmt.Sprintf("%s: %d requested, %d free on %d node(s)", f.Resource, f.Requested, f.Free, len(f.Nodes))
	switch {
	case len(f.Unplaced) > 0:
		s += "; they do not fit back: placed largest first, " + podGPUsText(f.Unplaced)
	case len(f.SpreadUnplaced) > 0:
		s += "; fragmentation risk: coming back smallest first, each onto the node with the most free, " + podGPUsText(f.SpreadUnplaced)
	}
	return s
}

// podGPUsText names the pods and their requests, the first five of them:
// "ns/a (4), ns/b (2) find no node".
func podGPUsText(pods []PodGPUs) string {
	const shown = 5
	parts := make([]string, 0, min(len(pods), shown)+1)
	for _, p := range pods[:min(len(pods), shown)] {
		parts = append(parts, fmt.Sprintf("%s (%d)", p.Pod, p.GPUs))
	}
	if len(pods) > shown {
		parts = append(parts, fmt.Sprintf("and %d more", len(pods)-shown))
	}
	verb := "finds"
	if len(pods) > 1 {
		verb = "find"
	}
	return strings.Join(parts, ", ") + " " + verb + " no node"
}

// PodGPUs is a pod and the GPUs it requests.
type PodGPUs struct {
	Pod  topology.PodRef `json:"pod"`
	GPUs int64           `json:"gpus"`
}

// NodeGPUs is a node's GPUs: Allocatable as it advertises them, Free what
// the pods that stay on it leave.
type NodeGPUs struct {
	Node        string `json:"node"`
	Allocatable int64  `json:"allocatable"`
	Free        int64  `json:"free"`
}

// Fits checks, per GPU resource of nodes (the primary resource of each
// node ClassifyNode, with opts, calls a GPU node), whether
// the evicted pods fit back onto nodes while the staying pods keep what
// they request there. Only resources some evicted pod requests are
// reported, sorted by name. Requests are counted as the scheduler counts
// them (init and sidecar containers, pod-level requests, overhead).
//
// Nodes are tried in the order given. Every evicted pod counts, wherever
// it runs now; a staying pod counts on its node (spec.nodeName) only if
// that node is one of nodes. Leave out of staying the pods that will not
// hold their GPUs (being deleted, finished).
func Fits(nodes []*corev1.Node, evicted, staying []*corev1.Pod, opts Options) []Fit {
	byResource := map[corev1.ResourceName][]NodeGPUs{}
	var resources []corev1.ResourceName
	for _, n := range nodes {
		c := ClassifyNode(n, opts)
		if !c.GPU || c.Resource == "" {
			continue
		}
		if _, ok := byResource[c.Resource]; !ok {
			resources = append(resources, c.Resource)
		}
		byResource[c.Resource] = append(byResource[c.Resource], NodeGPUs{Node: n.Name, Allocatable: c.Allocatable, Free: c.Allocatable})
	}
	slices.Sort(resources)
	var out []Fit
	for _, r := range resources {
		if f, ok := fitOf(r, byResource[r], evicted, staying); ok {
			out = append(out, f)
		}
	}
	return out
}

// fitOf is the Fit of resource r on nodes; false when no evicted pod
// requests r.
func fitOf(r corev1.ResourceName, nodes []NodeGPUs, evicted, staying []*corev1.Pod) (Fit, bool) {
	f := Fit{Resource: r, Nodes: nodes}
	var requests []PodGPUs
	for _, p := range evicted {
		if n := requestOf(p, r); n > 0 {
			requests = append(requests, PodGPUs{Pod: refOf(p), GPUs: n})
			f.Requested += n
		}
	}
	if len(requests) == 0 {
		return Fit{}, false
	}
	for _, p := range staying {
		n := requestOf(p, r)
		if j := slices.IndexFunc(f.Nodes, func(g NodeGPUs) bool { return g.Node == p.Spec.NodeName }); n > 0 && j >= 0 {
			f.Nodes[j].Free -= n
		}
	}
	for i := range f.Nodes {
		f.Nodes[i].Free = max(f.Nodes[i].Free, 0)
		f.Free += f.Nodes[i].Free
	}
	f.Unplaced = placeLargestFirst(f.Nodes, requests)
	if len(f.Unplaced) == 0 {
		f.SpreadUnplaced = placeSpread(f.Nodes, requests)
	}
	return f, true
}

// refOf returns the topology.PodRef of pod.
func refOf(pod *corev1.Pod) topology.PodRef {
	return topology.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName}
}

// requestOf is what pod requests of resource r, as the scheduler counts
// it (init and sidecar containers, pod-level requests, overhead).
func requestOf(pod *corev1.Pod, r corev1.ResourceName) int64 {
	if len(pod.Spec.InitContainers) == 0 && pod.Spec.Overhead == nil && pod.Spec.Resources == nil {
		// Containers alone: PodRequests sums them; summed here without
		// the lists it builds (a plan asks this of every pod of its
		// domain and of the nodes around).
		var sum resource.Quantity
		for i := range pod.Spec.Containers {
			if q, ok := pod.Spec.Containers[i].Resources.Requests[r]; ok {
				sum.Add(q)
			}
		}
		return sum.Value()
	}
	q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[r]
	if !ok {
		return 0
	}
	return q.Value()
}

// placeLargestFirst places pods, largest first (given order among
// equals), each on the first node with room, and returns those that find
// none.
func placeLargestFirst(nodes []NodeGPUs, pods []PodGPUs) []PodGPUs {
	free := freeOf(nodes)
	var unplaced []PodGPUs
	for _, p := range sortedPods(pods, -1) {
		if i := slices.IndexFunc(free, func(f int64) bool { return f >= p.GPUs }); i >= 0 {
			free[i] -= p.GPUs
			continue
		}
		unplaced = append(unplaced, p)
	}
	return unplaced
}

// placeSpread places pods, smallest first, each on the node with the most
// GPUs free (the first such), and returns those that find no room.
func placeSpread(nodes []NodeGPUs, pods []PodGPUs) []PodGPUs {
	free := freeOf(nodes)
	var unplaced []PodGPUs
	for _, p := range sortedPods(pods, 1) {
		i := 0
		for j := range free {
			if free[j] > free[i] {
				i = j
			}
		}
		if free[i] >= p.GPUs {
			free[i] -= p.GPUs
			continue
		}
		unplaced = append(unplaced, p)
	}
	return unplaced
}

func freeOf(nodes []NodeGPUs) []int64 {
	free := make([]int64, len(nodes))
	for i, n := range nodes {
		free[i] = n.Free
	}
	return free
}

// sortedPods returns pods by request, ascending (dir 1) or descending (-1),
// keeping the given order among equals.
func sortedPods(pods []PodGPUs, dir int) []PodGPUs {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b PodGPUs) int { return dir * cmp.Compare(a.GPUs, b.GPUs) })
	return out
}
