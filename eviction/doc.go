// Package eviction drains upgrade domains in an order that a
// PodDisruptionBudget over each group's leader can protect, and rolls an
// upgrade over all domains, resumably. It is built to be embedded: a
// platform controller builds one Drainer and calls it as often as it likes,
// over the informers it already runs.
//
// It has two entry points:
//
//   - New(client, Options) returns a Drainer: it plans, drains, uncordons,
//     rolls out, and reads (Snapshot, Health, WaitHealthy, WaitRecovered,
//     PlanRollout, RolloutStatus, WatchRolloutStatus; Audit, the placement
//     contract over every domain; Nodes, DaemonSets and
//     DevicePlugins alone, for a report of nodes or GPUs that needs no
//     pods) under its drain settings.
//   - NewReader(client, Options) returns a read-only Drainer, for callers
//     that change nothing (a status page, a report, a script waiting for
//     health): its read methods are the Drainer's, from options that hold
//     only what reading needs (domain label, namespace, informers, connect
//     timeout, clock, events), and every pod counts in the plans it reads
//     (as with kubectl's Force, IgnoreAllDaemonSets and
//     DeleteEmptyDirData); its write methods (Drain, Execute, Uncordon,
//     Rollout) return a *udrain.ConfigError before any request, so it
//     sends no write request.
//
// # The drain of one domain
//
//  1. Cordon every node of the domain (marked with udrain.CordonedByAnnotation and
//     the drain's ID).
//  2. Sort the domain's pods with kubectl drain's own filters (DaemonSet,
//     mirror, emptyDir, unreplicated and finished pods: same decisions, same
//     texts) into phase 1, the pods some PDB selects (the leaders), and
//     phase 2, the rest.
//  3. Phase 1: evict every protected pod through the Eviction API, each with
//     a UID precondition. A 429 means the budget is spent: the pod waits
//     until the budget's status allows a disruption (seen on a watch) or a
//     backoff passes, and Blocked events name the PDB with its counts. No
//     phase-2 pod is touched while any phase-1 pod is still un-evicted.
//  4. Phase 2: evict the other pods, concurrently.
//  5. Wait, on a watch, until every evicted pod (that UID) is gone.
//
// A rollout repeats that per domain, runs the caller's upgrade step, marks
// the nodes upgraded, uncordons, and waits until the domain's groups are
// healthy and their budgets' status has caught up (package health decides
// both), before the next domain. Before it cordons a domain, it waits while
// a LeaderWorkerSet with a group on it rolls out its own update, whose
// deletions no budget stops (RolloutOptions.IgnoreWorkloadUpdates,
// WorkloadUpdateTimeout and WorkloadUpdateInterval; LWS is read without its
// Go module: workloadupdate.go, lws.go). Run again with the same ID after a
// crash or cancel, it continues from the cluster's state and never evicts a
// pod its plan did not name.
//
// # Embedding
//
//   - Reading the cluster: with Options.Informers (clusterinformers.FromFactory for
//     a client-go SharedInformerFactory, clusterinformers.FromCache for a
//     controller-runtime cache), every call reads through the caller's
//     informers and starts no list or watch of its own. Without them, each
//     call lists and watches for its own duration (a CLI's case).
//     Options.Namespace limits what is seen and evicted to one namespace.
//   - Results are structured values: a Plan, a Result, a RolloutResult, and
//     package health's Report and DomainStatus (the health of domains, from
//     Health, WaitHealthy and WaitRecovered). They are also the wire schema
//     of udrain's JSON output (see result.go).
//   - Events, through one hook signature, func(context.Context, Event),
//     given the call's context (Options.OnEvent, serialised per Drainer;
//     DrainOptions.OnEvent and RolloutOptions.OnEvent, serialised per
//     call, for sinks that write to the API server; Event.String is the
//     event's progress line, and report.NewProgress(os.Stderr, ...).Event
//     is a ready-made hook that shows a drain or rollout as udrain's
//     command line does) carry the drain's
//     or rollout's ID, a sequence number, a dry-run mark, the pod
//     (namespace, name, UID, node) and its phase, the blocking budget, and
//     what recovery waits for.
//   - Errors are grouped by what the caller does next (see Errors below).
//   - Logging goes through the context's logger (klog.FromContext): at V(0)
//     the decisions an operator needs (a domain started, blocked by a PDB,
//     recovered, stopped and why), at V(2) each retry and eviction, at V(4)
//     cache and request details. The package never prints.
//
// Plans are pure: NewPlan computes one from a Snapshot without API calls,
// so it can be printed, tested and reviewed before anything changes. Bad
// input (an unknown or empty domain, invalid options, nodes without the
// domain label, pods kubectl would refuse, contract violations) is reported
// before anything is cordoned or evicted.
//
// Options accepts an existing *drain.Helper from k8s.io/kubectl/pkg/drain,
// so a tool built on kubectl's drain can switch without changing flags;
// where kubectl drain's behaviour does not break the promises above, it is
// kubectl's (its own drain tests run against this package: see the
// README): the Eviction API version discovery serves, or pod deletion when
// it serves none; evictions in a namespace being deleted retried until its
// pods go with it; the Helper's callbacks when kubectl calls them. A
// request is retried when the API server failed it (a refused or reset
// connection, a timeout, 5xx, 429: kubeclient.ServerProblemOf), and stops the drain
// at once when the client did. Evictions go through the Evictor seam, so
// an EvictionRequest backend can replace the Eviction API without touching
// planning.
//
// # Errors
//
// Bad configuration is a *udrain.ConfigError naming the setting or
// argument at fault, always before anything changed. Every stop of a
// domain is a *DomainError (domain, stage, the pods still waiting, the
// blocking budget) that unwraps to its cause. The other errors are grouped
// by what the caller does next; check them in this order:
//
//  1. errors.Is(err, context.Canceled): the call was cancelled; nothing new
//     was started after it, and the same call resumes.
//  2. *udrain.ConfigError: fix the configuration (a write method of a
//     Drainer from NewReader is one too: Field "eviction.NewReader(client)").
//  3. *udrain.HistoryChangedError: give up: the cluster's history went back
//     under the call (an etcd restore); start again on the cluster as it is.
//  4. *ClusterError (ErrorReason RefusedPods, MultiplePDBs, GPUsLost, Stuck,
//     NoLockNamespace), *topology.ContractError or
//     *topology.UnlabeledNodesError: fix the cluster, then run again.
//  5. *PermissionError (Forbidden, Denied, WebhookFailed): fix permissions,
//     or what an admission webhook objects to, then run again.
//  6. *RetryError (Blocked, Unreachable, NotSynced, NotHealthy, Locked,
//     LockLost, InProgress, WorkloadUpdating): wait, then run again;
//     RetryAfter says how long when that is known.
//  7. *DomainError with any other cause (the upgrade step's error, a
//     timeout): resume with the same call and ID, or release the domain's
//     nodes with Drainer.Uncordon.
//
// A *DomainError wraps the cause of 3 to 6 when the call stopped in a
// domain. errors.Is(err, &RetryError{Reason: ReasonBlocked}), and likewise
// for the other groups, finds a reason anywhere in err's tree (a
// *DomainError that stopped while blocked holds a Blocked *RetryError
// beside its cause); errors.As gives the first error of a group, with its
// details.
//
// Package evictiontest is a fake API server for the unit tests of a
// controller that embeds this package.
//
// What it is not for: it does not decide group health (package health
// does), does not reschedule pods (the workload's controllers and the
// scheduler do), and does not upgrade nodes (the caller's UpgradeFunc does).
package eviction
