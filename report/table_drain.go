package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
)

// WriteTable writes the plan: the pods of each phase, those skipped and
// refused, the warnings, the budgets that would block, the groups
// disrupted, the contract's findings for the domain, and whether the drain
// can start.
func (r PlanReport) WriteTable(w io.Writer, o TableOptions) error {
	p := r.Plan
	if p == nil {
		return missing("PlanReport", "plan")
	}
	pods := len(p.Phase1) + len(p.Phase2)
	fmt.Fprintf(w, "Plan for domain %s (label %s): %s, %s to evict, %s disrupted.\n",
		p.Domain, p.LabelKey, plural(len(p.Nodes), "node", "nodes"), plural(pods, "pod", "pods"), plural(len(p.Groups), "group", "groups"))
	fmt.Fprintf(w, "Nodes: %s\n", strings.Join(p.Nodes, ", "))
	if len(p.GPUs) > 0 {
		fmt.Fprintf(w, "GPUs out of service: %s\n", gpuText(p.GPUs))
	}
	for i, pods := range [][]eviction.PlannedPod{p.Phase1, p.Phase2} {
		if err := writePhase(w, i+1, pods); err != nil {
			return err
		}
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintf(w, "\nSkipped: %s\n", plural(len(p.Skipped), "pod", "pods"))
		if err := writePodReasons(w, p.Skipped); err != nil {
			return err
		}
	}
	if len(p.Refused) > 0 {
		fmt.Fprintf(w, "\nRefused (kubectl drain would refuse these with the current flags): %s\n", plural(len(p.Refused), "pod", "pods"))
		if err := writePodReasons(w, p.Refused); err != nil {
			return err
		}
	}
	for _, warning := range p.Warnings {
		fmt.Fprintf(w, "\nWarning: %s\n", warning)
	}
	for _, f := range p.GPUFit {
		if f.Risk() {
			fmt.Fprintf(w, "\nWarning: the evicted pods may not all fit back onto the domain's nodes: %s; free per node: %s. Fix placement (or the nodes' GPUs) before the drain, or the rollout's recovery waits for pods that stay Pending.\n",
				f, gpuNodesText(f.Nodes))
		}
	}
	if err := writePlanBlockersAndGroups(w, p); err != nil {
		return err
	}
	if len(p.Findings) > 0 {
		fmt.Fprintln(w, "\nContract findings for this domain:")
		if err := writeFindings(w, p.Findings, o); err != nil {
			return err
		}
	}
	if r.Executable {
		_, err := fmt.Fprintln(w, "\nThe drain can start.")
		return err
	}
	_, err := fmt.Fprintf(w, "\nThe drain cannot start: %s\n", r.Problem.message())
	return err
}

