package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/eviction"
)

// newDrainer builds the Drainer of the domain and drain flags.
func (o *options) newDrainer(client kubernetes.Interface, df *domainFlags, dr *drainFlags, onEvent func(eviction.Event)) (*eviction.Drainer, error) {
	h, err := dr.helper()
	if err != nil {
		return nil, err
	}
	policy, _ := df.policy()
	return eviction.New(client, eviction.Options{
		Helper:          h,
		DomainLabel:     df.label,
		Unlabeled:       policy,
		Concurrency:     dr.concurrency,
		AllowViolations: dr.allowViolations,
		OnEvent:         onEvent,
		Clock:           o.cfg.Clock,
	})
}

func newPlanCommand(o *options) *cobra.Command {
	var df domainFlags
	var dr drainFlags
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "plan DOMAIN",
		Short: "Show what draining a domain would do, without changing anything",
		Long: `Show what "drain DOMAIN" with the same flags would do, without changing
anything: the pods of phase 1 (selected by a PodDisruptionBudget: the
leaders) and phase 2 (the others) with their PDBs, the pods skipped and why,
the pods kubectl drain would refuse with these flags, the PDBs that would
block right now, the groups disrupted, the contract findings that concern
the domain, and the GPUs taken out of service.

It takes drain's flags, so that "plan" and "drain" can share a command line.
The exit code says whether the drain could start: 0 yes, 1 pods would be
refused, 4 the placement contract is violated (or a pod is under two PDBs).`,
		Args: exactArgs(1, "one upgrade domain"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), dr.validate(), out.validate()); err != nil {
				return err
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			d, err := o.newDrainer(client, &df, &dr, nil)
			if err != nil {
				return err
			}
			plan, err := d.Plan(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			report := buildPlan(plan)
			if err := out.print(o.streams.Out, report, func(w io.Writer) error { return writePlanTable(w, report) }); err != nil {
				return err
			}
			if err := plan.Err(); err != nil {
				return &reportedError{err: err, summary: fmt.Sprintf("domain %s cannot be drained with these flags: %v", plan.Domain, err)}
			}
			return nil
		},
	}
	df.add(cmd)
	dr.add(cmd, "Used by drain (the time to wait before giving up, zero means infinite); plan ignores it.")
	out.add(cmd)
	return cmd
}

func buildPlan(p *eviction.Plan) Plan {
	r := Plan{
		TypeMeta: typeMeta(KindPlan), Domain: p.Domain, LabelKey: p.LabelKey, Nodes: orEmpty(p.Nodes),
		CreatedAt: p.CreatedAt.UTC(), Executable: p.Err() == nil, Problem: errorInfo(p.Err()),
		Phases:  []PlanPhase{{Phase: 1, Pods: plannedPods(p.Phase1)}, {Phase: 2, Pods: plannedPods(p.Phase2)}},
		Skipped: []PodReason{}, Refused: []PodReason{}, Warnings: orEmpty(p.Warnings), Blockers: []Blocker{},
		Groups: []AffectedGroup{}, GPUs: []GPUCount{}, Findings: findings(p.Findings),
	}
	for _, s := range p.Skipped {
		r.Skipped = append(r.Skipped, PodReason{Namespace: s.Namespace, Name: s.Name, Node: s.Node, Reason: s.Reason})
	}
	for _, s := range p.Refused {
		r.Refused = append(r.Refused, PodReason{Namespace: s.Namespace, Name: s.Name, Node: s.Node, Reason: s.Reason})
	}
	for _, b := range p.Blockers {
		r.Blockers = append(r.Blockers, Blocker{Namespace: b.Namespace, PDB: b.PDB, Needed: b.Needed,
			DisruptionsAllowed: b.DisruptionsAllowed, CurrentHealthy: b.CurrentHealthy, DesiredHealthy: b.DesiredHealthy, ExpectedPods: b.ExpectedPods})
	}
	for _, g := range p.Groups {
		r.Groups = append(r.Groups, AffectedGroup{Namespace: g.ID.Namespace, Name: g.ID.Name, Kind: string(g.ID.Kind),
			Workload: g.Workload, Leader: g.Leader, Size: g.Size, Evicted: g.Evicted, Healthy: g.Healthy})
	}
	for _, c := range p.GPUs {
		r.GPUs = append(r.GPUs, GPUCount{Vendor: c.Vendor, Product: c.Product, GPUs: c.GPUs, Nodes: c.Nodes})
	}
	return r
}

func plannedPods(pods []eviction.PlannedPod) []PlannedPod {
	out := make([]PlannedPod, len(pods))
	for i, p := range pods {
		out[i] = PlannedPod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: p.Node, PDBs: orEmpty(p.PDBs),
			Group: p.Group, Leader: p.Leader, Terminating: p.Terminating, Warning: p.Warning}
	}
	return out
}

func writePlanTable(w io.Writer, p Plan) error {
	pods := 0
	for _, ph := range p.Phases {
		pods += len(ph.Pods)
	}
	fmt.Fprintf(w, "Plan for domain %s (label %s): %s, %s to evict, %s disrupted.\n",
		p.Domain, p.LabelKey, plural(len(p.Nodes), "node", "nodes"), plural(pods, "pod", "pods"), plural(len(p.Groups), "group", "groups"))
	fmt.Fprintf(w, "Nodes: %s\n", strings.Join(p.Nodes, ", "))
	if len(p.GPUs) > 0 {
		fmt.Fprintf(w, "GPUs out of service: %s\n", gpuText(p.GPUs))
	}
	for _, ph := range p.Phases {
		desc := "pods selected by a PodDisruptionBudget (leaders), evicted first, paced by their budgets"
		if ph.Phase == 2 {
			desc = "the other pods, evicted concurrently once every phase-1 pod is evicted"
		}
		fmt.Fprintf(w, "\nPhase %d: %s: %s\n", ph.Phase, plural(len(ph.Pods), "pod", "pods"), desc)
		if len(ph.Pods) == 0 {
			continue
		}
		tw := newTable(w)
		fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tPDBS\tGROUP\tNOTE")
		for _, pod := range ph.Pods {
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", pod.Namespace, pod.Name, pod.Node, joinOrDash(pod.PDBs), orDash(pod.Group), joinOrDash(note))
		}
		if err := tw.Flush(); err != nil {
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", g.Namespace, g.Name, g.Kind, orDash(g.Leader), g.Size, g.Evicted, yesNo(g.Healthy))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(p.Findings) > 0 {
		fmt.Fprintln(w, "\nContract findings for this domain:")
		if err := writeFindings(w, p.Findings); err != nil {
			return err
		}
	}
	if p.Executable {
		_, err := fmt.Fprintln(w, "\nThe drain can start.")
		return err
	}
	_, err := fmt.Fprintf(w, "\nThe drain cannot start: %s\n", p.Problem.Message)
	return err
}

func writePodReasons(w io.Writer, pods []PodReason) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tREASON")
	for _, p := range pods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Node, p.Reason)
	}
	return tw.Flush()
}
