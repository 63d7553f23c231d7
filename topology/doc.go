// Package topology reads the placement contract off a cluster: upgrade
// domains from node labels, groups of pods that live or die together from
// pod labels or PodGroups, which PodDisruptionBudgets select which pods, and
// an audit of the contract that udrain's drain relies on.
//
// Everything here is a plain function over Kubernetes objects that the
// caller has already listed: the package makes no API calls, so it serves a
// CLI, a controller's informer cache and a unit test alike.
//
// The contract:
//
//   - Pack: all pods of a group sit in one upgrade domain (UD).
//   - Spread: groups of one workload sit in different UDs.
//   - One PDB over each leader and none over workers, so the budget counts
//     healthy groups (the leader's readiness stands for its group).
//   - No UD holds enough control-plane nodes to lose etcd quorum.
//
// What it is not for: it does not drain or evict (see package eviction), and
// it does not check pod health (see package readiness).
package topology
