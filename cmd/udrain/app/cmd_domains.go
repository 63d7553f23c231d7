package app

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
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
			s, err := listCluster(cmd.Context(), client, listWhat{pods: true})
			if err != nil {
				return err
			}
			layout, err := topology.BuildLayout(s.Nodes, df.layoutOptions())
			if err != nil {
				return err
			}
			list := buildDomainList(s, layout, gpu.Options{Clock: o.cfg.Clock})
			return out.print(o.streams.Out, list, func(w io.Writer) error { return writeDomainsTable(w, list) })
		},
	}
	df.add(cmd)
	out.add(cmd)
	return cmd
}

// buildDomainList describes every domain of layout.
func buildDomainList(s *clusterState, layout *topology.Layout, gopts gpu.Options) DomainList {
	list := DomainList{TypeMeta: typeMeta(KindDomainList), LabelKey: layout.LabelKey,
		Unlabeled: orEmpty(layout.Unlabeled), Items: []DomainInfo{}, UnscheduledGroups: []GroupInfo{}}
	nodes := map[string]*corev1.Node{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	index := map[string]int{}
	for _, d := range layout.Domains {
		info := DomainInfo{Name: d.Name, Nodes: []DomainNode{}, Groups: []GroupInfo{}, GPUs: []GPUCount{}, ControlPlaneNodes: len(d.ControlPlaneNodes), Healthy: true}
		gpus := map[[2]string]*GPUCount{}
		for _, name := range d.Nodes {
			n := nodes[name]
			c := gpu.ClassifyNode(n, gopts)
			_, cp := n.Labels[topology.ControlPlaneLabel]
			_, ours := n.Annotations[eviction.CordonedByAnnotation]
			dn := DomainNode{
				Name: name, Ready: c.NodeReady, Cordoned: n.Spec.Unschedulable, CordonedByUdrain: ours,
				UpgradedBy: n.Annotations[eviction.UpgradedByAnnotation], ControlPlane: cp,
				GPUVendor: string(c.Vendor), GPUProduct: c.Product, GPUs: c.Count, GPUStatus: string(c.Status),
			}
			if dn.Cordoned {
				info.CordonedNodes++
			}
			info.Nodes = append(info.Nodes, dn)
			if c.GPU && c.Count > 0 {
				k := [2]string{string(c.Vendor), c.Product}
				if gpus[k] == nil {
					gpus[k] = &GPUCount{Vendor: k[0], Product: k[1]}
				}
				gpus[k].GPUs += c.Count
				gpus[k].Nodes++
			}
		}
		info.GPUs = sortedGPUCounts(gpus)
		index[d.Name] = len(list.Items)
		list.Items = append(list.Items, info)
	}
	groups := s.groups()
	for i := range groups {
		gi := groupInfo(&groups[i], layout)
		if len(gi.Domains) == 0 {
			list.UnscheduledGroups = append(list.UnscheduledGroups, gi)
			continue
		}
		for _, d := range gi.Domains {
			item := &list.Items[index[d]]
			item.Groups = append(item.Groups, gi)
			item.Healthy = item.Healthy && gi.Healthy
		}
	}
	return list
}

func sortedGPUCounts(m map[[2]string]*GPUCount) []GPUCount {
	out := make([]GPUCount, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Vendor != out[j].Vendor {
			return out[i].Vendor < out[j].Vendor
		}
		return out[i].Product < out[j].Product
	})
	return out
}

func gpuText(gpus []GPUCount) string {
	if len(gpus) == 0 {
		return "-"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprintf("%d %s", g.GPUs, orDash(g.Product))
	}
	return strings.Join(parts, ", ")
}

func writeDomainsTable(w io.Writer, list DomainList) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "DOMAIN\tNODES\tCORDONED\tCONTROL-PLANE\tGROUPS\tUNHEALTHY\tGPUS")
	for _, d := range list.Items {
		unhealthy := 0
		for _, g := range d.Groups {
			if !g.Healthy {
				unhealthy++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d\t%d\t%d\t%s\n", d.Name, len(d.Nodes), d.CordonedNodes, len(d.Nodes), d.ControlPlaneNodes, len(d.Groups), unhealthy, gpuText(d.GPUs))
	}
	fmt.Fprintln(tw, "\nNODE\tDOMAIN\tREADY\tCORDONED\tGPUS\tPRODUCT\tGPU-STATUS\tUPGRADED-BY")
	for _, d := range list.Items {
		for _, n := range d.Nodes {
			cordoned := yesNo(n.Cordoned)
			if n.CordonedByUdrain {
				cordoned += " (udrain)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.Name, d.Name, yesNo(n.Ready), cordoned, n.GPUs, orDash(n.GPUProduct), n.GPUStatus, orDash(n.UpgradedBy))
		}
	}
	groups := 0
	for _, d := range list.Items {
		groups += len(d.Groups)
	}
	if groups+len(list.UnscheduledGroups) > 0 {
		fmt.Fprintln(tw, "\nNAMESPACE\tGROUP\tKIND\tDOMAINS\tLEADER\tREADY\tHEALTHY")
		row := func(g GroupInfo) {
			healthy := yesNo(g.Healthy)
			if !g.Healthy {
				healthy += ": " + g.Reason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", g.Namespace, g.Name, g.Kind, joinOrDash(g.Domains), orDash(g.Leader), g.ReadyMembers, g.Size, healthy)
		}
		seen := map[string]bool{}
		for _, d := range list.Items {
			for _, g := range d.Groups {
				if key := g.Namespace + "/" + g.Kind + "/" + g.Name; !seen[key] {
					seen[key] = true
					row(g)
				}
			}
		}
		for _, g := range list.UnscheduledGroups {
			row(g)
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
