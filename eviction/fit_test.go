package eviction

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// withGPUs makes pod request n nvidia.com/gpu in one container.
func withGPUs(p *corev1.Pod, n int64) *corev1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q}}}}
	return p
}

// gpuFitPod is a pod of TestPlanGPUFit's domain, on node-1-<node>,
// requesting gpus nvidia.com/gpu.
type gpuFitPod struct {
	name string
	node int
	gpus int64
	// stays: a DaemonSet pod, left on its node.
	stays bool
	// deleted: deleted an hour ago, skipped (skip-wait-for-delete-timeout).
	deleted bool
}

// gpuFitPlan plans the drain of ud-1, two 8-GPU nodes with pods, ignoring
// DaemonSets and skipping pods deleted over a minute ago.
func gpuFitPlan(t *testing.T, pods []gpuFitPod) *Plan {
	t.Helper()
	var objs []runtime.Object
	daemonSets := []*appsv1.DaemonSet{}
	for i := range 2 {
		objs = append(objs, gpuNode(testNode(fmt.Sprintf("node-1-%d", i+1), "ud-1"), 8))
	}
	for _, p := range pods {
		owner := ownedBy("StatefulSet", p.name)
		if p.stays {
			owner = ownedBy("DaemonSet", p.name)
			daemonSets = append(daemonSets, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: p.name}})
		}
		pd := withGPUs(readyPod(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: p.name, UID: types.UID(p.name), OwnerReferences: owner},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-1-%d", p.node)},
		}), p.gpus)
		if p.deleted {
			pd.DeletionTimestamp = &metav1.Time{Time: snapshotOf(nil).Now.Add(-time.Hour)}
		}
		objs = append(objs, pd)
	}
	snap := snapshotOf(objs)
	snap.DaemonSets = daemonSets
	h := KubectlDefaults()
	h.IgnoreAllDaemonSets = true
	h.SkipWaitForDeleteTimeoutSeconds = 60
	plan, err := NewPlan("ud-1", snap, Options{Helper: h})
	if err != nil {
		t.Fatal(err)
	}
	if want := boolCount(slices.ContainsFunc(pods, func(p gpuFitPod) bool { return p.stays || p.deleted })); len(plan.Skipped) != want || len(plan.Refused) != 0 {
		t.Fatalf("skipped %v, refused %v; want %d skipped (the DaemonSet pod or the deleted one), none refused", plan.Skipped, plan.Refused, want)
	}
	return plan
}

