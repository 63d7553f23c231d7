// Package health decides whether a group of pods is healthy, and whether a
// PodDisruptionBudget's status has caught up with the pods it selects. It is
// the one owner of those judgments in udrain: planning (which groups are
// whole before a drain), recovery (when a rollout may go on to the next
// domain), the readiness-gate controller (the condition a leader carries)
// and every command of the CLI ask it, and none of them decides on its own.
//
// Everything here is a pure function over objects the caller has already
// read (from an informer cache, a list, a test table): no API calls, no
// clock but the time passed in.
//
// # What "healthy" means
//
// A member (a pod of the group) is healthy when it is not being deleted, its
// phase is Running and its Ready condition is True. A group is healthy when
// it has at least its expected number of members and every member it has
// is healthy. The edge cases, decided once here:
//
//   - More pods than the expected size: every pod that exists is a member
//     and must be healthy. udrain cannot tell a surplus pod from a needed
//     one, and a gang with a member that is not Ready is not serving.
//   - A leader that is Running but not Ready: the group is not healthy
//     (reason MemberNotReady, LeaderState NotReady). The readiness-gate
//     controller judges the leader by its ContainersReady condition instead
//     (Options.LeaderByContainers), since a gated leader's Ready waits for
//     the very condition computed from this judgment.
//   - A member that is not scheduled (Pending with no node): not healthy,
//     reason MemberUnscheduled, with the scheduler's explanation (the
//     PodScheduled condition's message) as the member's detail.
//   - A group with no pod on any node: not healthy (MemberUnscheduled); a
//     group none of whose pods exists: not healthy (NoMembers, see Absent).
//   - Terminating members: not healthy (MemberTerminating). The pod is
//     leaving, so the gang is breaking or being replaced; the group is
//     healthy again once the replacement is Ready and the old pod is gone.
//   - Fewer pods than expected: not healthy (MemberMissing). The expected
//     size is the group's declared size (LeaderWorkerSet's size annotation,
//     a PodGroup's minCount) or, when none is declared (Ray), the number of
//     its pods; Options.MinSize raises it to a size seen earlier, when the
//     group was whole.
//   - A group without a leader pod is judged on its members, unless
//     Options.RequireLeader says a leader must exist.
//
// When a group is not healthy, the Reason is that of its worst problem, in
// this order: NoMembers, MemberMissing, MemberTerminating,
// MemberUnscheduled, MemberNotRunning, MemberNotReady. Problems lists every
// unhealthy member, worst first, each with what the cluster says about it
// (the scheduler's message, a container's waiting reason such as
// ImagePullBackOff, a readiness gate not set).
//
// # The health of domains
//
// DomainStatus (an upgrade domain's groups and budgets) and Report (some
// domains', with the groups on no node yet) hold these judgments domain
// by domain. They are plain values, with no function here to make them:
// package eviction finds each domain's groups and budgets, asks Evaluate,
// Absent and Budget of each, and returns them (Drainer.Health,
// WaitHealthy, WaitRecovered, a rollout's events and results).
//
// What it is not for: it does not find groups (package topology does),
// does not read the cluster (package eviction does, to judge a domain)
// and does not probe members over the network (package readiness does,
// from inside a leader pod).
package health