// writePhase prints the pods a plan evicts in phase n.
func writePhase(w io.Writer, n int, pods []eviction.PlannedPod) error {
	desc := "pods selected by a PodDisruptionBudget (leaders), evicted first, paced by their budgets"
	if n == 2 {
		desc = "the other pods, evicted concurrently once every phase-1 pod is evicted"
	}
	fmt.Fprintf(w, "\nPhase %d: %s: %s\n", n, plural(len(pods), "pod", "pods"), desc)
	if len(pods) == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tPDBS\tGROUP\tNOTE")
	for _, pod := range pods {
		var note []string
		if pod.Leader {
			note = append(note, "leader")
		}
		if pod.Terminating {
			note = append(note, "terminating: only waited for")
		}
		if pod.Warning != "" {
			note = append(note, pod.Warning)
		}
		group := ""
		if pod.Group != nil {
			group = pod.Group.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", pod.Namespace, pod.Name, pod.Node, joinOrDash(pod.PDBs), orDash(group), joinOrDash(note))
	}
	return tw.Flush()
}

// writePlanBlockersAndGroups prints the budgets that would refuse phase 1
// and the groups the plan disrupts.
func writePlanBlockersAndGroups(w io.Writer, p *eviction.Plan) error {
	if len(p.Blockers) > 0 {
		fmt.Fprintln(w, "\nBlockers (would refuse phase 1 right now):")
		tw := newTable(w)
		fmt.Fprintln(tw, "NAMESPACE\tPDB\tNEEDED\tALLOWED\tHEALTHY\tDESIRED\tEXPECTED")
		for _, b := range p.Blockers {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", b.Namespace, b.PDB, b.Needed, b.DisruptionsAllowed, b.CurrentHealthy, b.DesiredHealthy, b.ExpectedPods)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(p.Groups) > 0 {
		fmt.Fprintln(w, "\nGroups disrupted:")
		tw := newTable(w)
		fmt.Fprintln(tw, "NAMESPACE\tGROUP\tKIND\tLEADER\tSIZE\tEVICTED\tHEALTHY NOW")
		for _, g := range p.Groups {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", g.ID.Namespace, g.ID.Name, g.ID.Kind, orDash(g.Leader), g.Size, g.Evicted, healthText(g.GroupStatus))
		}
		return tw.Flush()
	}
	return nil
}

// WriteTable writes how the drain ended, what it cordoned, each phase, the
// summary, a dry run's outcome per pod, and the plan's warnings.
func (r DrainReport) WriteTable(w io.Writer, _ TableOptions) error {
	res := r.Result
	if res == nil {
		return missing("DrainReport", "result")
	}
	switch {
	case res.DryRun != "":
		fmt.Fprintf(w, "Dry run (%s) of the drain of domain %s: nothing was changed.\n", res.DryRun, res.Domain)
	case res.Completed:
		fmt.Fprintf(w, "Drained domain %s in %s.\n", res.Domain, FormatDuration(res.Duration.Duration()))
	case r.Error.reason() == ReasonInterrupted:
		fmt.Fprintf(w, "The drain of domain %s was interrupted after %s.\n", res.Domain, FormatDuration(res.Duration.Duration()))
	default:
		fmt.Fprintf(w, "The drain of domain %s stopped after %s: %s\n", res.Domain, FormatDuration(res.Duration.Duration()), r.Error.message())
	}
	if res.DryRun == "" {
		fmt.Fprintf(w, "Cordoned: %s (already cordoned: %s)\n", listOrNone(res.Cordoned), listOrNone(res.AlreadyCordoned))
		if len(res.NodesGone) > 0 {
			fmt.Fprintf(w, "Nodes deleted meanwhile: %s\n", strings.Join(res.NodesGone, ", "))
		}
		c := res.Pods
		for _, ph := range []struct {
			n, evicted, total, gone, terminating int
			took                                 time.Duration
		}{
			{1, c.Phase1Evicted, c.Phase1Total, c.Phase1AlreadyGone, c.Phase1AlreadyTerminating, res.Phase1Duration.Duration()},
			{2, c.Phase2Evicted, c.Phase2Total, c.Phase2AlreadyGone, c.Phase2AlreadyTerminating, res.Phase2Duration.Duration()},
		} {
			fmt.Fprintf(w, "Phase %d: %d of %s evicted (%d already gone, %d already terminating) in %s\n",
				ph.n, ph.evicted, plural(ph.total, "pod", "pods"), ph.gone, ph.terminating, FormatDuration(ph.took))
		}
	}
	writeSummary(w, r.Summary, false)
	if len(res.DryRunPods) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "PHASE\tPOD\tOUTCOME")
		for _, p := range res.DryRunPods {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.Stage.Phase(), p.PodRef, p.DryRunMessage)
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

// WriteTable writes one line: the nodes uncordoned, or that every node
// was schedulable already.
func (r UncordonResult) WriteTable(w io.Writer, _ TableOptions) error {
	if len(r.Uncordoned) == 0 {
		_, err := fmt.Fprintf(w, "Domain %s: every node was schedulable already.\n", r.Domain)
		return err
	}
	_, err := fmt.Fprintf(w, "Domain %s: uncordoned %s: %s\n", r.Domain, plural(len(r.Uncordoned), "node", "nodes"), strings.Join(r.Uncordoned, ", "))
	return err
}

// WriteTable writes whether the domain (or every domain) is healthy and,
// if not, each group and budget that is not.
func (r HealthReport) WriteTable(w io.Writer, _ TableOptions) error {
	if r.Health == nil {
		return missing("HealthReport", "health")
	}
	what := "Every domain"
	if r.Domain != "" {
		what = "Domain " + r.Domain
	}
	groups, budgets := 0, map[health.BudgetRef]bool{}
	for _, d := range r.Health.Domains {
		groups += len(d.Groups)
		for _, b := range d.Budgets {
			budgets[b.Ref()] = true // a budget may span domains
		}
	}
	if r.Health.Healthy {
		fmt.Fprintf(w, "%s is healthy (%s, %s; waited %s).\n", what, plural(groups, "group", "groups"),
			plural(len(budgets), "PodDisruptionBudget", "PodDisruptionBudgets"), FormatDuration(secondsDuration(r.WaitedSeconds)))
		return nil
	}
	fmt.Fprintf(w, "%s is not healthy after %s:\n", what, FormatDuration(secondsDuration(r.WaitedSeconds)))
	for _, d := range r.Health.Domains {
		for _, g := range d.Groups {
			if !g.Healthy {
				fmt.Fprintf(w, "  %s: group %s: %s\n", d.Domain, g.ID, g.Message)
			}
		}
		for _, b := range d.Budgets {
			if !b.Healthy {
				fmt.Fprintf(w, "  %s: PodDisruptionBudget %s/%s: %s\n", d.Domain, b.Namespace, b.Name, b.Message)
			}
		}
	}
	for _, g := range r.Health.Unscheduled {
		fmt.Fprintf(w, "  unscheduled: group %s: %s\n", g.ID, g.Message)
	}
	return nil
}
