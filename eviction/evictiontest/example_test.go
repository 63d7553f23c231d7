package evictiontest_test

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/eviction/evictiontest"
	"github.com/udrain/udrain/topology"
)

// A controller's unit test drains a domain over the fake, with no reactor
// of its own: the leader (under a budget allowing one disruption) is
// evicted first, then its worker, and both are gone.
func Example() {
	ctx := context.Background()
	client := evictiontest.NewClientset(cluster(1)...)
	d, err := eviction.New(client, eviction.Options{})
	if err != nil {
		panic(err)
	}
	var evicted []string
	_, res, err := d.Drain(ctx, "ud-1", eviction.DrainOptions{OnEvent: func(_ context.Context, e eviction.Event) {
		if e.Type == eviction.EventEvicted {
			evicted = append(evicted, e.Pod.Name)
		}
	}})
	if err != nil {
		panic(err)
	}
	pods, _ := client.CoreV1().Pods("serving").List(ctx, metav1.ListOptions{})
	pdb, _ := client.PolicyV1().PodDisruptionBudgets("serving").Get(ctx, "llm-leaders", metav1.GetOptions{})
	fmt.Println("evicted in order:", evicted)
	fmt.Println("cordoned:", res.Cordoned, "pods left:", len(pods.Items))
	fmt.Println("the budget's disruptions allowed:", pdb.Status.DisruptionsAllowed)
	// Output:
	// evicted in order: [llm-0 llm-0-1]
	// cordoned: [node-1] pods left: 0
	// the budget's disruptions allowed: 0
}

// A server dry run over a budget that allows nothing: the fake answers
// the leader's dry-run eviction 429 from the budget's status, and changes
// nothing.
func ExampleNewClientset_dryRun() {
	ctx := context.Background()
	client := evictiontest.NewClientset(cluster(0)...)
	d, err := eviction.New(client, eviction.Options{Helper: &drain.Helper{GracePeriodSeconds: -1, DryRunStrategy: cmdutil.DryRunServer}})
	if err != nil {
		panic(err)
	}
	_, res, err := d.Drain(ctx, "ud-1", eviction.DrainOptions{})
	if err != nil {
		panic(err)
	}
	for _, p := range res.DryRunPods {
		fmt.Println(p.Name, p.DryRun, p.DryRunMessage)
	}
	node, _ := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	pods, _ := client.CoreV1().Pods("serving").List(ctx, metav1.ListOptions{})
	fmt.Println("cordoned:", node.Spec.Unschedulable, "pods left:", len(pods.Items))
	// Output:
	// llm-0 WouldBlock blocked by PodDisruptionBudget serving/llm-leaders allows 0 disruption(s): 1 healthy, 1 needed, 1 expected
	// llm-0-1 WouldEvict would evict
	// cordoned: false pods left: 2
}

// Options.OnEvicted plays the workload's controllers: the StatefulSet
// creates an evicted pod again (a new UID, Ready), and the disruption
// controller gives its budget back. A rollout over both domains then
// evicts each group once and waits for it to come back before the next.
func ExampleInstall() {
	ctx := context.Background()
	var evicted []string
	client := fake.NewClientset(cluster(1, "ud-2")...)
	evictiontest.Install(client, evictiontest.Options{OnEvicted: func(tracker k8stesting.ObjectTracker, pod *corev1.Pod) error {
		evicted = append(evicted, pod.Name)
		pod.UID, pod.ResourceVersion = types.UID(string(pod.UID)+"-new"), ""
		if err := tracker.Add(pod); err != nil {
			return err
		}
		pdbs := policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
		obj, err := tracker.Get(pdbs, "serving", "llm-leaders")
		if err != nil {
			return err
		}
		pdb := obj.(*policyv1.PodDisruptionBudget)
		pdb.Status.DisruptionsAllowed = 1
		return tracker.Update(pdbs, pdb, "serving")
	}})
	d, err := eviction.New(client, eviction.Options{})
	if err != nil {
		panic(err)
	}
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "example", Domains: []string{"ud-1", "ud-2"}})
	if err != nil {
		panic(err)
	}
	sort.Strings(evicted)
	fmt.Println("domains done:", len(res.Domains), "evicted:", evicted)
	// Output:
	// domains done: 2 evicted: [llm-0 llm-0-1 llm-1 llm-1-1]
}

// cluster is one node per domain (ud-1, and the domains named), each with
// a group of two pods of LeaderWorkerSet "llm" in namespace serving, and
// a budget over the leaders allowing allowed disruptions.
func cluster(allowed int32, more ...string) []runtime.Object {
	yes := true
	var objs []runtime.Object
	domains := append([]string{"ud-1"}, more...)
	for g, domain := range domains {
		node := fmt.Sprintf("node-%d", g+1)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{topology.DefaultDomainLabel: domain}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
		for w := range 2 {
			name := fmt.Sprintf("llm-%d", g)
			if w > 0 {
				name += fmt.Sprintf("-%d", w)
			}
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: name, UID: types.UID(name),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llm", UID: "sts", Controller: &yes}},
					Labels:          map[string]string{topology.LWSNameLabel: "llm", topology.LWSGroupIndexLabel: fmt.Sprint(g), topology.LWSWorkerIndexLabel: fmt.Sprint(w)},
					Annotations:     map[string]string{topology.LWSSizeAnnotation: "2"}},
				Spec:   corev1.PodSpec{NodeName: node},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			})
		}
	}
	healthy := int32(len(domains))
	minAvailable := intstr.FromInt32(healthy - allowed)
	objs = append(objs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "llm-leaders"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			topology.LWSNameLabel: "llm", topology.LWSWorkerIndexLabel: "0"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: healthy - allowed, ExpectedPods: healthy},
	})
	return objs
}
