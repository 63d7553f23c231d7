package eviction

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// DefaultStuckAfter is how long a recovering member may wait for a reason
// that does not clear by itself before the rollout stops (see
// RolloutOptions.StuckAfter): a kubelet retries an image pull with a
// back-off of up to 5 minutes, and a registry that is down for two is down.
const DefaultStuckAfter = 2 * time.Minute

// DefaultRolloutID is the ID of a rollout whose options name none.
const DefaultRolloutID = "udrain"

// RolloutIDOf derives a rollout's ID from what defines its upgrade (for
// example the domain label and the upgrade command): "udrain-" and the
// first 10 hex digits of the SHA-256 of the parts joined by NUL bytes. The
// same parts give the same ID, so running the same upgrade again resumes
// it, and another upgrade starts a new rollout instead of skipping the
// domains the last one marked upgraded (which DefaultRolloutID, shared by
// every rollout without an ID, would do).
func RolloutIDOf(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "udrain-" + hex.EncodeToString(sum[:])[:10]
}

// UpgradeFunc upgrades the nodes of a drained domain (reboot, replace,
// kubelet upgrade). It runs while the domain is cordoned and empty. An
// error stops the rollout with a *DomainError (StageUpgrade) that unwraps
// to it; the domain stays cordoned, and the rollout run again with the
// same ID runs the step again.
type UpgradeFunc func(ctx context.Context, domain topology.Domain) error

