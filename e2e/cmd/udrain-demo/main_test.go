package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/e2e/fixture"
)

// fakeCluster is a fake clientset whose server-side dry-run pod creations
// get the worker-index label, as the apiserver with the fixture's
// MutatingAdmissionPolicy does, that deletes collections of nodes (the
// fake's tracker ignores them), and that deletes the demo's objects with
// their namespace, as the namespace controller does.
func fakeCluster(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.(k8stesting.DeleteActionImpl).Name
		for _, kind := range []schema.GroupVersionKind{
			policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
			appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
			corev1.SchemeGroupVersion.WithKind("Pod"),
		} {
			gvr, _ := meta.UnsafeGuessKindToResource(kind)
			l, err := c.Tracker().List(gvr, kind, ns)
			if err != nil {
				return true, nil, err
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return true, nil, err
			}
			for _, o := range items {
				if err := c.Tracker().Delete(gvr, ns, o.(metav1.Object).GetName()); err != nil {
					return true, nil, err
				}
			}
		}
		return false, nil, nil // the tracker deletes the namespace itself
	})
	c.PrependReactor("delete-collection", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel, err := labels.Parse(a.(k8stesting.DeleteCollectionActionImpl).ListOptions.LabelSelector)
		if err != nil {
			return true, nil, err
		}
		gvr := corev1.SchemeGroupVersion.WithResource("nodes")
		l, err := c.Tracker().List(gvr, corev1.SchemeGroupVersion.WithKind("Node"), "")
		if err != nil {
			return true, nil, err
		}
		for _, n := range l.(*corev1.NodeList).Items {
			if !sel.Matches(labels.Set(n.Labels)) {
				continue
			}
			if err := c.Tracker().Delete(gvr, "", n.Name); err != nil {
				return true, nil, err
			}
		}
		return true, nil, nil
	})
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateActionImpl)
		if len(ca.CreateOptions.DryRun) == 0 {
			return false, nil, nil
		}
		p := ca.Object.(*corev1.Pod).DeepCopy()
		p.Labels[fixture.LWSWorkerIndexLabel] = p.Labels[appsv1.PodIndexLabel]
		return true, p, nil
	})
	return c
}

