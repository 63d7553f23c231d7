package report

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// NewDomainList is the DomainList of the domains of layout (built from
// nodes): for each domain, its nodes as package gpu classifies them with
// gopts, with their cordon and upgrade marks, its GPUs per product, and
// its health in h (eviction's Drainer.Health over every domain), as "udrain
// domains" lists them.
func NewDomainList(nodes []corev1.Node, layout *topology.Layout, h *health.Report, gopts gpu.Options) DomainList {
	list := DomainList{TypeMeta: NewTypeMeta(KindDomainList), LabelKey: layout.LabelKey, Unlabeled: layout.Unlabeled, Unscheduled: h.Unscheduled}
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	healthOf := map[string]health.DomainStatus{}
	for _, d := range h.Domains {
		healthOf[d.Domain] = d
	}
	for _, d := range layout.Domains {
		info := DomainInfo{Name: d.Name, ControlPlaneNodes: len(d.ControlPlaneNodes), Health: healthOf[d.Name]}
		var domNodes []*corev1.Node
		for _, name := range d.Nodes {
			n := byName[name]
			domNodes = append(domNodes, n)
			_, cp := n.Labels[topology.ControlPlaneLabel]
			dn := DomainNode{
				Name: name, Cordoned: n.Spec.Unschedulable, CordonedBy: n.Annotations[udrain.CordonedByAnnotation],
				UpgradedBy: n.Annotations[udrain.UpgradedByAnnotation], ControlPlane: cp, GPU: gpu.ClassifyNode(n, gopts),
			}
			dn.Ready = dn.GPU.NodeReady
			if dn.Cordoned {
				info.CordonedNodes++
			}
			info.Nodes = append(info.Nodes, dn)
		}
		info.GPUs = gpu.CapacityOf(domNodes, gopts)
		list.Items = append(list.Items, info)
	}
	return list
}

// NewGPUSummary is the GPUSummary of nodes, with s, gpu.Summarize's
// summary of them, and each node's upgrade domain: the value of its
// labelKey label ("" without it), as "udrain gpu" reports them.
func NewGPUSummary(labelKey string, nodes []*corev1.Node, s gpu.Summary) GPUSummary {
	doc := GPUSummary{TypeMeta: NewTypeMeta(KindGPUSummary), LabelKey: labelKey, Domains: map[string]string{}, Summary: s}
	for _, n := range nodes {
		doc.Domains[n.Name] = n.Labels[labelKey]
	}
	return doc
}
