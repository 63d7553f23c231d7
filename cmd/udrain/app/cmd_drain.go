package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
)

func newDrainCommand(o *options) *cobra.Command {
	var df domainFlags
	var dr drainFlags
	var out outputFlag
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
			if err := firstError(df.validate(), dr.validate(), out.validate()); err != nil {
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
			plan, res, err := d.Drain(cmd.Context(), args[0])
			prog.close()
			if res == nil {
				return err
			}
			report := buildDrainResult(plan, res, dr.dryRunName(), err)
			if perr := out.print(o.streams.Out, report, func(w io.Writer) error { return writeDrainTable(w, report) }); perr != nil {
				return perr
			}
			return err
		},
	}
	df.add(cmd)
	dr.add(cmd, "The length of time to wait before giving up, zero means infinite")
	out.add(cmd)
	return cmd
}

func phase(r eviction.PhaseResult) Phase {
	return Phase{Pods: r.Pods, Evicted: r.Evicted, AlreadyGone: r.AlreadyGone, AlreadyTerminating: r.AlreadyTerminating, DurationSeconds: seconds(r.Duration)}
}

func blocks(bs []eviction.BlockRecord) []Block {
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = Block{Namespace: b.Namespace, PDB: b.PDB, Since: b.Since.UTC(), DurationSeconds: seconds(b.Duration), Pods: orEmpty(b.Pods)}
	}
	return out
}

// longestBlock reports the block eviction's Result.LongestBlock found, nil
// if ok is false. (A block that lasted no time still counts: it names the
// PDB that refused.)
func longestBlock(b eviction.BlockRecord, ok bool) *LongestBlock {
	if !ok {
		return nil
	}
	return &LongestBlock{Namespace: b.Namespace, PDB: b.PDB, DurationSeconds: seconds(b.Duration)}
}

func buildDrainResult(plan *eviction.Plan, res *eviction.Result, dryRun string, err error) DrainResult {
	r := DrainResult{
		TypeMeta: typeMeta(KindDrainResult), Domain: res.Domain, DryRun: dryRun, Completed: err == nil,
		Cordoned: orEmpty(res.Cordoned), AlreadyCordoned: orEmpty(res.AlreadyCordoned), NodesGone: orEmpty(res.NodesGone),
		Phase1: phase(res.Phase1), Phase2: phase(res.Phase2), Skipped: []PodReason{}, Warnings: []string{},
		Blocks: blocks(res.Blocks), GroupsDisrupted: orEmpty(res.GroupsDisrupted), DryRunOutcomes: []DryRunOutcome{},
		Started: res.Started.UTC(), DurationSeconds: seconds(res.Duration), Error: errorInfo(err),
	}
	if plan != nil {
		for _, s := range plan.Skipped {
			r.Skipped = append(r.Skipped, PodReason{Namespace: s.Namespace, Name: s.Name, Node: s.Node, Reason: s.Reason})
		}
		r.Warnings = orEmpty(plan.Warnings)
	}
	for _, o := range res.DryRunOutcomes {
		r.DryRunOutcomes = append(r.DryRunOutcomes, DryRunOutcome{Pod: o.Pod, Phase: int(o.Phase), Outcome: o.Outcome})
	}
	r.Summary = Summary{
		DomainsTotal: 1, Phase1Evicted: res.Phase1.Evicted, Phase2Evicted: res.Phase2.Evicted,
		LongestBlock: longestBlock(res.LongestBlock()), DurationSeconds: seconds(res.Duration),
	}
	if err == nil {
		r.Summary.DomainsDone = 1
	}
	if dryRun == "none" && res.Phase1.Evicted+res.Phase2.Evicted+res.Phase1.AlreadyTerminating+res.Phase2.AlreadyTerminating > 0 {
		r.Summary.GroupsDisrupted = len(res.GroupsDisrupted)
	}
	return r
}

func writeDrainTable(w io.Writer, r DrainResult) error {
	switch {
	case r.DryRun != "none":
		fmt.Fprintf(w, "Dry run (%s) of the drain of domain %s: nothing was changed.\n", r.DryRun, r.Domain)
	case r.Completed:
		fmt.Fprintf(w, "Drained domain %s in %s.\n", r.Domain, human(secondsDuration(r.DurationSeconds)))
	case r.Error.Reason == reason(ExitInterrupted):
		fmt.Fprintf(w, "The drain of domain %s was interrupted after %s.\n", r.Domain, human(secondsDuration(r.DurationSeconds)))
	default:
		fmt.Fprintf(w, "The drain of domain %s stopped after %s: %s\n", r.Domain, human(secondsDuration(r.DurationSeconds)), r.Error.Message)
	}
	if r.DryRun == "none" {
		fmt.Fprintf(w, "Cordoned: %s (already cordoned: %s)\n", listOrNone(r.Cordoned), listOrNone(r.AlreadyCordoned))
		if len(r.NodesGone) > 0 {
			fmt.Fprintf(w, "Nodes deleted meanwhile: %s\n", strings.Join(r.NodesGone, ", "))
		}
		for i, ph := range []Phase{r.Phase1, r.Phase2} {
			fmt.Fprintf(w, "Phase %d: %d of %s evicted (%d already gone, %d already terminating) in %s\n",
				i+1, ph.Evicted, plural(ph.Pods, "pod", "pods"), ph.AlreadyGone, ph.AlreadyTerminating, human(secondsDuration(ph.DurationSeconds)))
		}
	}
	writeSummary(w, r.Summary, false)
	if len(r.DryRunOutcomes) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "PHASE\tPOD\tOUTCOME")
		for _, o := range r.DryRunOutcomes {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", o.Phase, o.Pod, o.Outcome)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	return nil
}

// writeSummary prints the summary lines shared by drain and rollout.
func writeSummary(w io.Writer, s Summary, rollout bool) {
	if rollout {
		fmt.Fprintf(w, "Domains: %d done, %d skipped (done by an earlier run), %d in all\n", s.DomainsDone, s.DomainsSkipped, s.DomainsTotal)
	}
	fmt.Fprintf(w, "Pods evicted: %d in phase 1, %d in phase 2\n", s.Phase1Evicted, s.Phase2Evicted)
	fmt.Fprintf(w, "Groups disrupted: %d\n", s.GroupsDisrupted)
	if b := s.LongestBlock; b != nil {
		fmt.Fprintf(w, "Longest block: %s by PodDisruptionBudget %s/%s\n", human(secondsDuration(b.DurationSeconds)), b.Namespace, b.PDB)
	} else {
		fmt.Fprintln(w, "Longest block: none")
	}
	fmt.Fprintf(w, "Duration: %s\n", human(secondsDuration(s.DurationSeconds)))
}
