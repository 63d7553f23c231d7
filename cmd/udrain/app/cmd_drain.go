package app

import (
	"fmt"
	"io"
	"strings"

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
			d, err := o.newDrainer(client, &df, &dr, prog.event)
			if err != nil {
				prog.close()
				return err
			}
			plan, res, err := d.Drain(o.quietContext(cmd.Context()), args[0], eviction.DrainOptions{ID: id})
			prog.close()
			if res == nil {
				return err
			}
			doc := report.DrainReport{TypeMeta: report.NewTypeMeta(report.KindDrainResult), Plan: plan, Result: res, Summary: res.Summary(), Error: errorInfo(err)}
			if perr := out.print(o.streams.Out, doc, func(w io.Writer) error { return writeDrainTable(w, doc) }); perr != nil {
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

func writeDrainTable(w io.Writer, r report.DrainReport) error {
	res := r.Result
	switch {
	case res.DryRun != "":
		fmt.Fprintf(w, "Dry run (%s) of the drain of domain %s: nothing was changed.\n", res.DryRun, res.Domain)
	case res.Completed:
		fmt.Fprintf(w, "Drained domain %s in %s.\n", res.Domain, human(res.Duration.Duration()))
	case r.Error.Reason == reason(ExitInterrupted):
		fmt.Fprintf(w, "The drain of domain %s was interrupted after %s.\n", res.Domain, human(res.Duration.Duration()))
	default:
		fmt.Fprintf(w, "The drain of domain %s stopped after %s: %s\n", res.Domain, human(res.Duration.Duration()), r.Error.Message)
	}
	if res.DryRun == "" {
		fmt.Fprintf(w, "Cordoned: %s (already cordoned: %s)\n", listOrNone(res.Cordoned), listOrNone(res.AlreadyCordoned))
		if len(res.NodesGone) > 0 {
			fmt.Fprintf(w, "Nodes deleted meanwhile: %s\n", strings.Join(res.NodesGone, ", "))
		}
		for i, ph := range []eviction.PhaseResult{res.Phase1, res.Phase2} {
			fmt.Fprintf(w, "Phase %d: %d of %s evicted (%d already gone, %d already terminating) in %s\n",
				i+1, ph.Evicted, plural(ph.Pods, "pod", "pods"), ph.AlreadyGone, ph.AlreadyTerminating, human(ph.Duration.Duration()))
		}
	}
	writeSummary(w, r.Summary, false)
	if len(res.DryRunOutcomes) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "PHASE\tPOD\tOUTCOME")
		for _, o := range res.DryRunOutcomes {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", o.Phase, o.Pod, o.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.Plan != nil {
		for _, warning := range r.Plan.Warnings {
			fmt.Fprintf(w, "Warning: %s\n", warning)
		}
	}
	return nil
}

// writeSummary prints the summary lines shared by drain and rollout.
func writeSummary(w io.Writer, s eviction.Summary, rollout bool) {
	if rollout {
		fmt.Fprintf(w, "Domains: %d done, %d skipped (done by an earlier run), %d in all\n", s.DomainsDone, s.DomainsSkipped, s.DomainsTotal)
	}
	fmt.Fprintf(w, "Pods evicted: %d in phase 1, %d in phase 2\n", s.Phase1Evicted, s.Phase2Evicted)
	fmt.Fprintf(w, "Groups disrupted: %d\n", s.GroupsDisrupted)
	if rollout {
		fmt.Fprintf(w, "Groups disrupted again: %d\n", s.GroupsDisruptedAgain)
		if g := s.LongestDowntime; g != nil {
			fmt.Fprintf(w, "Longest downtime: %s, group %s (from %s to %s)\n", human(g.Downtime.Duration()), g.Group, g.From, orDash(g.To))
		} else {
			fmt.Fprintln(w, "Longest downtime: none")
		}
	}
	if b := s.LongestBlock; b != nil {
		fmt.Fprintf(w, "Longest block: %s by PodDisruptionBudget %s/%s\n", human(b.Duration.Duration()), b.Namespace, b.PDB)
	} else {
		fmt.Fprintln(w, "Longest block: none")
	}
	fmt.Fprintf(w, "Duration: %s\n", human(s.Duration.Duration()))
}
