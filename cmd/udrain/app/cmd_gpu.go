package app

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/report"
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
			r, err := eviction.NewReader(client, eviction.Options{})
			if err != nil {
				return err
			}
			nodes, err := r.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			plugins, err := r.DevicePlugins(cmd.Context())
			if err != nil {
				return err
			}
			all := pointers(nodes)
			summary := gpu.Summarize(all, pointers(plugins), gpu.Options{Clock: o.cfg.Clock, GracePeriod: grace})
			return out.print(o.streams.Out, report.NewGPUSummary(df.label, all, summary))
		},
	}
	cmd.Flags().StringVar(&df.label, "domain-label", topology.DefaultDomainLabel, "Node label whose value names a node's upgrade domain (shown per node)")
	cmd.Flags().DurationVar(&grace, "driver-grace-period", gpu.DefaultGracePeriod, "How long a GPU node may go without advertising its devices after it became Ready (drivers installing) before it is a problem")
	out.add(cmd)
	return cmd
}

// pointers returns pointers to the items of a list, as listers give them.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
