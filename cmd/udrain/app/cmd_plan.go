package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
)

// newDrainer builds the Drainer of the domain and drain flags.
func (o *options) newDrainer(client kubernetes.Interface, df *domainFlags, dr *drainFlags, onEvent func(eviction.Event)) (*eviction.Drainer, error) {
	opts, err := dr.options()
	if err != nil {
		return nil, err
	}
	policy, _ := df.policy()
	opts.DomainLabel = df.label
	opts.Unlabeled = policy
	opts.OnEvent = onEvent
	opts.Clock = o.cfg.Clock
	opts.Namespace = o.explicitNamespace()
	return eviction.New(client, opts)
}

// newReader builds the Reader of the commands that change nothing: ro
// (events, informers, connect timeout) with the domain flags, --namespace
// and the clock.
func (o *options) newReader(client kubernetes.Interface, df *domainFlags, ro eviction.ReadOptions) (*eviction.Reader, error) {
	policy, _ := df.policy()
	ro.DomainLabel = df.label
	ro.Unlabeled = policy
	ro.Clock = o.cfg.Clock
	ro.Namespace = o.explicitNamespace()
	return eviction.NewReader(client, ro)
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
the domain, and the GPUs taken out of service. It warns when the evicted
GPU pods may not fit back onto the domain's nodes after the upgrade: not
at all (largest first), or when they come back spread over the nodes,
smallest first, as a scheduler scoring nodes by least allocation may place
them (fragmentation); fix placement first, or the rollout's recovery waits
for pods that stay Pending.

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
			plan, err := d.Plan(o.quietContext(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			doc := report.PlanReport{TypeMeta: report.NewTypeMeta(report.KindPlan), Plan: plan, Executable: plan.Err() == nil, Problem: errorInfo(plan.Err())}
			if err := out.print(o.streams.Out, doc, func(w io.Writer) error { return writePlanTable(w, doc) }); err != nil {
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

func writePlanTable(w io.Writer, r report.PlanReport) error {
	p := r.Plan
	pods := len(p.Phase1) + len(p.Phase2)
	fmt.Fprintf(w, "Plan for domain %s (label %s): %s, %s to evict, %s disrupted.\n",
		p.Domain, p.LabelKey, plural(len(p.Nodes), "node", "nodes"), plural(pods, "pod", "pods"), plural(len(p.Groups), "group", "groups"))
	fmt.Fprintf(w, "Nodes: %s\n", strings.Join(p.Nodes, ", "))
	if len(p.GPUs) > 0 {
		fmt.Fprintf(w, "GPUs out of service: %s\n", gpuText(p.GPUs))
	}
	for i, pods := range [][]eviction.PlannedPod{p.Phase1, p.Phase2} {
		desc := "pods selected by a PodDisruptionBudget (leaders), evicted first, paced by their budgets"
		if i == 1 {
			desc = "the other pods, evicted concurrently once every phase-1 pod is evicted"
		}
		fmt.Fprintf(w, "\nPhase %d: %s: %s\n", i+1, plural(len(pods), "pod", "pods"), desc)
		if len(pods) == 0 {
			continue
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
	for _, f := range p.GPUFit {
		if f.Risk() {
			fmt.Fprintf(w, "\nWarning: the evicted pods may not all fit back onto the domain's nodes: %s; free per node: %s. Fix placement (or the nodes' GPUs) before the drain, or the rollout's recovery waits for pods that stay Pending.\n",
				f, gpuNodesText(f.Nodes))
		}
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", g.ID.Namespace, g.ID.Name, g.ID.Kind, orDash(g.Leader), g.Size, g.Evicted, healthText(g.GroupStatus))
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
	if r.Executable {
		_, err := fmt.Fprintln(w, "\nThe drain can start.")
		return err
	}
	_, err := fmt.Fprintf(w, "\nThe drain cannot start: %s\n", r.Problem.Message)
	return err
}

// gpuNodesText shows free GPUs per node: "node-1 2/8, node-2 8/8".
func gpuNodesText(nodes []eviction.NodeGPUs) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s %d/%d", n.Node, n.Free, n.Allocatable)
	}
	return strings.Join(parts, ", ")
}

// healthText shows a group's health in a table cell: "yes", or "no:
// <message>".
func healthText(g health.GroupStatus) string {
	if g.Healthy {
		return "yes"
	}
	return "no: " + g.Message
}

func writePodReasons(w io.Writer, pods []eviction.PodReason) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tREASON")
	for _, p := range pods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Node, p.Reason)
	}
	return tw.Flush()
}