// RolloutOptions configures a rollout.
type RolloutOptions struct {
	// ID names the rollout. It is recorded on the nodes of each upgraded
	// domain, and a rollout run again with the same ID (after a crash, a
	// cancel, a failure) continues where the first stopped. Use a new ID for
	// a new upgrade. Empty means DefaultRolloutID. It must be a valid label
	// value (at most 63 characters: letters, digits, '-', '_', '.').
	ID string
	// OnEvent, if set, receives this rollout's events (its drains', its
	// lock's, its recovery waits'), after Options.OnEvent. Its calls are
	// serialised per rollout, not per Drainer, and get the rollout's
	// context: a sink that writes a status to the API server holds back
	// only this rollout. It runs on the rollout's goroutines, so the
	// rollout waits for it.
	OnEvent func(context.Context, Event)
	// Domains limits the domains, in this order unless Order says
	// otherwise; empty means every domain, in OrderSpareFirst.
	Domains []string
	// Order orders the domains; empty means OrderSpareFirst without
	// Domains, OrderGiven with them.
	Order RolloutOrder
	// Upgrade is the upgrade step; nil means none (drain, uncordon,
	// recover: useful to exercise a rollout or to move workloads).
	Upgrade UpgradeFunc
	// RecoveryTimeout bounds the wait for a domain's groups to be healthy
	// again; zero means no limit.
	RecoveryTimeout time.Duration
	// StuckAfter stops a domain's recovery with a *ClusterError (ReasonStuck) once a
	// member of its groups has waited that long for a reason that does
	// not clear by itself (health.Stuck: ImagePullBackOff, ErrImagePull,
	// CreateContainerConfigError, …), or has stayed ContainerCreating
	// that long with a latest warning event saying its volume cannot be
	// attached or mounted or its sandbox cannot be made (FailedMount,
	// FailedAttachVolume, FailedMapVolume, FailedCreatePodSandBox; not a
	// Multi-Attach error, which clears by itself). Such a member's events
	// are listed once per StuckAfter (RBAC: list events, optional).
	// It stops instead of waiting out RecoveryTimeout. Zero means
	// DefaultStuckAfter; negative, never.
	StuckAfter time.Duration
	// SkipGPUCheck turns off the check that, after each upgrade step, the
	// domain's GPU nodes advertise their GPUs again (on by default: a
	// node that advertised GPUs before the drain and advertises fewer
	// once GPUCheckGrace has passed stops the rollout before the domain
	// is uncordoned, with a *ClusterError (ReasonGPUsLost)).
	SkipGPUCheck bool
	// GPUCheckGrace is how long the check waits for the GPUs to come
	// back; zero means DefaultGPUGrace.
	GPUCheckGrace time.Duration
	// IgnoreWorkloadUpdates starts each domain without reading its
	// workloads. By default (false), before it cordons a domain, the
	// rollout waits while a workload with a group on the domain rolls out
	// an update of its own: a LeaderWorkerSet whose status says
	// UpdateInProgress, or whose latest spec its controller has not looked
	// at yet (status.observedGeneration behind metadata.generation). Its
	// rolling update deletes groups through no budget; a domain drained
	// meanwhile would take down groups the budget counts as healthy while
	// the update takes down others: the rollout does not make that worse,
	// it waits, says so (EventWorkloadUpdating, RolloutDomain.Updating in
	// the rollout's status), and goes on once the updates are done
	// (EventWorkloadUpdated). An update that starts after the domain's
	// cordon is not waited for.
	//
	// The LeaderWorkerSets are read from Options.Informers'
	// LeaderWorkerSets when the Drainer has one (no request), else with
	// one GET each (LeaderWorkerSetResource, through the clientset's REST
	// client: udrain does not import LWS's Go module) per domain and per
	// WorkloadUpdateInterval while it waits. One whose GET is refused
	// (RBAC) is reported in an EventWorkloadUpdating's message and not
	// waited for; one that does not exist (pods that only carry LWS's
	// labels) is not either. RolloutStatus reads the same updates into
	// RolloutDomain.Updating unless IgnoreWorkloadUpdates is set.
	IgnoreWorkloadUpdates bool
	// WorkloadUpdateTimeout bounds one domain's wait for its workloads'
	// updates: once it has waited that long, the rollout stops with a
	// *RetryError (ReasonWorkloadUpdating, in a *DomainError of
	// StagePlan), nothing of the domain touched. Zero means no limit.
	WorkloadUpdateTimeout time.Duration
	// WorkloadUpdateInterval is how often the workloads are read again
	// while a domain waits for their updates; zero means
	// DefaultWorkloadUpdateInterval.
	WorkloadUpdateInterval time.Duration
	// NoLock runs the rollout without its lock. The lock is a
	// coordination.k8s.io Lease named after the rollout's ID, in
	// LockNamespace, renewed while the rollout runs, released when it
	// returns, and taken over only once it has expired: a second rollout
	// with the same ID (another process, a second replica of a
	// controller) fails at once with a *RetryError (ReasonLocked) naming the holder.
	// It is on by default; dry runs take none. Turn it off where
	// something else already serialises rollouts (a controller's own
	// leader election).
	NoLock bool
	// LockNamespace holds the Lease; empty means DefaultLockNamespace
	// (udrain-system), the same for every runner of a rollout, so that
	// they all take the same Lease.
	LockNamespace string
	// LockNamespaceMustExist makes a missing LockNamespace an error (a
	// *ClusterError, ReasonNoLockNamespace) instead of creating it. By default (false) the
	// rollout creates it (labelled app.kubernetes.io/managed-by=udrain,
	// Pod Security "restricted") when it does not exist, so that a first
	// rollout on a new cluster needs no preparation; that needs the right
	// to create namespaces, and without it the rollout stops before any
	// change with a *PermissionError that says what to grant (or create
	// the namespace beforehand: deploy/namespace).
	LockNamespaceMustExist bool
	// LockIdentity names this holder in the Lease; empty means the host
	// name, the process ID and a random suffix.
	LockIdentity string
	// LockDuration is how long the Lease holds without a renewal; zero
	// means DefaultLockDuration. It is renewed every third of it.
	LockDuration time.Duration
	// Steering says how evicted pods are kept off the domains not
	// upgraded yet; empty means SteerAuto.
	Steering Steering
	// Parallel is how many domains the rollout has in flight at once
	// (draining, upgrading or recovering). 0 or 1: one at a time, in
	// order. N > 1: up to N. ParallelAuto: as many as the budgets and
	// the upgraded room allow. With more than one, a domain starts, in
	// order (one held back is passed by the next), only when:
	//   - for every PodDisruptionBudget over its phase-1 pods (its
	//     groups' leaders), the groups down now, those of the domains in
	//     flight and its own stay within what the budget's spec allows
	//     (minAvailable or maxUnavailable over the groups udrain sees;
	//     not the status's disruptionsAllowed, which a maxUnavailable
	//     budget over leaders with a controller each counts wrong: see
	//     topology.FindingBudgetCountsControllers): plan, then cordon,
	//     so that no domain waits cordoned on a budget the others spend;
	//   - no group it evicts lacks room in an upgraded domain that it
	//     would find once the domains in flight are done (it would land
	//     on a domain not upgraded yet, or wait through its own domain's
	//     upgrade step, where a serial rollout moves it once, quickly).
	// With nothing in flight the next domain starts whatever holds it
	// (as one domain at a time does: it waits on its budgets' 429s).
	// A number above what the budgets and room allow is a cap, not a
	// promise: PlanRollout and the rollout's findings say so
	// (topology.FindingParallelLimited). Negative numbers but ParallelAuto are a
	// *udrain.ConfigError.
	Parallel int
	// InPlace, with Parallel other than 1, drops the second condition
	// above: a domain starts as soon as the budgets allow, and its groups
	// that find no room in an upgraded domain wait, Pending, for the
	// upgrade of their own domain (or for room upgraded before it). It
	// trades those groups' downtime (their domain's whole drain and
	// upgrade step, within the budgets) for fleet time: with little
	// spare room (one spare domain for many), room holds a rollout to
	// about one domain at a time, and InPlace runs as many as the
	// budgets allow. It needs SteerStrict, so that no group that waits
	// lands on a domain not upgraded yet (to be disrupted again), and
	// sets it when Steering is empty; other steering, or InPlace with one
	// domain at a time, is a *udrain.ConfigError.
	InPlace bool
	// StatusInterval is how often WatchRolloutStatus looks again; zero
	// means DefaultWatchInterval. Only WatchRolloutStatus reads it.
	StatusInterval time.Duration

	// lock is the lock the options ask for, settled by withDefaults.
	lock rolloutLock
}

