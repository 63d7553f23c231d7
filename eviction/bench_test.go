package eviction

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/topology"
)

// benchSnapshot builds a cluster of n nodes in domains of 500 nodes (see
// benchFleet).
func benchSnapshot(n int) *Snapshot { return benchFleet(n, 500) }

// benchFleet builds a cluster of n nodes in domains of perDomain nodes,
// with 30 pods per node: 24 pods of LeaderWorkerSet groups of 8 (each group
// on two nodes of one domain), 4 ReplicaSet pods and 2 DaemonSet pods. Each
// workload has one group per domain and a PDB over its leaders; workloads
// are spread over namespaces of 100 workloads each.
func benchFleet(n, perDomain int) *Snapshot {
	groupsPerDomain := perDomain / 2 * 6
	s := &Snapshot{Now: time.Now(), daemonSet: func(string, string) error { return nil }} // every DaemonSet exists
	s.Nodes = make([]corev1.Node, n)
	for i := range s.Nodes {
		s.Nodes[i] = corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("node-%d", i),
			Labels: map[string]string{topology.DefaultDomainLabel: fmt.Sprintf("ud-%d", i/perDomain)},
		}}
	}
	pods := make([]corev1.Pod, 0, n*30)
	ready := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	group := 0
	leaders := make([]int32, groupsPerDomain) // per workload: one a domain, fewer in a last, partial domain
	for i := 0; i+1 < n; i += 2 {
		for g := 0; g < 6; g++ {
			wl := group % groupsPerDomain
			leaders[wl]++
			workload := fmt.Sprintf("lws-%d", wl)
			ns := fmt.Sprintf("team-%d", wl/100)
			for w := 0; w < 8; w++ {
				pods = append(pods, corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{
						Namespace: ns, Name: fmt.Sprintf("%s-%d-%d", workload, group, w), UID: types.UID(fmt.Sprintf("u-%d-%d", group, w)),
						Labels: map[string]string{
							topology.LWSNameLabel: workload, topology.LWSGroupIndexLabel: strconv.Itoa(group), topology.LWSWorkerIndexLabel: strconv.Itoa(w),
						},
						Annotations:     map[string]string{topology.LWSSizeAnnotation: "8"},
						OwnerReferences: ownedBy("StatefulSet", workload),
					},
					Spec:   corev1.PodSpec{NodeName: s.Nodes[i+w/4].Name},
					Status: ready,
				})
			}
			group++
		}
	}
	for i := range s.Nodes {
		for k := 0; k < 4; k++ {
			pods = append(pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: fmt.Sprintf("web-%d-%d", i, k), UID: types.UID(fmt.Sprintf("w-%d-%d", i, k)),
					Labels: map[string]string{"app": "web"}, OwnerReferences: ownedBy("ReplicaSet", "web")},
				Spec: corev1.PodSpec{NodeName: s.Nodes[i].Name}, Status: ready,
			})
		}
		for k := 0; k < 2; k++ {
			pods = append(pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: fmt.Sprintf("ds%d-%d", k, i), UID: types.UID(fmt.Sprintf("d-%d-%d", i, k)),
					OwnerReferences: ownedBy("DaemonSet", fmt.Sprintf("ds%d", k))},
				Spec: corev1.PodSpec{NodeName: s.Nodes[i].Name}, Status: ready,
			})
		}
	}
	s.Pods = topology.PodPointers(pods)
	for w := 0; w < groupsPerDomain; w++ {
		domains := leaders[w]
		min := intstr.FromInt32(domains - 1)
		s.PDBs = append(s.PDBs, policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", w/100), Name: fmt.Sprintf("lws-%d-leaders", w)},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
				topology.LWSNameLabel: fmt.Sprintf("lws-%d", w), topology.LWSWorkerIndexLabel: "0",
			}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: domains, DesiredHealthy: domains - 1, ExpectedPods: domains},
		})
	}
	return s
}

// BenchmarkPlan plans one 500-node domain (15,000 pods) of clusters of
// growing size; cost should grow linearly with the cluster.
//
//	go test -run '^$' -bench BenchmarkPlan -benchmem ./eviction/
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		snap := benchSnapshot(n)
		opts := Options{Helper: &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true}}
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", n, len(snap.Pods)), func(b *testing.B) {
			b.ReportAllocs()
			var plan *Plan
			for b.Loop() {
				var err error
				plan, err = NewPlan("ud-1", snap, opts)
				if err != nil {
					b.Fatal(err)
				}
			}
			if len(plan.Phase1) != 1500 || len(plan.Phase2) != 1500*7+500*4 {
				b.Fatalf("plan has %d + %d pods", len(plan.Phase1), len(plan.Phase2))
			}
			if err := plan.Err(); err != nil {
				b.Fatalf("plan.Err() = %v", err)
			}
		})
	}
}
