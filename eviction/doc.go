// Package eviction drains upgrade domains in an order that a
// PodDisruptionBudget over each group's leader can protect, and rolls an
// upgrade over all domains, resumably.
//
// The drain of one domain:
//
//  1. Cordon every node of the domain (marked with CordonedByAnnotation).
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
// whole and Ready and their budgets' status has caught up, before the next
// domain. Run again with the same ID after a crash or cancel, it continues
// from the cluster's state and never evicts a pod its plan did not name.
//
// Plans are pure: NewPlan computes one from a Snapshot without API calls,
// so it can be printed, tested and reviewed before anything changes. Bad
// input (an unknown or empty domain, invalid options, nodes without the
// domain label, pods kubectl would refuse, contract violations) is reported
// before anything is cordoned or evicted.
//
// Options accepts an existing *drain.Helper from k8s.io/kubectl/pkg/drain,
// so a tool built on kubectl's drain can switch without changing flags.
// Evictions go through the Evictor seam, so an EvictionRequest backend can
// replace the Eviction API without touching planning.
//
// The package never prints: progress arrives through Options.OnEvent and
// logs through the context's logger (klog.FromContext).
//
// What it is not for: it does not decide group health (see package
// readiness), does not reschedule pods (the workload's controllers and the
// scheduler do), and does not upgrade nodes (the caller's UpgradeFunc does).
package eviction
