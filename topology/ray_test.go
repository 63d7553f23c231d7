package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rayPod returns a pod with the labels KubeRay v1.5.0 puts on a RayCluster's
// pods (as read off pods the operator made on the e2e testbed): nodeType is
// "head" or "worker"; group is the worker group ("headgroup" for a head).
func rayPod(ns, name, nodeName, cluster, nodeType, group string, opts ...podOpt) corev1.Pod {
	base := withLabels(
		"app.kubernetes.io/created-by", "kuberay-operator",
		"app.kubernetes.io/name", "kuberay",
		RayClusterLabel, cluster,
		RayNodeTypeLabel, nodeType,
		RayNodeGroupLabel, group,
		"ray.io/identifier", cluster+"-"+nodeType,
		"ray.io/is-ray-node", "yes",
	)
	return pod(ns, name, nodeName, append([]podOpt{base}, opts...)...)
}

// multiHost adds the labels of host `host` of replica `replica` (index 0),
// which KubeRay writes with its RayMultiHostIndexing feature gate.
func multiHost(replica, host string) podOpt {
	return withLabels(RayWorkerReplicaNameLabel, replica, RayWorkerReplicaIndexLabel, "0", RayReplicaHostIndexLabel, host)
}

func TestRay(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   Membership
		ok     bool
	}{
		{
			name:   "head leads its cluster's group",
			labels: map[string]string{RayClusterLabel: "rc", RayNodeTypeLabel: RayNodeTypeHead, RayNodeGroupLabel: "headgroup"},
			want:   Membership{Kind: KindRay, Workload: "rc", Group: "rc", Leader: true},
			ok:     true,
		},
		{
			name:   "worker belongs to its cluster's group",
			labels: map[string]string{RayClusterLabel: "rc", RayNodeTypeLabel: RayNodeTypeWorker, RayNodeGroupLabel: "gpu"},
			want:   Membership{Kind: KindRay, Workload: "rc", Group: "rc"},
			ok:     true,
		},
		{
			name: "host of a multi-host replica belongs to its cluster's group, not to a group of the replica",
			labels: map[string]string{RayClusterLabel: "rc", RayNodeTypeLabel: RayNodeTypeWorker, RayNodeGroupLabel: "gpu",
				RayWorkerReplicaNameLabel: "gpu-57pk6", RayWorkerReplicaIndexLabel: "0", RayReplicaHostIndexLabel: "1"},
			want: Membership{Kind: KindRay, Workload: "rc", Group: "rc"},
			ok:   true,
		},
		{
			name:   "the Redis cleanup Job's pod is no Ray node",
			labels: map[string]string{RayClusterLabel: "rc", RayNodeTypeLabel: "redis-cleanup", RayNodeGroupLabel: "headgroup"},
		},
		{
			name:   "no node type: not made by KubeRay",
			labels: map[string]string{RayClusterLabel: "rc"},
		},
		{
			name:   "empty cluster name",
			labels: map[string]string{RayClusterLabel: "", RayNodeTypeLabel: RayNodeTypeHead},
		},
		{
			name:   "no cluster label",
			labels: map[string]string{RayNodeTypeLabel: RayNodeTypeWorker},
		},
	}
	grouper := Ray()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("ray", "p", "n1", withLabels())
			p.Labels = tc.labels
			got, ok := grouper(&p)
			if ok != tc.ok {
				t.Fatalf("claimed = %t, want %t", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("membership (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindGroupsRayClusters(t *testing.T) {
	pods := []corev1.Pod{
		rayPod("ray", "llm-gpu-worker-c5khx", "n2", "llm", RayNodeTypeWorker, "gpu", multiHost("gpu-57pk6", "1")),
		rayPod("ray", "llm-head-fq59b", "n1", "llm", RayNodeTypeHead, "headgroup"),
		rayPod("ray", "llm-gpu-worker-b6xmg", "n1", "llm", RayNodeTypeWorker, "gpu", multiHost("gpu-57pk6", "0")),
		rayPod("ray", "batch-head-x2v9c", "n3", "batch", RayNodeTypeHead, "headgroup"),
		rayPod("ray", "batch-cpu-worker-7fq2k", "n3", "batch", RayNodeTypeWorker, "cpu"),
		// GCS fault tolerance's cleanup Job, made from the head's template.
		rayPod("ray", "llm-redis-cleanup-k2m4p", "n3", "llm", "redis-cleanup", "headgroup"),
		// Same cluster name in another namespace: another cluster.
		rayPod("other", "llm-head-q8w3e", "n3", "llm", RayNodeTypeHead, "headgroup"),
	}
	want := []groupSummary{
		{ID: GroupID{KindRay, "other", "llm"}, Workload: "llm", Leader: "llm-head-q8w3e", Members: []string{"llm-head-q8w3e"}, Size: 1},
		{ID: GroupID{KindRay, "ray", "batch"}, Workload: "batch", Leader: "batch-head-x2v9c", Members: []string{"batch-cpu-worker-7fq2k", "batch-head-x2v9c"}, Size: 2},
		{ID: GroupID{KindRay, "ray", "llm"}, Workload: "llm", Leader: "llm-head-fq59b",
			Members: []string{"llm-gpu-worker-b6xmg", "llm-gpu-worker-c5khx", "llm-head-fq59b"}, Size: 3},
	}
	got := summarize(FindGroups(PodPointers(pods)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

func TestAuditRayClusters(t *testing.T) {
	nodes := []corev1.Node{node("a1", "ud-a"), node("a2", "ud-a"), node("b1", "ud-b"), node("b2", "ud-b")}
	headsPDB := []policyv1.PodDisruptionBudget{
		pdb("ray", "heads", &metav1.LabelSelector{MatchLabels: map[string]string{RayNodeTypeLabel: RayNodeTypeHead}}),
	}
	// Two clusters, each a head and a two-host replica, one per domain.
	placed := []corev1.Pod{
		rayPod("ray", "rc-0-head-aaaaa", "a1", "rc-0", RayNodeTypeHead, "headgroup"),
		rayPod("ray", "rc-0-gpu-worker-bbbbb", "a1", "rc-0", RayNodeTypeWorker, "gpu", multiHost("gpu-r0", "0")),
		rayPod("ray", "rc-0-gpu-worker-ccccc", "a2", "rc-0", RayNodeTypeWorker, "gpu", multiHost("gpu-r0", "1")),
		rayPod("ray", "rc-1-head-ddddd", "b1", "rc-1", RayNodeTypeHead, "headgroup"),
		rayPod("ray", "rc-1-gpu-worker-eeeee", "b1", "rc-1", RayNodeTypeWorker, "gpu", multiHost("gpu-r1", "0")),
		rayPod("ray", "rc-1-gpu-worker-fffff", "b2", "rc-1", RayNodeTypeWorker, "gpu", multiHost("gpu-r1", "1")),
	}
	// The replica of rc-1 split over both domains.
	split := append([]corev1.Pod(nil), placed...)
	split[5].Spec.NodeName = "a2"

	type finding struct {
		Code    FindingCode
		Group   string
		Domains []string
		Pods    []string
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		pdbs []policyv1.PodDisruptionBudget
		want []finding
	}{
		{name: "well placed clusters under a PDB over the heads pass", pods: placed, pdbs: headsPDB},
		{
			name: "heads without a PDB are reported",
			pods: placed,
			want: []finding{
				{Code: FindingUnprotectedLeader, Group: "rc-0", Domains: []string{"ud-a"}, Pods: []string{"rc-0-head-aaaaa"}},
				{Code: FindingUnprotectedLeader, Group: "rc-1", Domains: []string{"ud-b"}, Pods: []string{"rc-1-head-ddddd"}},
			},
		},
		{
			name: "a replica split over two domains breaks its cluster's pack",
			pods: split,
			pdbs: headsPDB,
			want: []finding{{Code: FindingPack, Group: "rc-1", Domains: []string{"ud-a", "ud-b"},
				Pods: []string{"rc-1-gpu-worker-eeeee@ud-b", "rc-1-gpu-worker-fffff@ud-a", "rc-1-head-ddddd@ud-b"}}},
		},
	}
	layout, err := BuildLayout(nodes, LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := PodPointers(tc.pods)
			r := Audit(AuditInput{Layout: layout, Groups: FindGroups(pods), PDBs: tc.pdbs, Pods: pods})
			var got []finding
			for _, f := range r.Findings {
				got = append(got, finding{Code: f.Code, Group: f.Group, Domains: f.Domains, Pods: f.Pods})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