// TestPlanGPUFit pins what the plan gives package gpu's fit check
// (gpu.Fits, tested there) on a domain of two 8-GPU nodes: the plan's pods
// come back, in the domain's order; the pods it leaves (DaemonSet pods)
// keep their GPUs unless they are being deleted (or have finished); and
// the Planned event's message carries the warning of a fit at risk.
func TestPlanGPUFit(t *testing.T) {
	ref := func(name string, node int) topology.PodRef {
		return topology.PodRef{Namespace: testNS, Name: name, UID: types.UID(name), Node: fmt.Sprintf("node-1-%d", node)}
	}
	nodes := func(free1, free2 int64) []gpu.NodeGPUs {
		return []gpu.NodeGPUs{{Node: "node-1-1", Allocatable: 8, Free: free1}, {Node: "node-1-2", Allocatable: 8, Free: free2}}
	}
	for _, tc := range []struct {
		name    string
		pods    []gpuFitPod
		want    []gpu.Fit
		warning string // what withFitWarning adds to the Planned event's message
	}{
		{
			name: "the plan's pods come back",
			pods: []gpuFitPod{{name: "llm-0", node: 1, gpus: 4}, {name: "llm-0-1", node: 2, gpus: 4}, {name: "web", node: 2}},
			want: []gpu.Fit{{Resource: "nvidia.com/gpu", Requested: 8, Free: 16, Nodes: nodes(8, 8)}},
		},
		{
			name: "a DaemonSet pod keeps its GPUs; they fragment the rest",
			pods: []gpuFitPod{{name: "llm-0", node: 1, gpus: 8}, {name: "llm-0-1", node: 2, gpus: 6}, {name: "agent", node: 2, gpus: 2, stays: true}},
			want: []gpu.Fit{{Resource: "nvidia.com/gpu", Requested: 14, Free: 14, Nodes: nodes(8, 6),
				SpreadUnplaced: []gpu.PodGPUs{{Pod: ref("llm-0", 1), GPUs: 8}}}},
			warning: "; GPU fit warning: nvidia.com/gpu: 14 requested, 14 free on 2 node(s); fragmentation risk: coming back smallest first, each onto the node with the most free, inference/llm-0 (8) finds no node",
		},
		{
			name: "a pod skipped as deleted long ago holds nothing",
			pods: []gpuFitPod{{name: "llm-0", node: 1, gpus: 8}, {name: "llm-0-1", node: 2, gpus: 8}, {name: "old", node: 2, gpus: 2, deleted: true}},
			want: []gpu.Fit{{Resource: "nvidia.com/gpu", Requested: 16, Free: 16, Nodes: nodes(8, 8)}},
		},
		{
			name: "what stays leaves too little",
			pods: []gpuFitPod{{name: "llm-0", node: 1, gpus: 8}, {name: "llm-0-1", node: 2, gpus: 8}, {name: "agent", node: 2, gpus: 1, stays: true}},
			want: []gpu.Fit{{Resource: "nvidia.com/gpu", Requested: 16, Free: 15, Nodes: nodes(8, 7),
				Unplaced: []gpu.PodGPUs{{Pod: ref("llm-0-1", 2), GPUs: 8}}}},
			warning: "; GPU fit warning: nvidia.com/gpu: 16 requested, 15 free on 2 node(s); they do not fit back: placed largest first, inference/llm-0-1 (8) finds no node",
		},
		{
			name: "no evicted pod requests GPUs",
			pods: []gpuFitPod{{name: "llm-0", node: 1}, {name: "agent", node: 2, gpus: 2, stays: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := gpuFitPlan(t, tc.pods)
			if diff := cmp.Diff(tc.want, plan.GPUFit); diff != "" {
				t.Errorf("GPUFit (-want +got):\n%s", diff)
			}
			if got := plan.withFitWarning(context.Background(), "planned"); got != "planned"+tc.warning {
				t.Errorf("withFitWarning =\n%q\nwant\n%q", got, "planned"+tc.warning)
			}
		})
	}
}

// boolCount is 1 for true, 0 for false.
func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Options.GPU reaches the plan: nodes whose device plugin advertises a
// resource package gpu does not know count, and fit, only when
// Options.GPU.ExtraResources names it.
func TestPlanGPUOptions(t *testing.T) {
	const npu corev1.ResourceName = "example.com/npu"
	var objs []runtime.Object
	for i := range 2 {
		n := testNode(fmt.Sprintf("node-1-%d", i+1), "ud-1")
		n.Status.Capacity = corev1.ResourceList{npu: resource.MustParse("8")}
		n.Status.Allocatable = corev1.ResourceList{npu: resource.MustParse("8")}
		objs = append(objs, n)
		q := resource.MustParse("8")
		objs = append(objs, readyPod(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: fmt.Sprintf("llm-%d", i), UID: types.UID(fmt.Sprintf("llm-%d", i)), OwnerReferences: ownedBy("StatefulSet", "llm")},
			Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{npu: q}, Limits: corev1.ResourceList{npu: q}}}}},
		}))
	}
	nodes := []gpu.NodeGPUs{{Node: "node-1-1", Allocatable: 8, Free: 8}, {Node: "node-1-2", Allocatable: 8, Free: 8}}
	for _, tc := range []struct {
		name     string
		opts     gpu.Options
		wantGPUs []gpu.Capacity
		wantFit  []gpu.Fit
	}{
		{name: "named in Options.GPU.ExtraResources", opts: gpu.Options{ExtraResources: map[corev1.ResourceName]gpu.Vendor{npu: "example"}},
			wantGPUs: []gpu.Capacity{{Vendor: "example", Product: "unknown", GPUs: 16, Nodes: 2}},
			wantFit:  []gpu.Fit{{Resource: npu, Requested: 16, Free: 16, Nodes: nodes}}},
		{name: "unknown without", wantGPUs: []gpu.Capacity{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := NewPlan("ud-1", snapshotOf(objs), Options{GPU: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantGPUs, plan.GPUs); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFit, plan.GPUFit); diff != "" {
				t.Errorf("GPUFit (-want +got):\n%s", diff)
			}
		})
	}
}