func runOn(t *testing.T, c kubernetes.Interface, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := run(ctx, args, &out, &errOut, func(string) (clients, error) { return clients{kube: c}, nil })
	return out.String(), errOut.String(), err
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", nil, "give a subcommand"},
		{"unknown subcommand", []string{"up"}, "give a subcommand"},
		{"unknown flag", []string{"deploy", "--nodes", "3"}, "flag provided but not defined: -nodes"},
		{"deploy flag on wait", []string{"wait", "--uds", "4"}, "flag provided but not defined: -uds"},
		{"more groups than domains", []string{"deploy", "--groups", "4"}, "4 groups over 3 upgrade domains"},
		{"group larger than a domain", []string{"deploy", "--group-size", "5"}, "does not fit the 2 nodes"},
		{"bad pool", []string{"deploy", "--pool", "Demo_1"}, `Pool "Demo_1" must be a DNS label`},
		{"zero timeout", []string{"wait", "--timeout", "0s"}, "--timeout=0s"},
		{"arguments", []string{"watch", "now"}, `unexpected arguments ["now"]`},
		{"unknown workload", []string{"deploy", "--workload", "jobset"}, `--workload="jobset": give lws`},
		{"RayCluster larger than a domain", []string{"deploy", "--workload", "ray", "--group-size", "4"}, "a RayCluster of 4 pods (a head and 3 hosts of 8 GPUs) does not fit the 2 nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runOn(t, fakeCluster(), tc.args...)
			var usage *usageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

// TestDeploy: deploy creates the namespace, 3 domains of 2 GPU nodes and 3
// groups of 4 with their budget; a second deploy deletes the first one's
// objects (and what a rollout left on the nodes) and starts anew.
func TestDeploy(t *testing.T) {
	c := fakeCluster()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fixture.LeaderWorkerSetGVR: "LeaderWorkerSetList",
	})
	dryRunsDefaulted(dyn)
	// The namespace controller deletes the LeaderWorkerSets with their
	// namespace.
	c.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.(k8stesting.DeleteActionImpl).Name
		l, err := dyn.Resource(fixture.LeaderWorkerSetGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return true, nil, err
		}
		for _, o := range l.Items {
			if err := dyn.Tracker().Delete(fixture.LeaderWorkerSetGVR, ns, o.GetName()); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	deploy := func() (string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"deploy"}, &out, &errOut, func(string) (clients, error) { return clients{kube: c, dyn: dyn}, nil })
		return out.String() + errOut.String(), err
	}
	out, err := deploy()
	if err != nil {
		t.Fatalf("deploy: %v\n%s", err, out)
	}
	for _, want := range []string{
		"6 nodes with 8 x NVIDIA-H100-80GB-HBM3, in 3 upgrade domains (label topology.udrain.dev/upgrade-domain): demo-ud0, demo-ud1, demo-ud2",
		"3 LeaderWorkerSets in udrain-demo, vllm-a..vllm-c: one group of 4 pods each (leader vllm-a-0 + workers vllm-a-0-1..vllm-a-0-3, 4 GPUs each)",
		"exclusive topology on topology.udrain.dev/upgrade-domain",
		"PodDisruptionBudget vllm-leaders over the leaders: minAvailable 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q:\n%s", want, out)
		}
	}
	ctx := t.Context()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	perUD := map[string]int{}
	for _, n := range nodes.Items {
		perUD[n.Labels[fixture.UpgradeDomainLabel]]++
	}
	if diff := cmp.Diff(map[string]int{"demo-ud0": 2, "demo-ud1": 2, "demo-ud2": 2}, perUD); diff != "" {
		t.Errorf("nodes per domain (-want +got):\n%s", diff)
	}
	sets, err := dyn.Resource(fixture.LeaderWorkerSetGVR).Namespace("udrain-demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range sets.Items {
		names = append(names, o.GetName())
		if o.GetAnnotations()[fixture.LWSExclusiveTopologyAnnotation] != fixture.UpgradeDomainLabel {
			t.Errorf("LeaderWorkerSet %s: annotations %v, want exclusive topology on the domain label", o.GetName(), o.GetAnnotations())
		}
		if r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); r != 1 {
			t.Errorf("LeaderWorkerSet %s: %d replicas, want 1", o.GetName(), r)
		}
	}
	if diff := cmp.Diff([]string{"vllm-a", "vllm-b", "vllm-c"}, names); diff != "" {
		t.Errorf("LeaderWorkerSets (-want +got):\n%s", diff)
	}
	pdb, err := c.PolicyV1().PodDisruptionBudgets("udrain-demo").Get(ctx, "vllm-leaders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	leader := labels.Set{servingLabel: "vllm", fixture.LWSNameLabel: "vllm-b", fixture.LWSWorkerIndexLabel: "0"}
	worker := labels.Set{servingLabel: "vllm", fixture.LWSNameLabel: "vllm-b", fixture.LWSWorkerIndexLabel: "1"}
	if pdb.Spec.MinAvailable.IntValue() != 2 || !sel.Matches(leader) || sel.Matches(worker) {
		t.Errorf("PDB minAvailable %s, selector %s: want 2 over the leaders of the three", pdb.Spec.MinAvailable.String(), sel)
	}

	// What a rollout leaves: nodes marked upgraded.
	n := nodes.Items[0]
	n.Annotations["udrain.dev/upgraded-by"] = "udrain-0123456789"
	if _, err := c.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = deploy()
	if err != nil {
		t.Fatalf("second deploy: %v\n%s", err, out)
	}
	for _, want := range []string{"deleting namespace udrain-demo of the previous run", "deleting the 6 nodes of the previous run"} {
		if !strings.Contains(out, want) {
			t.Errorf("second deploy's output has no %q:\n%s", want, out)
		}
	}
	got, err := c.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Annotations["udrain.dev/upgraded-by"]; ok {
		t.Errorf("node %s still marked upgraded-by %q after a new deploy", n.Name, v)
	}
}