// serial reports whether the rollout takes one domain at a time.
func (o RolloutOptions) serial() bool { return o.Parallel == 1 }

// limit is the most domains in flight (0: no limit).
func (o RolloutOptions) limit() int { return max(o.Parallel, 0) }

// RolloutOrder says in which order a rollout takes its domains.
type RolloutOrder string

// The orders of a rollout.
const (
	// OrderSpareFirst takes the domains an earlier run of the rollout
	// upgraded first (in the order it upgraded them), then those whose
	// plan evicts nothing (spare or empty domains, so that the first
	// evicted groups find upgraded room instead of a domain still to
	// drain), then the others, each in the order of
	// RolloutOptions.Domains (natural order without them).
	OrderSpareFirst RolloutOrder = "SpareFirst"
	// OrderGiven takes them in the order of RolloutOptions.Domains.
	OrderGiven RolloutOrder = "Given"
)

// RolloutResult is what a rollout did: every domain it was asked for, in
// the order it took them, as it left each.
type RolloutResult struct {
	ID string `json:"id"`
	// DryRun is "client" or "server" for dry runs, empty otherwise.
	DryRun string `json:"dryRun,omitempty"`
	// Domains are the rollout's domains in the order it takes them, each
	// with its State, its plan, drain, health, downtimes and durations,
	// and, with Parallel other than 1, when the plan's simulation
	// started it (After, With, HeldBy).
	Domains []RolloutDomain `json:"domains"`
	// Findings are the contract warnings (and allowed errors) found before
	// the rollout started.
	Findings []topology.Finding `json:"findings,omitempty"`
	// Destinations say, per group each domain's drain evicts, where it
	// can go once evicted (see GroupDestination), as a simulation of the
	// rollout found it before anything was touched; the groups disrupted
	// again or without room are in Findings too.
	Destinations []GroupDestination `json:"destinations,omitempty"`
	// Parallel and MaxInFlight are those of the rollout's plan (see
	// RolloutPlan), from the same simulation as the Domains' After, With
	// and HeldBy.
	Parallel    int `json:"parallel"`
	MaxInFlight int `json:"maxInFlight"`
	// InPlace is RolloutOptions.InPlace.
	InPlace bool `json:"inPlace,omitempty"`
	// Status is the rollout's status when it returned (as
	// Drainer.RolloutStatus reads it, Running false), for a controller to
	// copy into its resource's status; nil for dry runs, and for a
	// rollout that stopped before it started its first domain.
	Status *RolloutStatus `json:"status,omitempty"`
	// Completed is true when every domain is done, skipped or dry-run.
	Completed bool           `json:"completed"`
	Started   time.Time      `json:"started"`
	Duration  udrain.Seconds `json:"durationSeconds"`
}

