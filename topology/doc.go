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
// # Ray: what one group is
//
// A RayCluster is one group ([Ray]): its head and every worker of every
// worker group, with the head as leader, named after the cluster. The head
// runs the cluster's GCS; without GCS fault tolerance, when the head goes
// every worker loses its cluster and its actors, and a model served across
// hosts (tensor or pipeline parallel over a placement group) dies with any
// of them. So the cluster is what lives or dies together, and a PDB over
// the heads (readiness of a head = health of its cluster, see package
// readiness/gate) is a budget of healthy clusters. With GCS fault
// tolerance on, workers outlive a head restart; udrain still keeps the
// whole cluster as one group, which is stricter than needed, never less
// safe.
//
// A multi-host worker replica (numOfHosts > 1) is a gang inside its
// cluster, not a group of its own. KubeRay creates and deletes its hosts
// together: with RayMultiHostIndexing on, when one host goes the operator
// deletes the others and creates a whole replica under a new
// ray.io/worker-group-replica-name. A replica cannot outlive its cluster's
// head, and packing the cluster into one domain packs its replicas; the
// drain of that domain evicts the head first and then every worker of the
// domain at once, so no replica is split over two drains.
//
// Ray pods state no size (it is in the RayCluster's spec), so a Ray group's
// expected size is the members seen: a drain's plan records the members it
// evicts and its recovery waits until as many are Ready again, while the
// readiness-gate controller, which sees only pods, judges a head by the
// members that exist (KubeRay recreates deleted workers at once, as Pending
// pods, so they count before the new head is Ready). Other pods that carry
// ray.io/cluster (the Redis cleanup Job of GCS fault tolerance) are no
// members. Every KubeRay pod mounts an emptyDir (/dev/shm), so draining
// Ray nodes needs kubectl drain's --delete-emptydir-data.
//
// What it is not for: it does not drain or evict (see package eviction), and
// it does not check pod health (see package readiness).
package topology
