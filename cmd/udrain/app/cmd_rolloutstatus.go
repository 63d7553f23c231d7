package app

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

func newRolloutStatusCommand(o *options) *cobra.Command {
	var df domainFlags
	var out outputFlag
	var (
		domains       []string
		order         string
		lockNamespace string
		noLock        bool
		watch         bool
		interval      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "Show where a rollout stands, read from the cluster",
		Long: `Show where rollout ID stands, from what it writes to the cluster: per domain
Pending, Draining, Upgrading, Recovering, Done or Stopped (with the stage,
since when, the pods its plan still names, the budgets blocking it and the
groups down), who holds the rollout's Lease and when it was last renewed,
and an ETA learned from the domains already upgraded. It changes nothing
and works from any machine, while the rollout runs elsewhere (an in-cluster
Job) or after it stopped.

Without ID, the rollout whose marks the nodes carry (annotation
udrain.dev/upgraded-by, taint udrain.dev/upgrade-pending) is shown, if
there is exactly one. Give --domains, --order, --lock-namespace and
--no-lock as the rollout got them, so that the domains are listed in its
order and its Lease is found.

A domain is Stopped when it is in progress but no holder keeps the Lease:
the rollout failed, was cancelled or crashed there; run the same rollout
command again to resume it.

--watch prints the status again whenever it changes, until every domain is
Done or the command is interrupted (exit code 0); it reads the cluster
through one watch of nodes, pods and budgets, and reads the Lease every
--interval.`,
		Args: maxArgs(1, "at most one argument, the rollout ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), out.validate()); err != nil {
				return err
			}
			so := eviction.RolloutOptions{Domains: domains, Order: eviction.RolloutOrder(order), LockNamespace: lockNamespace, NoLock: noLock, StatusInterval: interval}
			if len(args) == 1 {
				so.ID = args[0]
			}
			if err := so.Validate(); err != nil {
				return inStatusFlagTerms(err)
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			ctx := o.quietContext(cmd.Context())
			var shared *clusterinformers.Set
			if watch {
				// One watch for the whole --watch, not a list per print.
				wctx, cancel := context.WithCancel(ctx)
				factory := informers.NewSharedInformerFactory(client, 0)
				shared = clusterinformers.FromFactory(factory)
				factory.Start(wctx.Done())
				defer factory.Shutdown()
				defer cancel()
			}
			d, err := o.newReader(client, &df, eviction.Options{Informers: shared})
			if err != nil {
				return err
			}
			if so.ID == "" {
				nodes, err := d.Nodes(ctx)
				if err != nil {
					return err
				}
				if so.ID, err = theRolloutOf(nodes); err != nil {
					return err
				}
			}
			print := func(st *eviction.RolloutStatus) error {
				doc := report.RolloutStatusReport{TypeMeta: report.NewTypeMeta(report.KindRolloutStatus), LabelKey: df.label, NoLock: noLock, Status: st}
				return out.print(o.streams.Out, doc)
			}
			if !watch {
				st, err := d.RolloutStatus(ctx, so)
				if err != nil {
					return err
				}
				return print(st)
			}
			err = d.WatchRolloutStatus(ctx, so, print)
			if cmd.Context().Err() != nil {
				return nil // interrupted: the way a watch ends
			}
			return err
		},
	}
	df.add(cmd)
	out.add(cmd)
	cmd.Flags().StringSliceVar(&domains, "domains", nil, "The rollout's --domains (comma-separated); default every domain")
	cmd.Flags().StringVar(&order, "order", "", "The rollout's --order: SpareFirst (the default without --domains) or Given (the default with it)")
	cmd.Flags().StringVar(&lockNamespace, "lock-namespace", eviction.DefaultLockNamespace, "Namespace of the rollout's Lease")
	cmd.Flags().BoolVar(&noLock, "no-lock", false, "The rollout runs without a Lease: do not read it (whether the rollout runs is then unknown, and no domain is shown Stopped)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "Print the status again whenever it changes, until every domain is Done or the command is interrupted")
	cmd.Flags().DurationVar(&interval, "interval", eviction.DefaultWatchInterval, "With --watch, how often to look again (0 means the default)")
	return cmd
}

// theRolloutOf returns the one rollout whose marks the nodes carry, or a
// usage error naming those found.
func theRolloutOf(nodes []corev1.Node) (string, error) {
	switch ids := eviction.RolloutIDs(nodes); len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", usageErrorf("no node carries a rollout's marks (annotation %s, taint %s): name the rollout, udrain rollout status ID", udrain.UpgradedByAnnotation, udrain.PendingUpgradeTaint)
	default:
		return "", usageErrorf("the nodes carry the marks of %d rollouts (%s): name one, udrain rollout status ID", len(ids), strings.Join(ids, ", "))
	}
}