// tally counts the domains done (or dry-run) and skipped, and the
// distinct groups disrupted: the RolloutDone event's message (the whole
// account is report.SummarizeRollout's).
func (r *RolloutResult) tally() (done, skipped, groups int) {
	seen := map[topology.GroupID]bool{}
	for _, d := range r.Domains {
		switch d.State {
		case StateSkipped:
			skipped++
		case StateDone, StateDryRun:
			done++
		}
		if d.Drain != nil {
			for _, g := range d.Drain.GroupsDisrupted {
				seen[g] = true
			}
		}
	}
	return done, skipped, len(seen)
}

// Rollout drains, upgrades and recovers every domain in turn: plan, execute,
// upgrade step, mark upgraded (one node, then every node with its uncordon
// patch: two patches per node), uncordon, wait until the domain's groups are
// healthy and their budgets caught up, then the next domain. While it runs,
// the nodes of the domains it has not upgraded yet carry the
// udrain.PendingUpgradeTaint (see Steering), so that evicted pods land on upgraded
// nodes and are not moved again; without an explicit order, the domains
// that evict nothing (spare, empty) come first, so that the first groups
// evicted find upgraded room. It stops at the first error, a *DomainError
// naming the domain and the stage, and takes its taint off the nodes it is
// still on. Run again with the same ID, it continues from the cluster's
// state: domains marked upgraded are skipped, a half-drained domain is
// planned again from what is left on it, and only pods its new plan names
// are evicted. The recovery of the domain a stopped run was in also waits
// for the groups that run left Pending or incomplete (of workloads placed
// in the domains, with no member in another domain): the cluster does not
// say which domain a Pending pod came from, so a group that is down
// elsewhere for another reason is waited for too, unless every pod of its
// namespace is gone (its workload was deleted). With a dry-run strategy it
// plans and dry-runs each domain and changes nothing. A Drainer from
// NewReader returns a *udrain.ConfigError instead, before any request
// (PlanRollout is its preview).
func (d *Drainer) Rollout(ctx context.Context, opts RolloutOptions) (*RolloutResult, error) {
	if err := d.writable("Rollout"); err != nil {
		return nil, err
	}
	opts, err := opts.settle(d.s)
	if err != nil {
		return nil, err
	}
	ctx = withCallSink(ctx, opts.OnEvent)
	r := &rollout{d: d, opts: opts, id: opts.ID, sink: callSinkFrom(ctx),
		res:    &RolloutResult{ID: opts.ID, DryRun: d.s.dryRunName(), Started: d.s.Clock.Now()},
		logger: klog.FromContext(ctx).WithValues("rollout", opts.ID)}
	err = r.run(ctx)
	r.res.Duration = udrain.Seconds(d.s.Clock.Since(r.res.Started))
	return r.res, err
}

