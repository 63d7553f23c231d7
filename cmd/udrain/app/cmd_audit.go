package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func newAuditCommand(o *options) *cobra.Command {
	var df domainFlags
	var out outputFlag
	var steering string
	var parallel parallelFlag
	var inPlace bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the placement contract over all domains (exit code 4 on a violation)",
		Long: `Check the placement contract that a safe drain relies on, over all domains:

  Pack                each group's pods sit in one upgrade domain
  Spread              groups of one workload sit in different domains
  UnprotectedLeader   every leader is selected by a PodDisruptionBudget
  MultiplePDBs        no pod is selected by two PDBs (the Eviction API refuses it)
  ProtectedWorker     no PDB selects a worker (a warning)
  ControlPlaneQuorum  no domain holds enough control-plane nodes to lose etcd quorum
  ToleratesEverything no group member tolerates every taint (operator: Exists with
                      no key: it ignores a cordon and udrain's upgrade-pending
                      taint; a warning)

It then simulates "udrain rollout" over all domains (spare domains first, the
--steering given) and says where each evicted group can go: back to its own
domain after the upgrade, to an upgraded domain with room, or only to a
domain not upgraded yet, and adds:

  DisruptedAgain      a group can only go to a domain not upgraded yet, where
                      the rollout disrupts it again (a warning)
  NoRoom              a group finds no room, not even in its own domain after
                      the upgrade (an error with --steering Strict, where the
                      rollout would refuse to start; a warning otherwise)
  BudgetCountsControllers
                      a maxUnavailable (or percentage) budget selects pods of
                      several controllers, such as leaders with a StatefulSet
                      each: the disruption controller counts it wrong while a
                      group is gone (a warning)
  ParallelLimited     with --parallel N, the budgets and the upgraded room let
                      fewer domains run at once (a warning)

Each finding says what to fix. The exit code is 4 when a finding of severity
Error is found (or nodes lack the domain label), 0 otherwise.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ro := eviction.RolloutOptions{Steering: eviction.Steering(steering), Parallel: parallel.n, InPlace: inPlace}
			if err := firstError(df.validate(), out.validate(), inPlaceSteering(cmd, &ro), inFlagTerms(ro.Validate())); err != nil {
				return err
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			rd, err := o.newReader(client, &df, eviction.Options{})
			if err != nil {
				return err
			}
			ctx := o.quietContext(cmd.Context())
			audit, err := rd.Audit(ctx)
			if err != nil {
				return err
			}
			// A rollout that cannot be planned (a domain held by a rollout
			// in progress, say) is the report's rolloutProblem.
			plan, planErr := rd.PlanRollout(ctx, ro)
			doc := report.NewAuditReport(audit, plan, planErr)
			if err := out.print(o.streams.Out, doc); err != nil {
				return err
			}
			if err := (topology.Report{Findings: doc.Findings}).Err(); err != nil {
				return &reportedError{err: err, summary: fmt.Sprintf("placement contract violated: %s, %s",
					plural(doc.Errors, "error", "errors"), plural(doc.Warnings, "warning", "warnings"))}
			}
			return nil
		},
	}
	df.add(cmd)
	out.add(cmd)
	cmd.Flags().StringVar(&steering, "steering", string(eviction.SteerAuto), "The steering of the rollout simulated: Auto, PreferUpgraded, Strict or Off (as udrain rollout --steering)")
	parallel.add(cmd, "The domains at once of the rollout simulated: 1, a larger number or auto (as udrain rollout --parallel); with more than one, the audit shows when each domain would start and what holds it back")
	cmd.Flags().BoolVar(&inPlace, "in-place", false, "The rollout simulated starts a domain as soon as the budgets allow, its groups without upgraded room waiting for their own domain (as udrain rollout --in-place)")
	return cmd
}
