package topology

import corev1 "k8s.io/api/core/v1"

// Labels the KubeRay operator (v1.5) puts on the pods of a RayCluster.
// RayClusterLabel, RayNodeTypeLabel and RayNodeGroupLabel are on every head
// and worker pod. The multi-host labels are on the workers of a worker group
// with numOfHosts > 1 only when the operator runs with its feature gate
// RayMultiHostIndexing (alpha, off by default): the hosts of one replica
// share RayWorkerReplicaNameLabel and are numbered by
// RayReplicaHostIndexLabel.
const (
	RayClusterLabel            = "ray.io/cluster"
	RayNodeTypeLabel           = "ray.io/node-type"
	RayNodeGroupLabel          = "ray.io/group"
	RayWorkerReplicaNameLabel  = "ray.io/worker-group-replica-name"
	RayWorkerReplicaIndexLabel = "ray.io/worker-group-replica-index"
	RayReplicaHostIndexLabel   = "ray.io/replica-host-index"
)

// Values of RayNodeTypeLabel that make a pod a member of its RayCluster's
// group. KubeRay also labels the pod of its Redis cleanup Job (node type
// "redis-cleanup") with RayClusterLabel; that pod is not a Ray node and
// belongs to no group.
const (
	RayNodeTypeHead   = "head"
	RayNodeTypeWorker = "worker"
)

// Ray groups the pods of a RayCluster: one group per cluster, named after
// it (RayClusterLabel), whose members are its head and every worker of
// every worker group, multi-host replicas included, and whose leader is the
// head. Each RayCluster is its own workload. Pods of other Ray node types
// are not claimed. Ray pods state no group size, so a Ray group's expected
// size is the number of members seen. See the package documentation for
// why a group is the whole cluster.
func Ray() Grouper {
	return func(pod *corev1.Pod) (Membership, bool) {
		cluster := pod.Labels[RayClusterLabel]
		nodeType := pod.Labels[RayNodeTypeLabel]
		if cluster == "" || nodeType != RayNodeTypeHead && nodeType != RayNodeTypeWorker {
			return Membership{}, false
		}
		return Membership{
			Kind:     KindRay,
			Workload: cluster,
			Group:    cluster,
			Leader:   nodeType == RayNodeTypeHead,
		}, true
	}
}