// RolloutPlan is what a rollout would do, as its first look at the
// cluster finds it: its domains in order, the contract's findings, and
// where each group it evicts can go. Nothing is touched to make it.
type RolloutPlan struct {
	ID string `json:"id"`
	// Order is how the rollout is ordered (RolloutOptions.Order, settled).
	Order RolloutOrder `json:"order"`
	// Steering is how it keeps evicted pods off pending domains.
	Steering Steering `json:"steering"`
	// Domains are the rollout's domains, in the order it takes them:
	// State Skipped for those a run with the same ID upgraded already
	// (the rollout skips their drain), Pending for the others; with
	// Parallel other than 1, each Pending one says when the rollout
	// starts it (After, With) and what holds it back until then (HeldBy).
	// Each has the health of its groups (Health) and, if Pending, its
	// drain's plan (Plan: its nodes, its pods by phase, its blockers).
	Domains []RolloutDomain `json:"domains"`
	// Findings are the contract's findings over Domains, then those of
	// the destinations (topology.FindingDisruptedAgain, topology.FindingNoRoom).
	Findings []topology.Finding `json:"findings,omitempty"`
	// Destinations say where each group each domain's drain evicts can
	// go once evicted (see GroupDestination).
	Destinations []GroupDestination `json:"destinations,omitempty"`
	// Parallel is RolloutOptions.Parallel, settled (1: one domain at a
	// time; ParallelAuto: as many as allowed).
	Parallel int `json:"parallel"`
	// MaxInFlight is the most domains in flight at once in the plan's
	// simulation (domains in flight taken to end in the order they
	// started).
	MaxInFlight int `json:"maxInFlight"`
	// InPlace is RolloutOptions.InPlace: lack of upgraded room held no
	// domain back in the simulation.
	InPlace bool `json:"inPlace,omitempty"`
}

// PlanRollout looks at the cluster as Rollout(ctx, opts) would before it
// touches anything, and says what the rollout would do: the order of its
// domains, each with its drain's plan and the health of its groups, the
// contract's findings, and where each evicted group can go, without a
// lock, a taint, a cordon or an eviction: list, plan and roll from one
// read. A plan with findings
// of severity Error (a violated contract, or with SteerStrict a group
// that finds no room anywhere) comes with a *topology.ContractError
// holding them, unless Options.AllowViolations is set, the same error
// Rollout would stop on; other errors (bad options, a domain that does
// not exist, one held by another rollout) come without a plan. Its
// events (ContractFindings) go to Options.OnEvent and opts.OnEvent, as a
// rollout's do.
func (d *Drainer) PlanRollout(ctx context.Context, opts RolloutOptions) (*RolloutPlan, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx = withCallSink(ctx, opts.OnEvent)
	r := &rollout{d: d, opts: opts, id: opts.ID, planning: true, sink: callSinkFrom(ctx),
		res:    &RolloutResult{ID: opts.ID, Started: d.s.Clock.Now()},
		logger: klog.FromContext(ctx).WithValues("rollout", opts.ID)}
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	r.v = v
	err = r.check(ctx)
	if err != nil && !errors.As(err, new(*topology.ContractError)) {
		return nil, err
	}
	p := &RolloutPlan{ID: opts.ID, Order: opts.Order, Steering: opts.Steering, Domains: r.res.Domains,
		Findings: r.res.Findings, Destinations: r.res.Destinations, Parallel: opts.Parallel, MaxInFlight: r.res.MaxInFlight, InPlace: opts.InPlace}
	for i := range p.Domains {
		if upgradedBy(r.nodes, mustDomain(r.layout, p.Domains[i].Domain), r.id) {
			p.Domains[i].State = StateSkipped
		}
	}
	return p, err
}

// settle checks the options against the Drainer's settings and fills in
// their defaults; the lock is settled only where it is taken (not for dry
// runs).
func (o RolloutOptions) settle(s *settings) (RolloutOptions, error) {
	o, err := o.withDefaults()
	if err != nil {
		return o, err
	}
	if o.Upgrade != nil && s.Namespace != "" {
		return o, configError("Options.Namespace", "%q set for a rollout with an upgrade step: the step needs the whole domain drained; drop the namespace scope, or the upgrade step", s.Namespace)
	}
	if s.dryRun != cmdutil.DryRunNone {
		o.lock = rolloutLock{Disabled: true}
	}
	return o, nil
}

