package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/metrics"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
	"github.com/udrain/udrain/upgrade"
)

func newRolloutCommand(o *options) *cobra.Command {
	var df domainFlags
	var dr drainFlags
	var out outputFlag
	var uf upgradeFlags
	var (
		id              string
		domains         []string
		recoveryTimeout time.Duration
		gpuGrace        time.Duration
		skipGPUCheck    bool
		lockNamespace   string
		steering        string
		order           string
		noLock          bool
		createLockNS    bool
		stuckAfter      time.Duration
		mf              metricsFlag
		parallel        parallelFlag
		inPlace         bool
		ignoreUpdates   bool
		updateTimeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Drain, upgrade, uncordon and recover every domain in turn, resumably",
		Long: `Upgrade every domain in turn (natural order, or --domains): drain it as
"drain" does, run the upgrade step, mark its nodes upgraded (annotation
udrain.dev/upgraded-by=ID), uncordon what udrain cordoned, and wait until the
domain's groups are whole and Ready again and their budgets have caught up,
before the next domain. The placement contract is audited first, over the
domains to upgrade.

The upgrade command runs once per domain through "sh -c", while the domain
is cordoned and empty, with UDRAIN_DOMAIN (the domain), UDRAIN_NODES (its
nodes, comma-separated), UDRAIN_ROLLOUT_ID and UDRAIN_DOMAIN_LABEL in its
environment and no stdin; its output goes to stderr, each line prefixed
"[upgrade DOMAIN] ". A non-zero exit stops the rollout with exit code 1,
leaving that domain cordoned. It needs sh in PATH: without one (as in
udrain's image) the rollout stops with exit code 2 before draining anything.

Upgrade steps that need no shell, instead of --upgrade-command (one step
per rollout; see docs/CLI.md):
  --upgrade-job-template FILE   one Job per node of the domain, from the
        batch/v1 Job in FILE, bound to the node by nodeName, with
        UDRAIN_NODE, UDRAIN_DOMAIN, UDRAIN_NODES and UDRAIN_ROLLOUT_ID set;
        all must succeed. Succeeded Jobs are deleted; a failed one is kept
        for its logs and made again when the rollout is run again.
  --upgrade-node-label KEY=VALUE with --upgrade-done-label KEY=VALUE,
        --upgrade-done-annotation KEY=VALUE or --upgrade-done-condition
        TYPE[=STATUS]: label the domain's nodes, wait until each shows the
        done signal (an agent's answer).
  --upgrade-webhook URL   POST {"rolloutID","domain","nodes"} and wait for
        a 2xx answer; retried on errors, 408, 429 and 5xx.
--upgrade-timeout bounds each domain's Job or label step (each webhook
attempt).

Resuming: a rollout is named by its ID. Without --id, the ID is "udrain-"
and the first 10 hex digits of the SHA-256 of the domain label and the
upgrade step, so running the same command again resumes (domains marked
upgraded by that ID are skipped, a half-drained domain is planned again from
what is left) and a new upgrade step (another command, template file, label
or URL) starts a new rollout. The ID is
printed at the start.

After the upgrade command, the domain's GPU nodes must advertise the GPUs
they had before the drain within --gpu-check-grace (a bad driver, or a taint
the device plugin does not tolerate, shows up here); otherwise the rollout
stops with exit code 1, the domain cordoned, naming the nodes, the GPUs lost
and the device plugin's diagnosis. Fix them and run the same command again.
--skip-gpu-check turns the check off.

While it runs, the rollout holds a Lease named after its ID in
--lock-namespace (udrain-system by default; it must exist): the same
rollout started a second time meanwhile fails at once, naming the holder.
A holder that died leaves a Lease that can be taken over once it expires
(30s after its last renewal).

Before it cordons a domain, the rollout waits while a LeaderWorkerSet with
a group on it rolls out its own update (its status says UpdateInProgress,
or its controller has not seen its latest spec): that update deletes groups
through no PodDisruptionBudget, and a drain meanwhile would take down more
groups than the budget allows. It says so (WorkloadUpdating) and goes on
when the update is done; --workload-update-timeout bounds the wait (exit
code 1, nothing of the domain touched), --ignore-workload-updates skips it.

--parallel runs several domains at once: N at most, or auto. A domain starts
only when every PodDisruptionBudget over its groups' leaders allows, by its
spec (minAvailable or maxUnavailable over the groups udrain sees), the groups
down now, those of the domains in flight and its own; and when each group it
evicts finds room in an upgraded domain, if it would once the domains in
flight are done. Otherwise it waits, uncordoned (a DomainHeld line says why),
and a later domain that may start passes it. --in-place drops the room
condition: a domain starts as soon as the budgets allow, and its groups that
find no upgraded room wait, Pending, for their own domain's upgrade (steering
Strict, which --in-place sets): more domains at once where spare room is
scarce, for longer downtime of those groups, still within the budgets. The first domain that stops on
an error stops the others in flight where they are (run the same command
again to resume). --dry-run and "udrain audit --parallel" show the schedule.

--timeout bounds each domain's drain (exit code 3 when a PDB blocks past it);
--recovery-timeout bounds each wait for recovery (exit code 1).`,
		Args: exactArgs(0, "no arguments (name domains with --domains)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), dr.validate(), out.validate(), uf.validate(lockNamespace)); err != nil {
				return err
			}
			idInput, stepName := uf.step()
			if id == "" {
				id = eviction.RolloutIDOf(df.label, idInput)
			}
			if cmd.Flags().Changed("domains") && len(domains) == 0 {
				return usageErrorf("--domains is empty: name the domains to upgrade (comma-separated), or leave the flag out for every domain")
			}
			ro := eviction.RolloutOptions{ID: id, Domains: domains, RecoveryTimeout: recoveryTimeout, StuckAfter: stuckAfter,
				SkipGPUCheck: skipGPUCheck, GPUCheckGrace: gpuGrace,
				NoLock: noLock, LockNamespace: lockNamespace, LockNamespaceMustExist: !createLockNS,
				Steering: eviction.Steering(steering), Order: eviction.RolloutOrder(order), Parallel: parallel.n, InPlace: inPlace,
				IgnoreWorkloadUpdates: ignoreUpdates, WorkloadUpdateTimeout: updateTimeout}
			if err := inPlaceSteering(cmd, &ro); err != nil {
				return err
			}
			var prog *report.Progress
			steps := uf.options(o, id, df.label, func(domain string) io.Writer { return prog.Output("[upgrade " + domain + "] ") })
			// Bad input is refused before any request.
			if err := ro.Validate(); err != nil {
				return inFlagTerms(err)
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			if ro.Upgrade, err = upgrade.New(client, steps); err != nil {
				return inFlagTerms(err) // before any request too
			}
			// The domains, to show progress; Rollout checks them again.
			r, err := o.newReader(client, &df, eviction.Options{ConnectTimeout: connectTimeout(dr.timeout)})
			if err != nil {
				return err
			}
			nodes, err := r.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			layout, err := topology.BuildLayout(nodes, df.layoutOptions())
			if err != nil {
				return err
			}
			names, err := layout.Select(domains)
			if err != nil {
				return err
			}

			onEvent := func(context.Context, eviction.Event) {}
			if mf.address != "" {
				ctx, cancel := context.WithCancel(cmd.Context())
				defer cancel()
				reg := mf.registry()
				rec, err := metrics.New(reg)
				if err != nil {
					return err
				}
				if err := mf.serve(ctx, o, reg); err != nil {
					return err
				}
				onEvent = rec.Record
			}
			prog = o.newProgress(o.streams.ErrOut)
			prog.SetTotal(len(names))
			d, err := o.newDrainer(client, &df, &dr, func(ctx context.Context, e eviction.Event) {
				prog.Event(ctx, e)
				onEvent(ctx, e)
			})
			if err != nil {
				prog.Close()
				return err
			}
			prog.Note("RolloutID", "", fmt.Sprintf("rollout %s over %s (%s); if it stops, run the same command again to resume (or pass --id %s)",
				id, plural(len(names), "domain", "domains"), strings.Join(names, ", "), id))
			res, err := d.Rollout(o.quietContext(cmd.Context()), ro)
			prog.Close()
			if res == nil {
				return err
			}
			doc := report.RolloutReport{TypeMeta: report.NewTypeMeta(report.KindRolloutResult), UpgradeCommand: uf.command, UpgradeStep: stepName, LabelKey: df.label,
				Result: res, Summary: report.SummarizeRollout(res), Error: errorInfo(err)}
			if perr := out.print(o.streams.Out, doc); perr != nil {
				return perr
			}
			return err
		},
	}
	df.add(cmd)
	dr.add(cmd, "The length of time to wait for each domain's drain before giving up, zero means infinite")
	out.add(cmd)
	uf.add(cmd)
	cmd.Flags().StringVar(&id, "id", "", "Rollout ID; the same ID resumes a rollout. Default: udrain- and a hash of --domain-label and the upgrade step (--upgrade-command, or the other --upgrade-* step and its settings)")
	cmd.Flags().StringSliceVar(&domains, "domains", nil, "Domains to upgrade, in this order unless --order says otherwise (comma-separated); default every domain")
	cmd.Flags().StringVar(&order, "order", "", "Order of the domains: SpareFirst (those that evict nothing first, then the others in natural order; the default without --domains) or Given (the order of --domains; the default with it)")
	cmd.Flags().StringVar(&steering, "steering", string(eviction.SteerAuto), "How evicted pods are kept off the domains not upgraded yet: Auto (taint them udrain.dev/upgrade-pending:NoSchedule while upgraded room takes every pod the domains in flight evict, PreferNoSchedule otherwise), PreferUpgraded (always PreferNoSchedule), Strict (always NoSchedule: a group with no upgraded room waits for its own domain) or Off")
	parallel.add(cmd, "How many domains to have in flight at once (drained, upgraded or recovering): 1, a larger number (a cap), or auto (as many as the budgets over the groups, counted from their spec, and the upgraded room allow); a domain a budget or the room holds back is not cordoned until it may start, and the next one may pass it")
	cmd.Flags().BoolVar(&inPlace, "in-place", false, "With --parallel: start a domain as soon as the budgets allow, even when upgraded room cannot take its groups now; those groups wait, Pending, for their own domain's upgrade (sets --steering Strict, which it needs)")
	cmd.Flags().DurationVar(&recoveryTimeout, "recovery-timeout", 0, "How long to wait for each domain's groups to be healthy again after its upgrade; zero means infinite")
	cmd.Flags().DurationVar(&gpuGrace, "gpu-check-grace", eviction.DefaultGPUGrace, "After each upgrade, how long the domain's GPU nodes may take to advertise their GPUs again before the rollout stops (a driver or device plugin problem)")
	cmd.Flags().BoolVar(&skipGPUCheck, "skip-gpu-check", false, "Do not check that upgraded GPU nodes advertise their GPUs again")
	cmd.Flags().StringVar(&lockNamespace, "lock-namespace", eviction.DefaultLockNamespace, "Namespace of the Lease the rollout holds while it runs (it must exist), so that the same rollout never runs twice at once")
	cmd.Flags().BoolVar(&noLock, "no-lock", false, "Run without the rollout's Lease")
	cmd.Flags().DurationVar(&stuckAfter, "stuck-after", eviction.DefaultStuckAfter, "Stop a domain's recovery once a member has waited this long for a reason that does not clear by itself (ImagePullBackOff, ErrImagePull, CreateContainerConfigError; ContainerCreating with a FailedMount or FailedAttachVolume event), instead of waiting out --recovery-timeout; negative: never")
	cmd.Flags().BoolVar(&ignoreUpdates, "ignore-workload-updates", false, "Start each domain without waiting for the LeaderWorkerSets with a group on it that roll out their own update (their rolling update deletes groups through no budget)")
	cmd.Flags().DurationVar(&updateTimeout, "workload-update-timeout", 0, "How long a domain waits for the LeaderWorkerSets on it to finish their own update before the rollout stops (exit code 1); zero means infinite")
	cmd.Flags().BoolVar(&createLockNS, "create-lock-namespace", true, "Create --lock-namespace when it does not exist (labelled app.kubernetes.io/managed-by=udrain, Pod Security restricted); false: stop and say so")
	mf.add(cmd)
	cmd.AddCommand(newRolloutStatusCommand(o))
	return cmd
}
