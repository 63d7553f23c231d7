package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

func newGPUCommand(o *options) *cobra.Command {
	var df domainFlags
	var out outputFlag
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gpu",
		Short: "Classify the GPU nodes and list every problem, with the device plugin's diagnosis",
		Long: `Classify every node's accelerators from its labels and resources (vendor,
product, count, memory, sharing, dedicated by a taint or shared, advertised
or not), sort the nodes into dedicated-GPU, shared-GPU and CPU pools, and
list every problem with what to do. For GPU nodes that do not advertise
their resource, each device plugin DaemonSet is checked against the node
the way the DaemonSet controller would (an untolerated taint, a
nodeSelector or node affinity the node fails), with the fix.

The exit code is 0 whether or not problems are found; scripts read
.problems in -o json.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(out.validate(), df.validateLabel()); err != nil {
				return err
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			s, err := listCluster(cmd.Context(), client, listWhat{daemonSets: true})
			if err != nil {
				return err
			}
			var plugins []appsv1.DaemonSet
			for i := range s.DaemonSets {
				if _, ok := gpu.DevicePluginVendor(&s.DaemonSets[i]); ok {
					plugins = append(plugins, s.DaemonSets[i])
				}
			}
			sum := gpu.Summarize(s.Nodes, plugins, gpu.Options{Clock: o.cfg.Clock, GracePeriod: grace})
			domainOf := map[string]string{}
			for _, n := range s.Nodes {
				domainOf[n.Name] = n.Labels[df.label]
			}
			report := buildGPUSummary(sum, df.label, domainOf)
			return out.print(o.streams.Out, report, func(w io.Writer) error { return writeGPUTable(w, report) })
		},
	}
	cmd.Flags().StringVar(&df.label, "domain-label", topology.DefaultDomainLabel, "Node label whose value names a node's upgrade domain (shown per node)")
	cmd.Flags().DurationVar(&grace, "driver-grace-period", gpu.DefaultGracePeriod, "How long a GPU node may go without advertising its devices after it became Ready (drivers installing) before it is a problem")
	out.add(cmd)
	return cmd
}

func buildGPUSummary(s gpu.Summary, label string, domainOf map[string]string) GPUSummary {
	r := GPUSummary{TypeMeta: typeMeta(KindGPUSummary), LabelKey: label, Nodes: []GPUNode{}, Pools: []GPUPool{},
		Products: []GPUProduct{}, Statuses: map[string]int{}, Problems: []GPUProblem{}, DevicePlugins: []GPUDiagnosis{}}
	for _, c := range s.Nodes {
		r.Nodes = append(r.Nodes, GPUNode{
			Node: c.Node, Domain: domainOf[c.Node], GPU: c.GPU, Vendor: string(c.Vendor), Product: c.Product, Count: c.Count,
			MemoryMiB: c.MemoryMiB, Resource: string(c.Resource), Capacity: c.Capacity, Allocatable: c.Allocatable,
			Sharing: string(c.Sharing.Strategy), Replicas: c.Sharing.Replicas, MIGStrategy: c.Sharing.MIGStrategy,
			Dedicated: c.Dedicated, NodeReady: c.NodeReady, Unschedulable: c.Unschedulable, Status: string(c.Status),
		})
	}
	for _, p := range s.Pools {
		r.Pools = append(r.Pools, GPUPool{Kind: string(p.Kind), Nodes: len(p.Nodes), GPUs: p.GPUs, AdvertisedGPUs: p.AdvertisedGPUs, ProblemNodes: p.ProblemNodes})
	}
	for _, p := range s.Products {
		r.Products = append(r.Products, GPUProduct{Vendor: string(p.Vendor), Product: p.Product, Nodes: p.Nodes, GPUs: p.GPUs, AdvertisedGPUs: p.AdvertisedGPUs, MemoryMiB: p.MemoryMiB})
	}
	for st, n := range s.Statuses {
		r.Statuses[string(st)] = n
	}
	for _, p := range s.Problems {
		r.Problems = append(r.Problems, GPUProblem{Node: p.Node, DaemonSet: p.DaemonSet, Code: string(p.Code), Severity: string(p.Severity),
			Message: p.Message, Key: p.Key, Value: p.Value, Fix: p.Fix})
	}
	for _, d := range s.Diagnoses {
		taints := []string{}
		for _, t := range d.UntoleratedTaints {
			taints = append(taints, t.ToString())
		}
		r.DevicePlugins = append(r.DevicePlugins, GPUDiagnosis{DaemonSet: d.DaemonSet, Node: d.Node, Vendor: string(d.Vendor),
			SelectsNode: d.SelectsNode, CanRun: d.CanRun, UntoleratedTaints: taints, Fix: d.Fix})
	}
	return r
}

func writeGPUTable(w io.Writer, s GPUSummary) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "POOL\tNODES\tGPUS\tADVERTISED\tPROBLEM NODES")
	for _, p := range s.Pools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", p.Kind, p.Nodes, p.GPUs, p.AdvertisedGPUs, p.ProblemNodes)
	}
	if len(s.Products) > 0 {
		fmt.Fprintln(tw, "\nVENDOR\tPRODUCT\tNODES\tGPUS\tADVERTISED")
		for _, p := range s.Products {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", p.Vendor, orDash(p.Product), p.Nodes, p.GPUs, p.AdvertisedGPUs)
		}
	}
	gpuNodes := 0
	for _, n := range s.Nodes {
		if n.GPU {
			gpuNodes++
		}
	}
	if gpuNodes > 0 {
		fmt.Fprintln(tw, "\nNODE\tDOMAIN\tSTATUS\tVENDOR\tPRODUCT\tGPUS\tRESOURCE\tSHARING\tDEDICATED")
		for _, n := range s.Nodes {
			if !n.GPU {
				continue
			}
			sharing := n.Sharing
			if n.Replicas > 1 {
				sharing += fmt.Sprintf(" x%d", n.Replicas)
			}
			if n.MIGStrategy != "" && n.MIGStrategy != "none" {
				sharing += ", mig " + n.MIGStrategy
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s %d/%d\t%s\t%s\n", n.Node, orDash(n.Domain), n.Status, n.Vendor, orDash(n.Product), n.Count,
				orDash(n.Resource), n.Allocatable, n.Capacity, sharing, yesNo(n.Dedicated))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Problems) == 0 {
		_, err := fmt.Fprintln(w, "\nNo problems found.")
		return err
	}
	fmt.Fprintf(w, "\n%s:\n", plural(len(s.Problems), "problem", "problems"))
	for i, p := range s.Problems {
		where := "node " + p.Node
		if p.DaemonSet != "" {
			where += " (DaemonSet " + p.DaemonSet + ")"
		}
		fmt.Fprintf(w, "%d. %s %s %s: %s\n", i+1, strings.ToUpper(p.Severity), p.Code, where, p.Message)
		if p.Fix != "" {
			fmt.Fprintf(w, "   fix: %s\n", p.Fix)
		}
	}
	return nil
}