// withDefaults checks what needs no cluster and fills in the defaults.
func (o RolloutOptions) withDefaults() (RolloutOptions, error) {
	if o.ID == "" {
		o.ID = DefaultRolloutID
	}
	if errs := validation.IsValidLabelValue(o.ID); len(errs) > 0 {
		return o, configError("RolloutOptions.ID", "%q cannot name a rollout (it is written into node annotations, taints and a Lease's name): %s", o.ID, strings.Join(errs, "; "))
	}
	switch {
	case o.Parallel == 0:
		o.Parallel = 1
	case o.Parallel < ParallelAuto:
		return o, configError("RolloutOptions.Parallel", "%d is negative; use the most domains to have in flight at once (1: one at a time), or ParallelAuto (%d) for as many as the budgets and the upgraded room allow", o.Parallel, ParallelAuto)
	}
	if o.StatusInterval < 0 {
		return o, configError("RolloutOptions.StatusInterval", "%s; use a positive interval, or zero for %s", o.StatusInterval, DefaultWatchInterval)
	}
	if o.RecoveryTimeout < 0 {
		return o, configError("RolloutOptions.RecoveryTimeout", "%v is negative; use 0 for no limit", o.RecoveryTimeout)
	}
	if o.StuckAfter == 0 {
		o.StuckAfter = DefaultStuckAfter
	}
	if o.GPUCheckGrace < 0 {
		return o, configError("RolloutOptions.GPUCheckGrace", "%v is negative; use 0 for the default (%v)", o.GPUCheckGrace, DefaultGPUGrace)
	}
	switch {
	case o.WorkloadUpdateTimeout < 0:
		return o, configError("RolloutOptions.WorkloadUpdateTimeout", "%v is negative; use 0 for no limit", o.WorkloadUpdateTimeout)
	case o.WorkloadUpdateInterval < 0:
		return o, configError("RolloutOptions.WorkloadUpdateInterval", "%v is negative; use 0 for the default (%v)", o.WorkloadUpdateInterval, DefaultWorkloadUpdateInterval)
	case o.WorkloadUpdateInterval == 0:
		o.WorkloadUpdateInterval = DefaultWorkloadUpdateInterval
	}
	seen := map[string]bool{}
	for _, name := range o.Domains {
		if name == "" {
			return o, configError("RolloutOptions.Domains", "holds an empty name; name each domain by the value of the domain label of its nodes")
		}
		if seen[name] {
			return o, configError("RolloutOptions.Domains", "%q is named twice", name)
		}
		seen[name] = true
	}
	switch o.Order {
	case "":
		o.Order = OrderGiven
		if len(o.Domains) == 0 {
			o.Order = OrderSpareFirst
		}
	case OrderGiven, OrderSpareFirst:
	default:
		return o, configError("RolloutOptions.Order", "%q is not an order; use %s or %s", o.Order, OrderSpareFirst, OrderGiven)
	}
	if o.InPlace && o.Steering == "" {
		o.Steering = SteerStrict
	}
	var err error
	if o.Steering, err = o.Steering.settle(); err != nil {
		return o, err
	}
	if o.InPlace {
		switch {
		case o.Parallel == 1:
			return o, configError("RolloutOptions.InPlace", "takes domains at once: set Parallel to a number above 1 or to ParallelAuto (one domain at a time never holds a domain back for room; with SteerStrict its groups without upgraded room wait for their own domain already)")
		case o.Steering != SteerStrict:
			return o, configError("RolloutOptions.InPlace", "needs Steering %s (what it sets when Steering is empty): with %s a group that finds no upgraded room may land on a domain not upgraded yet and be disrupted again", SteerStrict, o.Steering)
		}
	}
	o.lock = rolloutLock{Disabled: o.NoLock, Namespace: o.LockNamespace, CreateNamespace: !o.LockNamespaceMustExist,
		Identity: o.LockIdentity, Duration: o.LockDuration}
	if !o.lock.Disabled {
		if o.lock, err = o.lock.settle(); err != nil {
			return o, err
		}
	}
	return o, nil
}
