package app

import (
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/metrics"
	"github.com/udrain/udrain/readiness/gate"
)

func newReadinessGateCommand(o *options) *cobra.Command {
	var (
		opts           gate.Options
		leaseNamespace string
		le             gate.LeaderElection
		mf             metricsFlag
		hf             healthFlag
	)
	cmd := &cobra.Command{
		Use:   "readiness-gate-controller",
		Short: "Run the controller that sets udrain.dev/group-ready on group leaders",
		Long: `Run the readiness-gate controller: it sets the pod condition
udrain.dev/group-ready on each group's leader from the status of the group's
member pods (True when the group is whole and every member Running and
Ready). A leader that lists the condition in spec.readinessGates is then
Ready only while its group is, so a PodDisruptionBudget over the leaders
counts healthy groups, without changing the workload's containers. Leaders
that do not declare the gate are never written to.

It watches every namespace, or the one of --namespace (-n). Run one
replica, or several with --lease-namespace (they elect one writer through a
Lease). Every condition it writes is logged to stderr. SIGTERM stops it
cleanly (exit code 0), releasing the Lease. RBAC: readiness/gate/rbac.yaml.

With --health-address, it serves /healthz for a livenessProbe (fails when
the leader's work stops moving for --max-sync-age: restarting hands the
Lease over) and /readyz for a readinessProbe (a standby once its pod cache
has filled; the leader also while its writes do not keep failing for
--max-sync-age), each with the role and the age of the last successful
sync.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Namespace = o.explicitNamespace()
			opts.Clock = o.cfg.Clock
			if leaseNamespace != "" {
				le.Namespace = leaseNamespace
				opts.LeaderElection = &le
			} else if cmd.Flags().Changed("lease-name") || cmd.Flags().Changed("id") {
				return usageErrorf("--lease-name and --id go with --lease-namespace")
			}
			reg := mf.registry()
			writes, err := metrics.NewGateWrites(reg)
			if err != nil {
				return err
			}
			logger := klog.FromContext(cmd.Context())
			opts.OnChange = func(c gate.Change) {
				writes.Record(string(c.Condition.Status))
				logger.Info("Condition written", "change", c.String())
			}
			if opts.LeaderElection != nil {
				opts.LeaderElection.OnNewLeader = func(id string) { logger.Info("Leader", "identity", id) }
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			c, err := gate.New(client, opts)
			if err != nil {
				return inFlagTerms(err)
			}
			if err := mf.serve(cmd.Context(), o, reg); err != nil {
				return err
			}
			if err := hf.serve(cmd.Context(), o, c.HealthHandler()); err != nil {
				return err
			}
			logger.Info("Readiness-gate controller running", "namespace", opts.Namespace, "selector", opts.Selector, "leaderElection", opts.LeaderElection != nil)
			return c.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&opts.Selector, "selector", "l", "", "Watch only pods with these labels (as kubectl -l); it must select every member of a group, not only leaders")
	mf.add(cmd)
	hf.add(cmd)
	fs.DurationVar(&opts.MaxSyncAge, "max-sync-age", gate.DefaultMaxSyncAge, "With --health-address: how long the leader may leave a health check's sync probe waiting in its queue, or run one reconcile (then /healthz fails), or keep failing to write (then /readyz fails)")
	fs.IntVar(&opts.Workers, "workers", gate.DefaultWorkers, "Groups reconciled concurrently")
	fs.DurationVar(&opts.ResyncPeriod, "resync-period", 0, "Reconcile every group this often even without pod events; zero reacts to events only")
	fs.DurationVar(&opts.FalseRewriteInterval, "false-rewrite-interval", gate.DefaultFalseRewriteInterval, "Least time between two writes of a leader's condition that stays False with a new message (a recovering group's members starting); turning True or False is written at once; negative writes every change at once")
	fs.DurationVar(&opts.HistoryCheck, "history-check", gate.DefaultHistoryCheck, "How often to compare the API server's resourceVersion with the pod cache's, and exit 1 when the server's is older (etcd restored from a snapshot: the cache would miss changes); negative never checks")
	fs.StringVar(&leaseNamespace, "lease-namespace", "", "Elect one writing replica through a Lease in this namespace; required to run more than one replica")
	fs.StringVar(&le.Name, "lease-name", gate.DefaultLeaseName, "Name of the Lease (with --lease-namespace)")
	fs.StringVar(&le.Identity, "id", "", "Identity of this replica in the election; default the hostname and a random suffix")
	fs.DurationVar(&le.LeaseDuration, "lease-duration", gate.DefaultLeaseDuration, "How long a Lease holds without renewal")
	fs.DurationVar(&le.RenewDeadline, "renew-deadline", gate.DefaultRenewDeadline, "How long the leader keeps trying to renew before it stops writing")
	fs.DurationVar(&le.RetryPeriod, "retry-period", gate.DefaultRetryPeriod, "How often replicas try to take or renew the Lease")
	return cmd
}