func TestStatus(t *testing.T) {
	pdb := func(healthy int32, observed int64) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "vllm-leaders", Generation: 1},
			Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: healthy, DisruptionsAllowed: max(healthy-2, 0), ObservedGeneration: observed},
		}
	}
	whole := fixture.GroupStatus{Size: 2, Members: 2, ReadyMembers: 2, LeaderReady: true}
	gated := fixture.GroupStatus{Size: 2, Members: 2, ReadyMembers: 2}
	for _, tc := range []struct {
		name     string
		groups   []fixture.GroupStatus
		pdb      *policyv1.PodDisruptionBudget
		want     string
		wantDone bool
	}{
		{"healthy", []fixture.GroupStatus{whole, whole, whole}, pdb(3, 1),
			"3/3 groups healthy (6 pods, 6 with ready containers); PodDisruptionBudget vllm-leaders: 3 healthy, allows 1 disruption(s)", true},
		{"a leader waits for its gate", []fixture.GroupStatus{whole, whole, gated}, pdb(2, 1),
			"2/3 groups healthy (6 pods, 6 with ready containers); PodDisruptionBudget vllm-leaders: 2 healthy, allows 0 disruption(s)", false},
		{"budget behind", []fixture.GroupStatus{whole, whole, whole}, pdb(2, 1),
			"3/3 groups healthy (6 pods, 6 with ready containers); PodDisruptionBudget vllm-leaders: 2 healthy, allows 0 disruption(s)", false},
		{"budget spec not observed", []fixture.GroupStatus{whole, whole, whole}, pdb(3, 0),
			"3/3 groups healthy (6 pods, 6 with ready containers); PodDisruptionBudget vllm-leaders: 3 healthy, allows 1 disruption(s)", false},
		{"a group missing", []fixture.GroupStatus{whole, whole}, pdb(2, 1),
			"2/3 groups healthy (4 pods, 4 with ready containers); PodDisruptionBudget vllm-leaders: 2 healthy, allows 0 disruption(s)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, done := status(tc.groups, tc.pdb, 3)
			if got != tc.want || done != tc.wantDone {
				t.Errorf("status = %q, %v\nwant       %q, %v", got, done, tc.want, tc.wantDone)
			}
		})
	}
}

