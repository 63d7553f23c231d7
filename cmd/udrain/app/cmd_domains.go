package app

import (
	"github.com/spf13/cobra"

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
			r, err := o.newReader(client, &df, eviction.Options{})
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
			list := report.NewDomainList(nodes, layout, hr, gpu.Options{Clock: o.cfg.Clock})
			return out.print(o.streams.Out, list)
		},
	}
	df.add(cmd)
	out.add(cmd)
	return cmd
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
