package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

// newDrainer builds the Drainer of the domain and drain flags.
func (o *options) newDrainer(client kubernetes.Interface, df *domainFlags, dr *drainFlags, onEvent func(context.Context, eviction.Event)) (*eviction.Drainer, error) {
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

// newReader builds the read-only Drainer (eviction.NewReader) of the
// commands that change nothing: ro (events, informers, connect timeout)
// with the domain flags, --namespace and the clock.
func (o *options) newReader(client kubernetes.Interface, df *domainFlags, ro eviction.Options) (*eviction.Drainer, error) {
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
			if err := out.print(o.streams.Out, doc); err != nil {
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
