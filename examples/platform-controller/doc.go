// Command platform-controller embeds a udrain rollout the way a platform
// team's controller would: it upgrades every upgrade domain of a cluster in
// turn with eviction.Drainer.Rollout, talking to the cluster with client-go.
//
//	kubectl apply -f examples/platform-controller/crd.yaml   # for --status-resource
//	go run ./examples/platform-controller --kubeconfig ~/.kube/config \
//	    --target-version 1.37.2 --webhook https://node-upgrader.internal/upgrade \
//	    --status-resource
//	kubectl get nodeupgrades
//
// What it shows:
//
//   - A shared informer factory: the program runs one client-go
//     SharedInformerFactory, hands udrain its informers
//     (clusterinformers.FromFactory, Options.Informers) and reads nodes
//     through the same cache in its upgrade step, so the rollout adds no
//     list or watch of its own to what the program watches anyway.
//   - Contextual logging: the logger travels in the context
//     (klog.NewContext), package eviction logs through klog.FromContext, and
//     so does every line this program writes; -v raises the verbosity.
//   - Events: the rollout's progress callbacks (eviction.Options.OnEvent)
//     become Kubernetes Events on the objects concerned (a node cordoned or
//     uncordoned, a pod evicted, a pod refused by its PodDisruptionBudget)
//     through client-go's event recorder, and log lines for the rest, so
//     that "kubectl get events" and "kubectl describe node" tell what the
//     upgrade did. A pod's Event names it by UID (eviction.Event.Pod), so
//     it is never confused with the replacement of the same name.
//   - Structured results: when the rollout stops, the log line comes from
//     the *eviction.DomainError (domain, stage, pods still waiting, the
//     budget blocking, a timeout or a cancel) and, in recovery, from the
//     groups' health as package health judged it (MemberNotReady, ...);
//     the summary from report.SummarizeRollout and each domain's State.
//   - The upgrade step (eviction.UpgradeFunc): it labels the domain's nodes
//     with the target version (upgrade.example.com/target-version), which
//     a node agent or a Cluster API MachineDeployment can act on, and, with
//     --webhook, POSTs the domain and its nodes to an upgrade service and
//     waits for its 2xx answer.
//   - Resuming: the rollout's ID is "platform-<target version>", so running
//     the program again after a crash continues where it stopped, and a new
//     target version starts a new rollout.
//   - A status resource (--status-resource): the rollout's progress in the
//     status of a custom resource, for kubectl get (below).
//
// It needs what udrain's rollout needs (deploy/rbac/drainer.yaml: list/watch
// nodes, pods and PodDisruptionBudgets, patch nodes, create pods/eviction,
// the rollout's Lease in udrain-system) plus list/watch DaemonSets (for the
// factory's DaemonSet informer), create/update/patch events, and, with
// --status-resource, get/create nodeupgrades and patch nodeupgrades/status
// (e2e/platform_controller_test.go runs it as a ServiceAccount with exactly
// these). The exit code is 0 when every domain is done, 1 otherwise (also
// when --status-resource cannot create or write its NodeUpgrade, before the
// rollout changes anything), 2 on bad flags.
//
// # Progress with kubectl get
//
// With --status-resource the program keeps the rollout's progress in the
// status of a cluster-scoped NodeUpgrade (upgrade.example.com/v1alpha1,
// defined by crd.yaml beside this file) named after the rollout's ID,
// which it creates if missing:
//
//	kubectl get nodeupgrades
//	NAME              DONE   STATE     CURRENT   CURRENT STATE   ETA                    AGE
//	platform-1.37.2   2/3    Running   ud-3      Upgrading       2026-12-02T13:05:12Z   14m
//
// shows the domains done, the rollout's state (Pending; Running; Stopped:
// run the program again to resume; Completed), the domain it is in (or
// stopped in, else the next) and that domain's state, and the ETA learned
// from the domains already upgraded. -o wide adds the stage and every
// domain's state; -o yaml has the status domain by domain (state, stage,
// since, pods left, groups down).
//
// Before the rollout starts (once the informers synced) the program writes
// the status eviction.Drainer.RolloutStatus reads over the same informers,
// so a restarted program first shows where the previous run stopped. Then
// it writes the status the rollout's events carry (eviction.Event.Status
// on RolloutStarted, DomainDone, RolloutStopped and RolloutDone), the
// status read afresh with RolloutStatus when a domain's drain, upgrade or
// recovery begins (no event carries one there), and at the end
// eviction.RolloutResult.Status. One goroutine writes the latest status (a
// merge patch of the status subresource); the OnEvent callback only hands
// it over, so a slow API server never holds a drain up. None of it lists
// or watches anything beyond the factory's informers; RolloutStatus GETs
// the rollout's Lease.
package main
