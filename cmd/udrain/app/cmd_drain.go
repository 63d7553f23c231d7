package app

import (
	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

func newDrainCommand(o *options) *cobra.Command {
	var df domainFlags
	var dr drainFlags
	var out outputFlag
	var id string
	cmd := &cobra.Command{
		Use:   "drain DOMAIN",
		Short: "Cordon and drain every node of an upgrade domain, leaders first",
		Long: `Cordon every node of DOMAIN and evict its pods in two phases: first the pods
a PodDisruptionBudget selects (the groups' leaders), each paced by its
budget (a 429 waits until the budget allows, and says which PDB blocks and
how far it is from allowing); then, once every one of them is evicted, the
other pods, concurrently. It returns when every evicted pod is gone.

The flags are kubectl drain's, with the same names, defaults and filters
(DaemonSet, mirror, emptyDir, unreplicated and finished pods). Before
anything changes, the drain stops on pods kubectl would refuse and on
violations of the placement contract (see audit; --allow-violations goes on
anyway).

Progress goes to stderr: a live view on a terminal, else one line per event.
A summary goes to stdout (in the DrainResult with -o json). Ctrl-C stops
starting evictions and exits 130; run the same command again to resume.
Exit codes: 3 when --timeout passes while a PDB blocks, 4 on a contract
violation.`,
		Args: exactArgs(1, "one upgrade domain"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), dr.validate(), out.validate(), inFlagTerms(eviction.DrainOptions{ID: id}.Validate())); err != nil {
				return err
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			prog := o.newProgress(o.streams.ErrOut)
			d, err := o.newDrainer(client, &df, &dr, prog.Event)
			if err != nil {
				prog.Close()
				return err
			}
			plan, res, err := d.Drain(o.quietContext(cmd.Context()), args[0], eviction.DrainOptions{ID: id})
			prog.Close()
			if res == nil {
				return err
			}
			doc := report.DrainReport{TypeMeta: report.NewTypeMeta(report.KindDrainResult), Plan: plan, Result: res, Summary: report.SummarizeDrain(res), Error: errorInfo(err)}
			if perr := out.print(o.streams.Out, doc); perr != nil {
				return perr
			}
			return err
		},
	}
	df.add(cmd)
	dr.add(cmd, "The length of time to wait before giving up, zero means infinite")
	out.add(cmd)
	cmd.Flags().StringVar(&id, "id", eviction.DefaultDrainID, "Drain ID, recorded in the cordon mark of the nodes (annotation udrain.dev/cordoned-by); the same ID resumes, and a rollout with another ID waits until the domain is uncordoned")
	return cmd
}
