package app

import (
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func newDomainsCommand(o *options) *cobra.Command {
	var df domainFlags
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "domains",
		Short: "List the upgrade domains with their nodes, groups and GPUs",
		Long: `List the upgrade domains (nodes grouped by the value of --domain-label) with,
for each, its nodes (Ready, cordoned, control plane, GPUs), the groups with a
pod on its nodes (whole and Ready or not), and its GPUs per product.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), out.validate()); err != nil {
				return err
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			r, err := o.newReader(client, &df, eviction.ReadOptions{})
			if err != nil {
				return err
			}
			nodes, err := r.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			layout, err := topology.BuildLayout(nodes, df.layoutOptions())
			if err != nil {
				return err
			}
			hr, err := r.Health(o.quietContext(cmd.Context()))
			if err != nil {
				return err
			}
			list := buildDomainList(nodes, layout, hr, gpu.Options{Clock: o.cfg.Clock})
			return out.print(o.streams.Out, list)
		},
	}
	df.add(cmd)
	out.add(cmd)
	return cmd
}

// buildDomainList describes every domain of layout: its nodes (and what
// package gpu makes of them) and package eviction's health of its groups.
func buildDomainList(nodes []corev1.Node, layout *topology.Layout, h *eviction.HealthReport, gopts gpu.Options) report.DomainList {
	list := report.DomainList{TypeMeta: report.NewTypeMeta(report.KindDomainList), LabelKey: layout.LabelKey, Unlabeled: layout.Unlabeled, Unscheduled: h.Unscheduled}
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	healthOf := map[string]eviction.DomainHealth{}
	for _, d := range h.Domains {
		healthOf[d.Domain] = d
	}
	for _, d := range layout.Domains {
		info := report.DomainInfo{Name: d.Name, ControlPlaneNodes: len(d.ControlPlaneNodes), Health: healthOf[d.Name]}
		var domNodes []*corev1.Node
		for _, name := range d.Nodes {
			n := byName[name]
			domNodes = append(domNodes, n)
			_, cp := n.Labels[topology.ControlPlaneLabel]
			dn := report.DomainNode{
				Name: name, Cordoned: n.Spec.Unschedulable, CordonedBy: n.Annotations[eviction.CordonedByAnnotation],
				UpgradedBy: n.Annotations[eviction.UpgradedByAnnotation], ControlPlane: cp, GPU: gpu.ClassifyNode(n, gopts),
			}
			dn.Ready = dn.GPU.NodeReady
			if dn.Cordoned {
				info.CordonedNodes++
			}
			info.Nodes = append(info.Nodes, dn)
		}
		info.GPUs = gpu.CapacityOf(domNodes)
		list.Items = append(list.Items, info)
	}
	return list
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
