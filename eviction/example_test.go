package eviction_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// exampleCluster is two upgrade domains with one LeaderWorkerSet group
// each, and a PDB over the leaders.
func exampleCluster() (nodes []corev1.Node, pods []corev1.Pod, pdbs []policyv1.PodDisruptionBudget) {
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llama", UID: "1", Controller: new(bool)}}
	*owner[0].Controller = true
	for _, ud := range []string{"ud-1", "ud-2"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-" + ud, Labels: map[string]string{topology.DefaultDomainLabel: ud}}})
	}
	for g, ud := range []string{"ud-1", "ud-2"} {
		for w := 0; w < 2; w++ {
			name := fmt.Sprintf("llama-%d", g)
			if w > 0 {
				name += fmt.Sprintf("-%d", w)
			}
			pods = append(pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: name, UID: types.UID("uid-" + name), OwnerReferences: owner,
					Labels: map[string]string{
						topology.LWSNameLabel: "llama", topology.LWSGroupIndexLabel: fmt.Sprint(g), topology.LWSWorkerIndexLabel: fmt.Sprint(w),
					},
					Annotations: map[string]string{topology.LWSSizeAnnotation: "2"},
				},
				Spec:   corev1.PodSpec{NodeName: "gpu-" + ud},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			})
		}
	}
	min := intstr.FromInt32(1)
	pdbs = append(pdbs, policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "llama-leaders"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			topology.LWSNameLabel: "llama", topology.LWSWorkerIndexLabel: "0",
		}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2},
	})
	return nodes, pods, pdbs
}

// NewPlan computes a plan from objects you already have, without calling
// the API: the leaders go first, under their PDB; the workers after.
func ExampleNewPlan() {
	nodes, pods, pdbs := exampleCluster()
	plan, err := eviction.NewPlan("ud-1", &eviction.Snapshot{Nodes: nodes, Pods: topology.PodPointers(pods), PDBs: pdbs}, eviction.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range plan.Phase1 {
		fmt.Println("phase 1:", p.String(), "PDBs", p.PDBs)
	}
	for _, p := range plan.Phase2 {
		fmt.Println("phase 2:", p.String())
	}
	fmt.Println("groups:", plan.Groups[0].ID, "ready to run:", plan.Err() == nil)
	// Output:
	// phase 1: inference/llama-0 PDBs [llama-leaders]
	// phase 2: inference/llama-0-1
	// groups: inference/llama-0 ready to run: true
}

// Options takes kubectl drain's settings as they are: a tool that already
// builds a *drain.Helper hands it over.
func ExampleNew() {
	client := exampleClient(false)

	helper := &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DryRunStrategy: cmdutil.DryRunClient}
	d, err := eviction.New(client, eviction.Options{
		Helper: helper,
		OnEvent: func(_ context.Context, e eviction.Event) {
			if e.Type == eviction.EventDryRun {
				fmt.Println(e.Stage, e.Pod, e.Message)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, _, err := d.Drain(context.Background(), "ud-2", eviction.DrainOptions{}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Phase1 inference/llama-1 would evict
	// Phase2 inference/llama-1-1 would evict
}

// A rollout drains each domain, runs the upgrade step, and waits for the
// domain's groups to recover before the next one. Here as a client-side dry
// run, which shows the order without changing anything.
func ExampleDrainer_Rollout() {
	d, err := eviction.New(exampleClient(false), eviction.Options{
		Helper: &drain.Helper{GracePeriodSeconds: -1, DryRunStrategy: cmdutil.DryRunClient},
		OnEvent: func(_ context.Context, e eviction.Event) {
			switch e.Type {
			case eviction.EventDomainStarted:
				fmt.Println(e.Domain, e.Type)
			case eviction.EventDryRun:
				fmt.Println(e.Domain, e.Type, e.Pod)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := d.Rollout(context.Background(), eviction.RolloutOptions{
		ID: "kubelet-1.37",
		Upgrade: func(ctx context.Context, dom topology.Domain) error {
			return nil // reboot, replace or upgrade dom.Nodes here
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("domains:", len(res.Domains))
	// Output:
	// ud-1 DomainStarted
	// ud-1 DryRun inference/llama-0
	// ud-1 DryRun inference/llama-0-1
	// ud-2 DomainStarted
	// ud-2 DryRun inference/llama-1
	// ud-2 DryRun inference/llama-1-1
	// domains: 2
}

// A caller that only reads (a status page, a report, a script waiting
// for health) uses a read-only Drainer: it takes no drain settings and
// sends no write (Drain, Uncordon, Rollout return a *udrain.ConfigError).
// WaitHealthy is bounded by its context's deadline.
func ExampleNewReader() {
	client := exampleClient(false)

	r, err := eviction.NewReader(client, eviction.Options{DomainLabel: topology.DefaultDomainLabel})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	report, err := r.WaitHealthy(ctx, "ud-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dom := range report.Domains {
		for _, g := range dom.Groups {
			fmt.Printf("%s: group %s %s, %d/%d ready\n", dom.Domain, g.ID, g.Reason, g.ReadyMembers, g.Size)
		}
	}
	st, err := r.RolloutStatus(ctx, eviction.RolloutOptions{ID: "kubelet-1.37"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range st.Domains {
		fmt.Printf("rollout %s: %s %s, %d pods to evict\n", st.ID, d.Domain, d.State, d.Pods)
	}
	writes := 0
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			writes++
		}
	}
	fmt.Println("writes:", writes)
	// Output:
	// ud-1: group inference/llama-0 GroupReady, 2/2 ready
	// rollout kubelet-1.37: ud-1 Pending, 2 pods to evict
	// rollout kubelet-1.37: ud-2 Pending, 2 pods to evict
	// writes: 0
}

// A rollout named after what defines its upgrade: the same upgrade resumes
// it, another starts a new rollout (as udrain's command line names a
// rollout run without --id).
func ExampleRolloutIDOf() {
	a := eviction.RolloutIDOf(topology.DefaultDomainLabel, "./upgrade-nodes.sh 1.37.2")
	b := eviction.RolloutIDOf(topology.DefaultDomainLabel, "./upgrade-nodes.sh 1.37.2")
	c := eviction.RolloutIDOf(topology.DefaultDomainLabel, "./upgrade-nodes.sh 1.38.0")
	fmt.Println(a == b, a == c, len(a))
	// Output: true false 17
}