// member is a pod of group g of workload vllm on node, Ready or not.
func member(g, worker int, node string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	lws := lwsName(g)
	name := lws + "-0"
	if worker > 0 {
		name = lws + "-0-1"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{
			fixture.LWSNameLabel: lws, fixture.LWSGroupIndexLabel: "0", fixture.LWSWorkerIndexLabel: []string{"0", "1"}[worker],
		}, Annotations: map[string]string{fixture.LWSSizeAnnotation: "2"}},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.ContainersReady, Status: st}, {Type: corev1.PodReady, Status: st}}},
	}
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// TestObserve replays recordings of two groups in two domains (a and b):
// what udrain does, what a node-by-node drain of everything at once does,
// and a drain that takes the worker first.
func TestObserve(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n-a", Labels: map[string]string{fixture.UpgradeDomainLabel: "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n-b", Labels: map[string]string{fixture.UpgradeDomainLabel: "b"}}},
	}
	t0 := time.Unix(1000, 0)
	start := []fixture.PodEvent{
		{At: t0, Type: watch.Added, Pod: member(0, 0, "n-a", true)},
		{At: t0, Type: watch.Added, Pod: member(0, 1, "n-a", true)},
		{At: t0, Type: watch.Added, Pod: member(1, 0, "n-b", true)},
		{At: t0, Type: watch.Added, Pod: member(1, 1, "n-b", true)},
	}
	at := func(s int, typ watch.EventType, p *corev1.Pod) fixture.PodEvent {
		return fixture.PodEvent{At: t0.Add(time.Duration(s) * time.Second), Type: typ, Pod: p}
	}
	// One group drained, replaced and Ready again.
	drainGroup := func(g int, node string, s int, leaderFirst bool) []fixture.PodEvent {
		first, second := member(g, 0, node, true), member(g, 1, node, true)
		if !leaderFirst {
			first, second = second, first
		}
		return []fixture.PodEvent{
			at(s, watch.Modified, terminating(first)),
			at(s+1, watch.Modified, terminating(second)),
			at(s+2, watch.Deleted, terminating(first)),
			at(s+2, watch.Deleted, terminating(second)),
			at(s+3, watch.Added, member(g, 0, node, true)),
			at(s+3, watch.Added, member(g, 1, node, true)),
		}
	}
	for _, tc := range []struct {
		name         string
		events       []fixture.PodEvent
		wantDisrupt  map[int]int
		wantMin      int
		wantOrder    string
		wantProblems []string
	}{
		{
			name:        "one domain at a time, leaders first",
			events:      append(append(append([]fixture.PodEvent{}, start...), drainGroup(0, "n-a", 10, true)...), drainGroup(1, "n-b", 20, true)...),
			wantDisrupt: map[int]int{0: 1, 1: 1}, wantMin: 1, wantOrder: "a: leader, worker; b: leader, worker",
		},
		{
			name: "both domains at once",
			events: append(append([]fixture.PodEvent{}, start...),
				at(10, watch.Modified, terminating(member(0, 0, "n-a", true))),
				at(10, watch.Modified, terminating(member(1, 0, "n-b", true)))),
			wantDisrupt: map[int]int{0: 1, 1: 1}, wantMin: 0, wantOrder: "a: leader; b: leader",
			wantProblems: []string{"only 0 of 2 groups healthy at one moment (the budget keeps 1)"},
		},
		{
			name:        "worker first",
			events:      append(append([]fixture.PodEvent{}, start...), drainGroup(0, "n-a", 10, false)...),
			wantDisrupt: map[int]int{0: 1}, wantMin: 1, wantOrder: "a: worker, leader",
			wantProblems: []string{"domain a: worker vllm-a-0-1 evicted before leader vllm-a-0"},
		},
		{
			name:        "the initial listing is not a disruption",
			events:      start,
			wantDisrupt: map[int]int{}, wantMin: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := observe(tc.events, t0.Add(time.Second), nodes, lwsView([]fixture.LeaderWorkerSet{{Name: "vllm-a", Size: 2}, {Name: "vllm-b", Size: 2}}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantDisrupt, o.Disruptions); diff != "" {
				t.Errorf("disruptions (-want +got):\n%s", diff)
			}
			if o.MinHealthy != tc.wantMin {
				t.Errorf("fewest healthy %d, want %d", o.MinHealthy, tc.wantMin)
			}
			if got := o.order(); got != tc.wantOrder {
				t.Errorf("order %q, want %q", got, tc.wantOrder)
			}
			if diff := cmp.Diff(tc.wantProblems, o.problems(1)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeployRay: with --workload ray, deploy installs KubeRay's CRDs from
// --kuberay-dir, the budget over the heads, and three RayClusters of a head
// and two 8-GPU hosts.
func TestDeployRay(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range fixture.KubeRayCRDFiles {
		crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + strings.TrimSuffix(strings.TrimPrefix(f, "ray.io_"), ".yaml") + ".ray.io\n"
		if err := os.WriteFile(filepath.Join(dir, "crds", f), []byte(crd), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList", fixture.RayClusterGVR: "RayClusterList",
	})
	// fixture.InstallCRDs applies them server-side, which creates them on
	// an API server; the fake's apply patch needs the object to exist.
	dyn.PrependReactor("patch", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(a.(k8stesting.PatchAction).GetPatch()); err != nil {
			return true, nil, err
		}
		err := dyn.Tracker().Create(crdGVR, obj, "")
		if apierrors.IsAlreadyExists(err) {
			err = dyn.Tracker().Update(crdGVR, obj, "")
		}
		return true, obj, err
	})
	// The API server establishes a CRD; the fake does not.
	dyn.PrependReactor("get", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": a.(k8stesting.GetAction).GetName()},
			"status":   map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}},
		}}
		return true, crd, nil
	})
	kube := fakeCluster()
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"deploy", "--workload", "ray", "--kuberay-dir", dir}, &out, &errOut,
		func(string) (clients, error) { return clients{kube: kube, dyn: dyn}, nil })
	if err != nil {
		t.Fatalf("deploy: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"KubeRay's CRDs installed",
		"3 RayClusters in udrain-demo: ray-0..ray-2, each a head and one replica of 2 hosts (8 GPUs each, numOfHosts 2)",
		"PodDisruptionBudget ray-heads over the heads: minAvailable 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output has no %q:\n%s", want, out.String())
		}
	}
	crds, err := dyn.Resource(crdGVR).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(crds.Items) != 3 {
		t.Errorf("CRDs: %v, %v; want 3", crds, err)
	}
	rcs, err := dyn.Resource(fixture.RayClusterGVR).Namespace("udrain-demo").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(rcs.Items) != 3 {
		t.Fatalf("RayClusters: %v, %v; want 3", rcs, err)
	}
	if _, err := kube.PolicyV1().PodDisruptionBudgets("udrain-demo").Get(t.Context(), "ray-heads", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}

	err = run(t.Context(), []string{"deploy", "--workload", "ray"}, &out, &errOut,
		func(string) (clients, error) { return clients{kube: kube, dyn: dyn}, nil })
	if err == nil || !strings.Contains(err.Error(), "--kuberay-dir") {
		t.Errorf("deploy without --kuberay-dir: %v, want an error naming the flag", err)
	}
}

// dryRunsDefaulted makes dyn answer a dry-run create of a LeaderWorkerSet
// as the API server does with LWS's webhook: the object defaulted
// (spec.networkConfig), not stored. The fake would store it.
func dryRunsDefaulted(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependReactor("create", "leaderworkersets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateActionImpl)
		if len(create.CreateOptions.DryRun) == 0 {
			return false, nil, nil
		}
		got := create.GetObject().(*unstructured.Unstructured).DeepCopy()
		if err := unstructured.SetNestedField(got.Object, "Shared", "spec", "networkConfig", "subdomainPolicy"); err != nil {
			return true, nil, err
		}
		return true, got, nil
	})
}
