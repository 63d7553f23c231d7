package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
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
			report, err := r.Health(o.quietContext(cmd.Context()))
			if err != nil {
				return err
			}
			list := buildDomainList(nodes, layout, report, gpu.Options{Clock: o.cfg.Clock})
			return out.print(o.streams.Out, list, func(w io.Writer) error { return writeDomainsTable(w, list) })
		},
	}
	df.add(cmd)
	out.add(cmd)
	return cmd
}

// buildDomainList describes every domain of layout: its nodes (and what
// package gpu makes of them) and package eviction's health of its groups.
func buildDomainList(nodes []corev1.Node, layout *topology.Layout, report *eviction.HealthReport, gopts gpu.Options) DomainList {
	list := DomainList{TypeMeta: typeMeta(KindDomainList), LabelKey: layout.LabelKey, Unlabeled: layout.Unlabeled, Unscheduled: report.Unscheduled}
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	healthOf := map[string]eviction.DomainHealth{}
	for _, h := range report.Domains {
		healthOf[h.Domain] = h
	}
	for _, d := range layout.Domains {
		info := DomainInfo{Name: d.Name, ControlPlaneNodes: len(d.ControlPlaneNodes), Health: healthOf[d.Name]}
		inDomain := map[string]bool{}
		for _, name := range d.Nodes {
			n := byName[name]
			inDomain[name] = true
			_, cp := n.Labels[topology.ControlPlaneLabel]
			dn := DomainNode{
				Name: name, Cordoned: n.Spec.Unschedulable, CordonedBy: n.Annotations[eviction.CordonedByAnnotation],
				UpgradedBy: n.Annotations[eviction.UpgradedByAnnotation], ControlPlane: cp, GPU: gpu.ClassifyNode(n, gopts),
			}
			dn.Ready = dn.GPU.NodeReady
			if dn.Cordoned {
				info.CordonedNodes++
			}
			info.Nodes = append(info.Nodes, dn)
		}
		info.GPUs = eviction.GPUCapacityOf(nodes, inDomain)
		list.Items = append(list.Items, info)
	}
	return list
}

func gpuText(gpus []eviction.GPUCapacity) string {
	if len(gpus) == 0 {
		return "-"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprintf("%d %s", g.GPUs, g.Product)
	}
	return strings.Join(parts, ", ")
}

func writeDomainsTable(w io.Writer, list DomainList) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "DOMAIN\tNODES\tCORDONED\tCONTROL-PLANE\tGROUPS\tUNHEALTHY\tGPUS")
	for _, d := range list.Items {
		unhealthy := 0
		for _, g := range d.Health.Groups {
			if !g.Healthy {
				unhealthy++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d\t%d\t%d\t%s\n", d.Name, len(d.Nodes), d.CordonedNodes, len(d.Nodes), d.ControlPlaneNodes, len(d.Health.Groups), unhealthy, gpuText(d.GPUs))
	}
	fmt.Fprintln(tw, "\nNODE\tDOMAIN\tREADY\tCORDONED\tGPUS\tPRODUCT\tGPU-STATUS\tUPGRADED-BY")
	for _, d := range list.Items {
		for _, n := range d.Nodes {
			cordoned := yesNo(n.Cordoned)
			if n.CordonedBy != "" {
				cordoned += " (udrain " + n.CordonedBy + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.Name, d.Name, yesNo(n.Ready), cordoned, n.GPU.Count, orDash(n.GPU.Product), n.GPU.Status, orDash(n.UpgradedBy))
		}
	}
	groups := len(list.Unscheduled)
	for _, d := range list.Items {
		groups += len(d.Health.Groups)
	}
	if groups > 0 {
		fmt.Fprintln(tw, "\nNAMESPACE\tGROUP\tKIND\tDOMAIN\tLEADER\tREADY\tHEALTHY")
		row := func(domain string, g health.GroupStatus) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", g.ID.Namespace, g.ID.Name, g.ID.Kind, domain, orDash(g.Leader), g.ReadyMembers, g.Size, healthText(g))
		}
		for _, d := range list.Items {
			for _, g := range d.Health.Groups {
				row(d.Name, g)
			}
		}
		for _, g := range list.Unscheduled {
			row("(unscheduled)", g)
		}
	}
	if len(list.Unlabeled) > 0 {
		fmt.Fprintf(tw, "\nNodes without the label %s (left out): %s\n", list.LabelKey, strings.Join(list.Unlabeled, ", "))
	}
	return tw.Flush()
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
