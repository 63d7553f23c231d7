package exampletest

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/eviction/evictiontest"
	"github.com/udrain/udrain/topology"
)

// ClusterOptions shape a FakeCluster.
type ClusterOptions struct {
	// Allowed is the disruptions the PDB over the leaders allows.
	Allowed int32
	// Unready makes evicted pods come back Running but not Ready, as a
	// model server that does not load.
	Unready bool
}

// FakeClusterNamespace and FakeClusterPDB are where a FakeCluster's
// workload and budget are.
const (
	FakeClusterNamespace = "serving"
	FakeClusterPDB       = "llm-leaders"
)

// FakeCluster is a fake clientset with two upgrade domains, ud-1 (nodes
// node-a1, node-a2) and ud-2 (node-b1, node-b2), one LeaderWorkerSet group
// of two pods per domain (leader llm-0 or llm-1 and worker llm-0-1 or
// llm-1-1, each pod's UID its name) in namespace serving, and a PDB over
// the leaders. Evictions behave as the API's (package evictiontest): a
// budget allowing nothing answers 429, a dry run changes nothing; and an
// evicted pod comes back at once with a new UID (name-N), Running and
// Ready (see ClusterOptions.Unready), as a StatefulSet and a kubelet would
// bring it back, its budget given back the disruption once it is Ready,
// as the disruption controller would.
func FakeCluster(opts ClusterOptions) *fake.Clientset {
	var objs []runtime.Object
	yes := true
	for d, nodes := range [][]string{{"node-a1", "node-a2"}, {"node-b1", "node-b2"}} {
		domain := fmt.Sprintf("ud-%d", d+1)
		for w, n := range nodes {
			objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{topology.DefaultDomainLabel: domain}}})
			name := fmt.Sprintf("llm-%d", d)
			if w > 0 {
				name += fmt.Sprintf("-%d", w)
			}
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: FakeClusterNamespace, Name: name, UID: types.UID(name),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llm", UID: "sts", Controller: &yes}},
					Labels:          map[string]string{topology.LWSNameLabel: "llm", topology.LWSGroupIndexLabel: fmt.Sprint(d), topology.LWSWorkerIndexLabel: fmt.Sprint(w)},
					Annotations:     map[string]string{topology.LWSSizeAnnotation: "2"}},
				Spec:   corev1.PodSpec{NodeName: n},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			})
		}
	}
	min := intstr.FromInt32(1)
	objs = append(objs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: FakeClusterNamespace, Name: FakeClusterPDB},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			topology.LWSNameLabel: "llm", topology.LWSWorkerIndexLabel: "0"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: opts.Allowed, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2},
	})
	client := fake.NewClientset(objs...)
	var mu sync.Mutex
	seq := 0
	evictiontest.Install(client, evictiontest.Options{OnEvicted: func(tr k8stesting.ObjectTracker, pod *corev1.Pod) error {
		mu.Lock()
		seq++
		pod.UID, pod.ResourceVersion = types.UID(fmt.Sprintf("%s-%d", pod.Name, seq)), ""
		mu.Unlock()
		if opts.Unready {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
		}
		if err := tr.Add(pod); err != nil {
			return err
		}
		pdbs := policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
		obj, err := tr.Get(pdbs, FakeClusterNamespace, FakeClusterPDB)
		if err != nil {
			return err
		}
		b := obj.(*policyv1.PodDisruptionBudget)
		if _, spent := b.Status.DisruptedPods[pod.Name]; !spent || opts.Unready {
			return nil
		}
		delete(b.Status.DisruptedPods, pod.Name)
		b.Status.DisruptionsAllowed++
		return tr.Update(pdbs, b, FakeClusterNamespace)
	}})
	return client
}
