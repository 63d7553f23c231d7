// Package gate is the readiness-gate controller of udrain: it makes a
// group's leader ready only while every member of its group is healthy, for
// workloads whose containers cannot change (so no readiness endpoint of
// package readiness can run in the leader). It sets the pod condition
// [ConditionType] ("udrain.dev/group-ready") on each group's leader from the
// status of the group's member pods; a leader that lists that condition in
// spec.readinessGates is then Ready only while it is True, and a
// PodDisruptionBudget over the leaders becomes a budget of healthy groups.
//
// Groups are found with package topology ([Options.Groupers]; by default
// LeaderWorkerSet labels, then Ray). The condition of a group is the pure
// function [ConditionFor], which asks package health, the one judgment of group
// health in udrain (planning, recovery and the CLI ask it too): True when
// the group has its expected size and every member is Running, Ready and
// not being deleted; the leader's own Ready is not used (it waits for this
// condition), its ContainersReady is. Its reason and message are health's.
//
// How it works: a shared pod informer (optionally limited to a namespace and
// a label selector; or the caller's own, [Options.Pods], so that a
// controller that watches pods anyway adds no list or watch) with an index
// from group to member pods feeds a
// rate-limited work queue keyed by group. Reconciling a group reads its pods
// from the cache, evaluates them, and patches the leader's pods/status
// subresource (a strategic merge patch of the one condition) only when the
// status, reason or message differ; lastTransitionTime changes only with the
// status. A True patch carries the resourceVersion it was decided on, so
// that a group is never declared whole from an outdated leader (or an older
// pod of the same name): it fails with Conflict and is redone from fresh
// state. A False patch does not: the controller is the only writer and
// reads its pods in order, so its False is never older than what it wrote
// before, and one that lands on a newer pod of the same name only holds it
// unready until the next reconcile (on real LeaderWorkerSets the
// precondition made about a third of all patches 409s, the kubelet updating
// a recreated leader while its group is down). Every write records its time
// as lastProbeTime; a condition that stays False with a new message (each
// member of a recovering group scheduled, running, ready) is rewritten at
// most every [Options.FalseRewriteInterval] (1 s), the last message once it
// has passed: on three recreated groups of four pods that took the
// condition patches from 47 (14 of them 409s) to 20 (2). A terminating
// leader whose condition is already False is left alone: it counts for no
// budget, and rewriting its message as each member goes would cost a write
// per member of every evicted group.
//
// Leaders that do not declare the readiness gate are skipped: the
// controller never writes to a pod that did not opt in. A group whose
// leader pod does not exist, or whose grouper names no leader (native
// PodGroups), has nothing to write to; a leader is reconciled when it
// appears. A group's expected size comes from its grouper (the
// LeaderWorkerSet size annotation); where none is known (Ray), a deleted
// member simply leaves a smaller group.
//
// # Several replicas: leader election
//
// Set [Options.LeaderElection] whenever more than one replica may run: the
// replicas elect one writer through a coordination.k8s.io Lease
// (client-go's leaderelection); the others keep warm caches and take over
// when the Lease is released (on shutdown, after the leader's workers have
// stopped) or expires. A leader that cannot renew stops its workers once
// RenewDeadline has passed, which is LeaseDuration−RenewDeadline before
// another replica may take the Lease; and every True write carries its
// resourceVersion (see above), so an outdated one is refused rather than
// applied (an outdated False is the safe side).
//
// Why not idempotent writes from every replica: each write is idempotent
// (a function of the informer state), but two replicas see the cluster with
// different cache lag. A replica that has not yet seen a member fail would
// write True over the False of one that has, the other would write False
// back, and so on until the caches agree. The leader flaps, and while it
// reads True a broken group counts as healthy in the PDB: exactly the
// unsafe direction, since a drain may then take down one more group. With
// one writer the condition moves only forward with that writer's cache.
// The cost is a failover delay after a crash (not after a clean shutdown)
// of a LeaseDuration and up to 4.4 RetryPeriods more (the standby sees the
// last renewal, and then the expiry, each up to 2.2 RetryPeriods late, at
// its jittered retries), during which conditions stay as last written.
// Without LeaderElection, run exactly one replica.
//
// # Health checks
//
// A leader that wedges (its workers stuck, its writes refused) while it
// still renews its Lease leaves every leader's condition as last written,
// with nothing to say so. [Controller.Healthz] (liveness) and
// [Controller.Readyz] (readiness), served over HTTP by
// [Controller.HealthHandler] (the CLI's --health-address), tell:
//
//   - A replica is alive while Run runs, and, if it leads, while its work
//     queue moves: each check sends a probe through the leader's queue
//     (first in, first out), and the leader is stuck when a probe has
//     waited, or one reconcile has run, longer than [Options.MaxSyncAge].
//     Then a restart is the remedy, and it hands the Lease over. Activity
//     of the informers is not judged: an idle cluster sends no pod events,
//     so their absence cannot tell a quiet cluster from a dead watch, and
//     the handlers only queue groups.
//   - A replica is ready once its pod cache has filled: a standby is then
//     a warm one, able to take over at once (a Deployment's rolling update
//     waits for that before stopping the other replica). A leader is ready
//     while it is alive and no group has kept failing to reconcile for
//     longer than MaxSyncAge: one whose writes are refused is not ready
//     (restarting would not help; an alert on the Deployment's available
//     replicas should call someone), but stays alive.
//
// [Controller.Health] gives the state behind both, with the time of the
// last successful sync (a probe through the queue with no group failing).
//
// # A cluster restored from a snapshot
//
// When etcd is restored from a snapshot, the cluster's history goes back:
// the API server's resourceVersion is older than the one the pod cache's
// watch resumes from, and that watch waits until the server reaches it,
// missing every change meanwhile, so leaders' conditions would stay as
// they were, on groups that changed. Every [Options.HistoryCheck] (30 s)
// the controller lists at most one pod and compares the server's
// resourceVersion with its cache's; when the server's is older, Run stops
// with a [*udrain.HistoryChangedError] (the CLI exits 1, and its Deployment
// restarts it with a fresh cache).
//
// What it is not for: it does not check members over the network (that is
// package readiness, in the leader), does not evict or drain anything, and
// never changes a pod's spec, labels or other conditions. It does not
// create or recreate pods: a group short of members stays False until its
// workload controller brings them back.
//
// The controller logs through klog.FromContext of the context given to
// [Controller.Run] and reports every write to [Options.OnChange]; it prints
// nothing.
package gate
