// Package upgrade is a controller-runtime controller that turns upgrade
// requests, declared in ConfigMaps, into resumable udrain rollouts: the
// reconciler of the example program in the folder above.
//
// A request is a ConfigMap labelled RequestLabel:
//
//	apiVersion: v1
//	kind: ConfigMap
//	metadata:
//	  name: kubelet-1-37
//	  namespace: platform
//	  labels: {udrain.dev/upgrade-request: ""}
//	data:
//	  id: kubelet-1.37.2          # the rollout's ID (default: name-targetVersion)
//	  domains: ud-0, ud-1, ud-2   # in order (default: every domain)
//	  targetVersion: 1.37.2
//
// The reconciler runs eviction.Drainer.Rollout for it: each domain
// drained, its nodes labelled TargetVersionLabel (and Options.Upgrade, the
// platform's own step), uncordoned, and its groups healthy again before
// the next. A controller that stops (a crash, a new leader, a rollout of
// the controller itself) starts the rollout again with the same ID, which
// continues from the cluster's state; a rollout that fails is tried again
// after Options.RetryAfter.
//
// What it shows of udrain's embedding API:
//
//   - The cache seam: udrain reads nodes, pods, PodDisruptionBudgets and
//     DaemonSets through the manager's cache
//     (clusterinformers.FromCache(ctx, mgr.GetCache())), with no adapter
//     and no list or watch of its own.
//   - Structured events: eviction.Event carries the rollout's ID (which
//     finds the request), the pod (namespace, name, UID, node) and the
//     health of the groups; the reconciler records events.k8s.io Events on
//     the evicted pods by UID and on the nodes, related to the request.
//   - Structured results: the request's status (StatusAnnotation, a
//     Status in JSON) has conditions set from them: GroupsHealthy from
//     package health's judgment of each group (its Reason and Message),
//     Succeeded from the *eviction.DomainError that stopped the rollout
//     (StoppedAt<Stage>, Interrupted for a cancel), the domains from each
//     eviction.RolloutDomain's State.
//
// Permissions (RBAC): get, list, watch and patch ConfigMaps; create and
// patch events.k8s.io Events; list, watch and patch nodes; get, list and
// watch pods; create pods/eviction; list and watch PodDisruptionBudgets
// and DaemonSets.
package upgrade
