package app

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

func newUncordonCommand(o *options) *cobra.Command {
	var df domainFlags
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "uncordon DOMAIN",
		Short: "Make every node of an upgrade domain schedulable again",
		Long: `Make every node of DOMAIN schedulable again, like kubectl uncordon, and remove
udrain's cordon mark (annotation udrain.dev/cordoned-by). Then, usually:
wait-healthy DOMAIN.`,
		Args: exactArgs(1, "one upgrade domain"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), out.validate()); err != nil {
				return err
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			policy, _ := df.policy()
			d, err := eviction.New(client, eviction.Options{DomainLabel: df.label, Unlabeled: policy, Namespace: o.explicitNamespace(), Clock: o.cfg.Clock})
			if err != nil {
				return err
			}
			done, err := d.Uncordon(o.quietContext(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			r := report.UncordonResult{TypeMeta: report.NewTypeMeta(report.KindUncordonResult), Domain: args[0], Uncordoned: done}
			return out.print(o.streams.Out, r)
		},
	}
	df.add(cmd)
	out.add(cmd)
	return cmd
}

func newWaitHealthyCommand(o *options) *cobra.Command {
	var df domainFlags
	var out outputFlag
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait-healthy [DOMAIN]",
		Short: "Wait until a domain's (or every domain's) groups are whole and Ready",
		Long: `Wait until the groups of DOMAIN (of every domain without one) are whole and
every member Running and Ready, and the status of the PodDisruptionBudgets
over their pods has caught up with the pods. Use it
between "drain", your upgrade and "uncordon" and the next domain.

The groups that count for a domain are those with a pod on its nodes
(package eviction's WaitHealthy decides); a group none of whose pods is on a
node yet does not count. What it still waits for is printed to stderr
whenever it changes. The exit code is 1 when --timeout passes first.`,
		Args: maxArgs(1, "at most one upgrade domain"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), out.validate()); err != nil {
				return err
			}
			if timeout < 0 {
				return usageErrorf("--timeout=%s: use 0 (no limit) or a positive duration", timeout)
			}
			domain := "" // maxArgs refuses an empty one
			if len(args) == 1 {
				domain = args[0]
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			prog := report.NewProgress(o.streams.ErrOut, report.ProgressOptions{Clock: o.cfg.Clock})
			// --timeout bounds the wait through ctx, below, and the wait
			// for an API server that cannot be reached.
			d, err := o.newReader(client, &df, eviction.Options{ConnectTimeout: connectTimeout(timeout), OnEvent: func(_ context.Context, e eviction.Event) {
				if e.Type == eviction.EventWaitingRecovery {
					prog.Note("WaitingHealthy", domain, e.Message)
				}
			}})
			if err != nil {
				return err
			}
			ctx := o.quietContext(cmd.Context())
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			start := o.cfg.Clock.Now()
			hr, err := d.WaitHealthy(ctx, args...) // DOMAIN, or none for every domain
			if hr == nil {
				return err // nothing to report: the layout or the watch failed
			}
			r := report.HealthReport{TypeMeta: report.NewTypeMeta(report.KindHealthReport), Domain: domain, Health: hr,
				WaitedSeconds: report.DurationSeconds(o.cfg.Clock.Since(start)), Error: errorInfo(err)}
			if perr := out.print(o.streams.Out, r); perr != nil {
				return perr
			}
			return err
		},
	}
	df.add(cmd)
	out.add(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait before giving up (exit code 1); zero means infinite")
	return cmd
}
