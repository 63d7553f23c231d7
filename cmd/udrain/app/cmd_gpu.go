package app

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
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
			r, err := eviction.NewReader(client, eviction.ReadOptions{})
			if err != nil {
				return err
			}
			nodes, err := r.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			daemonSets, err := r.DaemonSets(cmd.Context())
			var denied *eviction.PermissionError
			if errors.As(err, &denied) && apierrors.IsForbidden(denied.Err) {
				klog.FromContext(cmd.Context()).Info("Cannot list DaemonSets; GPU nodes without their resource are reported without the device plugin's diagnosis (grant list on daemonsets.apps to get it)", "err", denied.Err)
				daemonSets, err = nil, nil
			}
			if err != nil {
				return err
			}
			var plugins []appsv1.DaemonSet
			for i := range daemonSets {
				if _, ok := gpu.DevicePluginVendor(&daemonSets[i]); ok {
					plugins = append(plugins, daemonSets[i])
				}
			}
			report := GPUSummary{TypeMeta: typeMeta(KindGPUSummary), LabelKey: df.label, Domains: map[string]string{},
				Summary: gpu.Summarize(nodes, plugins, gpu.Options{Clock: o.cfg.Clock, GracePeriod: grace})}
			for _, n := range nodes {
				report.Domains[n.Name] = n.Labels[df.label]
			}
			return out.print(o.streams.Out, report, func(w io.Writer) error { return writeGPUTable(w, report) })
		},
	}
	cmd.Flags().StringVar(&df.label, "domain-label", topology.DefaultDomainLabel, "Node label whose value names a node's upgrade domain (shown per node)")
	cmd.Flags().DurationVar(&grace, "driver-grace-period", gpu.DefaultGracePeriod, "How long a GPU node may go without advertising its devices after it became Ready (drivers installing) before it is a problem")
	out.add(cmd)
	return cmd
}

func writeGPUTable(w io.Writer, r GPUSummary) error {
	s := r.Summary
	tw := newTable(w)
	fmt.Fprintln(tw, "POOL\tNODES\tGPUS\tADVERTISED\tPROBLEM NODES")
	for _, p := range s.Pools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", p.Kind, len(p.Nodes), p.GPUs, p.AdvertisedGPUs, p.ProblemNodes)
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
			sharing := string(n.Sharing.Strategy)
			if n.Sharing.Replicas > 1 {
				sharing += fmt.Sprintf(" x%d", n.Sharing.Replicas)
			}
			if m := n.Sharing.MIGStrategy; m != "" && m != "none" {
				sharing += ", mig " + m
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s %d/%d\t%s\t%s\n", n.Node, orDash(r.Domains[n.Node]), n.Status, n.Vendor, orDash(n.Product), n.Count,
				orDash(string(n.Resource)), n.Allocatable, n.Capacity, sharing, yesNo(n.Dedicated))
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
		fmt.Fprintf(w, "%d. %s %s %s: %s\n", i+1, strings.ToUpper(string(p.Severity)), p.Code, where, p.Message)
		if p.Fix != "" {
			fmt.Fprintf(w, "   fix: %s\n", p.Fix)
		}
	}
	return nil
}
