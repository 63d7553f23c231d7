package eviction

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/gpu"
)

// GPUFit says, for one GPU resource, whether the pods a plan evicts fit
// back onto the domain's nodes once the domain is upgraded: its pods come
// back there (the placement contract packs a group into its domain), and
// a pod that finds no node stays Pending, its group unhealthy, and the
// rollout's recovery waits until its timeout. A GPUFit with Unplaced or
// SpreadUnplaced pods is a warning to fix placement before the drain.
type GPUFit struct {
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
func (f GPUFit) Risk() bool { return len(f.Unplaced) > 0 || len(f.SpreadUnplaced) > 0 }

// String says what the fit found, e.g. "nvidia.com/gpu: 16 requested, 16
// free on 2 node(s); fragmentation risk: coming back smallest first, each
// onto the node with the most free, ns/llm-0-w-3 (4) finds no node".
func (f GPUFit) String() string {
	s := fmt.Sprintf("%s: %d requested, %d free on %d node(s)", f.Resource, f.Requested, f.Free, len(f.Nodes))
	switch {
	case len(f.Unplaced) > 0:
		s += "; they do not fit back: placed largest first, " + podGPUsText(f.Unplaced)
	case len(f.SpreadUnplaced) > 0:
		s += "; fragmentation risk: coming back smallest first, each onto the node with the most free, " + podGPUsText(f.SpreadUnplaced)
	}
	return s
}

// fitRisks returns the GPU fits of p that warn of pods that may not come
// back, in a sentence each.
func (p *Plan) fitRisks() []string {
	var out []string
	for _, f := range p.GPUFit {
		if f.Risk() {
			out = append(out, f.String())
		}
	}
	return out
}

// withFitWarning logs the fit risks of p, if any, at V(0), and returns the
// Planned event's message with them.
func (p *Plan) withFitWarning(ctx context.Context, msg string) string {
	risks := p.fitRisks()
	if len(risks) == 0 {
		return msg
	}
	klog.FromContext(ctx).Info("The evicted GPU pods may not all fit back onto the domain's nodes; fix placement before the drain", "domain", p.Domain, "gpuFit", risks)
	return msg + "; GPU fit warning: " + strings.Join(risks, "; ")
}

func podGPUsText(pods []PodGPUs) string {
	parts := make([]string, len(pods))
	for i, p := range pods {
		parts[i] = fmt.Sprintf("%s (%d)", p.Pod, p.GPUs)
	}
	verb := "finds"
	if len(pods) > 1 {
		verb = "find"
	}
	return strings.Join(abbreviate(parts, 5), ", ") + " " + verb + " no node"
}

// PodGPUs is a pod and the GPUs it requests.
type PodGPUs struct {
	Pod  PodRef `json:"pod"`
	GPUs int64  `json:"gpus"`
}

// NodeGPUs is a node's GPUs: Allocatable as it advertises them, Free what
// the pods that stay on it leave.
type NodeGPUs struct {
	Node        string `json:"node"`
	Allocatable int64  `json:"allocatable"`
	Free        int64  `json:"free"`
}

// gpuFits checks, per GPU resource of the domain's nodes, whether the
// planned pods fit back (see GPUFit). Only resources some planned pod
// requests are reported.
func gpuFits(nodes []corev1.Node, inDomain map[string]bool, pods []*corev1.Pod, plan *Plan) []GPUFit {
	evicted := map[PodRef]bool{}
	for _, p := range plan.Pods() {
		evicted[p.PodRef] = true
	}
	byName := make(map[string]*corev1.Node, len(plan.Nodes))
	for i := range nodes {
		if inDomain[nodes[i].Name] {
			byName[nodes[i].Name] = &nodes[i]
		}
	}
	byResource := map[corev1.ResourceName][]NodeGPUs{}
	for _, name := range plan.Nodes {
		node, ok := byName[name]
		if !ok {
			continue
		}
		c := gpu.ClassifyNode(node, gpu.Options{})
		if !c.GPU || c.Resource == "" {
			continue
		}
		byResource[c.Resource] = append(byResource[c.Resource], NodeGPUs{Node: name, Allocatable: c.Allocatable, Free: c.Allocatable})
	}
	var out []GPUFit
	for r, gpuNodes := range byResource {
		f := GPUFit{Resource: r, Nodes: gpuNodes}
		var requests []PodGPUs
		for _, p := range pods {
			if !inDomain[p.Spec.NodeName] {
				continue
			}
			n := requestOf(p, r)
			if n == 0 {
				continue
			}
			ref := RefOf(p)
			switch {
			case evicted[ref]:
				requests = append(requests, PodGPUs{Pod: ref, GPUs: n})
				f.Requested += n
			case p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
				// It stays: its GPUs are not free.
				j := slices.IndexFunc(f.Nodes, func(g NodeGPUs) bool { return g.Node == p.Spec.NodeName })
				if j >= 0 {
					f.Nodes[j].Free -= n
				}
			}
		}
		if len(requests) == 0 {
			continue
		}
		for i := range f.Nodes {
			f.Nodes[i].Free = max(f.Nodes[i].Free, 0)
			f.Free += f.Nodes[i].Free
		}
		f.Unplaced = placeLargestFirst(f.Nodes, requests)
		if len(f.Unplaced) == 0 {
			f.SpreadUnplaced = placeSpread(f.Nodes, requests)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b GPUFit) int { return strings.Compare(string(a.Resource), string(b.Resource)) })
	return out
}

// requestOf is what pod requests of resource r, as the scheduler counts
// it (init and sidecar containers, pod-level requests, overhead).
func requestOf(pod *corev1.Pod, r corev1.ResourceName) int64 {
	q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[r]
	if !ok {
		return 0
	}
	return q.Value()
}

// placeLargestFirst places pods, largest first (plan order among equals),
// each on the first node (in the domain's order) with room, and returns
// those that find none.
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
// GPUs free (the first such in the domain's order), and returns those that
// find no room.
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
// keeping plan order among equals.
func sortedPods(pods []PodGPUs, dir int) []PodGPUs {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b PodGPUs) int { return dir * cmp.Compare(a.GPUs, b.GPUs) })
	return out
}
