// Command platform-controller embeds a udrain rollout the way a platform
// team's controller would: it upgrades every upgrade domain of a cluster in
// turn with eviction.Drainer.Rollout, talking to the cluster with client-go.
//
//	go run ./examples/platform-controller --kubeconfig ~/.kube/config \
//	    --target-version 1.37.2 --webhook https://node-upgrader.internal/upgrade
//
// What it shows:
//
//   - A shared informer factory: the program runs one client-go
//     SharedInformerFactory, hands udrain its informers
//     (eviction.InformersFromFactory, Options.Informers) and reads nodes
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
//     the summary from RolloutResult.Summary and each domain's Status.
//   - The upgrade step (eviction.UpgradeFunc): it labels the domain's nodes
//     with the target version (upgrade.example.com/target-version), which
//     a node agent or a Cluster API MachineDeployment can act on, and, with
//     --webhook, POSTs the domain and its nodes to an upgrade service and
//     waits for its 2xx answer.
//   - Resuming: the rollout's ID is "platform-<target version>", so running
//     the program again after a crash continues where it stopped, and a new
//     target version starts a new rollout.
//
// It needs what udrain's rollout needs (RBAC: list/watch nodes, pods and
// PodDisruptionBudgets, patch nodes, create pods/eviction) plus list/watch
// DaemonSets (for the factory's DaemonSet informer) and create events. The exit code is 0 when every domain is done, 1
// otherwise, 2 on bad flags.
package main
