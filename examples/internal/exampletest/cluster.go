package exampletest

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

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
// the leaders. Evictions behave as the API's: a budget allowing nothing
// answers 429, a dry run changes nothing, and an evicted pod comes back at
// once with a new UID (name-N), Running and Ready (see
// ClusterOptions.Unready), as a StatefulSet and a kubelet would bring it
// back.
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
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	var mu sync.Mutex
	seq := 0
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		tr := client.Tracker()
		obj, err := tr.Get(pods, ev.Namespace, ev.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod)
		pdb, err := tr.Get(policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), FakeClusterNamespace, FakeClusterPDB)
		if err != nil {
			return true, nil, err
		}
		b := pdb.(*policyv1.PodDisruptionBudget)
		if sel, _ := metav1.LabelSelectorAsSelector(b.Spec.Selector); sel.Matches(labels.Set(pod.Labels)) && b.Status.DisruptionsAllowed <= 0 {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		if ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0 {
			return true, nil, nil // udrain checks its permission with a dry run first
		}
		if err := tr.Delete(pods, ev.Namespace, ev.Name); err != nil {
			return true, nil, err
		}
		mu.Lock()
		seq++
		pod.UID, pod.ResourceVersion = types.UID(fmt.Sprintf("%s-%d", pod.Name, seq)), ""
		mu.Unlock()
		if opts.Unready {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
		}
		return true, nil, tr.Add(pod)
	})
	return client
}
