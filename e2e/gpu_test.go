package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/gpu"
)

// TestGPUDiagnosisMatchesDaemonSetController checks the gpu package against
// the real DaemonSet controller, on the production case behind it: GPU nodes
// tainted dedicated=gpu:NoSchedule whose device plugin DaemonSet tolerates
// only nvidia.com/gpu, so nothing advertises their GPUs.
//
//   - For every node, DiagnoseDaemonSet's CanRun is whether the controller
//     made a pod there (and desiredNumberScheduled counts the same nodes),
//     before and after the fix.
//   - ClassifyNode calls the tainted GPU node ResourceMissing; the diagnosis
//     names the untolerated taint and suggests its toleration.
//   - The diagnosis' Fix (a kubectl JSON patch), applied as it is, makes the
//     controller place pods on the two GPU nodes and nowhere else.
//   - Once the node advertises nvidia.com/gpu, ClassifyNode calls it Ready.
func TestGPUDiagnosisMatchesDaemonSetController(t *testing.T) {
	tt := bed.ForTest(t)
	ctx := t.Context()
	c := tt.Client

	gpuLabels := map[string]string{
		"feature.node.kubernetes.io/pci-10de.present": "true",
		fixture.GPUPresentLabel:                       "true",
		fixture.GPUProductLabel:                       "NVIDIA-H100-80GB-HBM3",
		fixture.GPUCountLabel:                         "8",
	}
	dedicated := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	gpu01, gpu02, cpu01, gpu03 := tt.Name+"-gpu-01", tt.Name+"-gpu-02", tt.Name+"-cpu-01", tt.Name+"-gpu-03"
	for _, n := range []*corev1.Node{
		poolNode(tt, gpu01, gpuLabels, dedicated),
		poolNode(tt, gpu02, gpuLabels, dedicated),
		poolNode(tt, cpu01, nil),
		poolNode(tt, gpu03, map[string]string{fixture.GPUPresentLabel: "false"}),
	} {
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{gpu01, gpu02, cpu01, gpu03}
	// A node is created with the not-ready taint (TaintNodesByCondition);
	// the node lifecycle controller lifts it once kwok reports Ready. Only
	// then are the taints the ones this test is about.
	waitNodesSettled(t, c, names)

	// The pool label keeps the DaemonSet off other tests' GPU nodes, which
	// share the cluster; the rest is NVIDIA's chart with a toleration that
	// misses the nodes' taint.
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-device-plugin", Namespace: tt.Name},
		Spec: appsv1.DaemonSetSpec{
			Selector: metav1.SetAsLabelSelector(map[string]string{"app": "nvidia-device-plugin"}),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nvidia-device-plugin"}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{fixture.GPUPresentLabel: "true", fixture.PoolLabel: tt.Name},
					Tolerations: []corev1.Toleration{{
						Key: string(fixture.GPUResource), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}},
					Containers:                   []corev1.Container{{Name: "nvidia-device-plugin-ctr", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
					AutomountServiceAccountToken: new(false),
				},
			},
		},
	}
	ds, err := c.AppsV1().DaemonSets(tt.Name).Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Before the fix: nothing can run anywhere, for a reason per node.
	ds = checkDaemonSetPlacement(t, tt, ds.Name, names, nil)
	nodes := getNodes(t, c, names)
	for _, name := range []string{cpu01, gpu03} {
		d := gpu.DiagnoseDaemonSet(ds, nodes[name])
		if d.SelectsNode || len(d.NodeSelectorMismatches) != 1 || d.NodeSelectorMismatches[0].Key != fixture.GPUPresentLabel {
			t.Errorf("%s: diagnosis selects node %t, nodeSelector mismatches %+v; want the one on %s", name, d.SelectsNode, d.NodeSelectorMismatches, fixture.GPUPresentLabel)
		}
	}
	var diag gpu.Diagnosis
	for _, name := range []string{gpu01, gpu02} {
		d := gpu.DiagnoseDaemonSet(ds, nodes[name])
		if !d.SelectsNode || d.Vendor != gpu.VendorNVIDIA {
			t.Errorf("%s: selects node %t, vendor %q; want true, %q", name, d.SelectsNode, d.Vendor, gpu.VendorNVIDIA)
		}
		if diff := cmp.Diff([]corev1.Taint{dedicated}, d.UntoleratedTaints); diff != "" {
			t.Errorf("%s: untolerated taints (-want +got):\n%s", name, diff)
		}
		want := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		if diff := cmp.Diff(want, d.SuggestedTolerations); diff != "" {
			t.Errorf("%s: suggested tolerations (-want +got):\n%s", name, diff)
		}
		if !slices.ContainsFunc(d.Findings, func(f gpu.Finding) bool {
			return f.Code == gpu.FindingUntoleratedTaint && strings.Contains(f.Message, "dedicated=gpu:NoSchedule")
		}) {
			t.Errorf("%s: no finding names the taint dedicated=gpu:NoSchedule: %+v", name, d.Findings)
		}
		if name == gpu01 {
			diag = d
		}
	}
	cl := gpu.ClassifyNode(nodes[gpu01], gpu.Options{GracePeriod: -1})
	if cl.Status != gpu.StatusResourceMissing || cl.Product != "NVIDIA-H100-80GB-HBM3" || cl.Count != 8 || !cl.Dedicated {
		t.Errorf("%s classified %s, product %q, %d GPUs, dedicated %t; want ResourceMissing, NVIDIA-H100-80GB-HBM3, 8, true (findings %+v)",
			gpu01, cl.Status, cl.Product, cl.Count, cl.Dedicated, cl.Findings)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Apply the fix exactly as the diagnosis words it.
	patch, err := jsonPatchOfFix(diag.Fix, tt.Name, ds.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("applying %s", diag.Fix)
	if _, err := c.AppsV1().DaemonSets(tt.Name).Patch(ctx, ds.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("the diagnosis' fix does not apply: %v", err)
	}
	ds = checkDaemonSetPlacement(t, tt, ds.Name, names, []string{gpu01, gpu02})
	nodes = getNodes(t, c, names)
	for _, name := range []string{gpu01, gpu02} {
		if d := gpu.DiagnoseDaemonSet(ds, nodes[name]); !d.CanRun || len(d.Findings) != 0 {
			t.Errorf("%s after the fix: CanRun %t, findings %+v; want true, none", name, d.CanRun, d.Findings)
		}
	}

	// The device plugin registers: the node advertises its eight GPUs.
	eight := resource.MustParse("8")
	status, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    corev1.ResourceList{fixture.GPUResource: eight},
		"allocatable": corev1.ResourceList{fixture.GPUResource: eight},
	}})
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.CoreV1().Nodes().Patch(ctx, gpu01, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if cl := gpu.ClassifyNode(node, gpu.Options{GracePeriod: -1}); cl.Status != gpu.StatusReady || cl.Allocatable != 8 {
		t.Errorf("%s advertising 8 GPUs classified %s with %d allocatable, want Ready with 8 (findings %+v)", gpu01, cl.Status, cl.Allocatable, cl.Findings)
	}
}

// poolNode is a kwok node of the test's pool (deleted with it) with labels
// and taints and no GPU resource.
func poolNode(tt *testbed.Test, name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	l := map[string]string{fixture.PoolLabel: tt.Name, corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	for k, v := range labels {
		l[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{fixture.KwokNodeAnnotation: "fake"}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
}

// waitNodesSettled waits until every node is Ready and carries no
// node.kubernetes.io/ taint.
func waitNodesSettled(t *testing.T, c kubernetes.Interface, names []string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				if ctx.Err() == nil {
					last = err.Error()
				}
				return false, nil
			}
			if !nodeIsReady(n) {
				last = name + " not Ready"
				return false, nil
			}
			for _, taint := range n.Spec.Taints {
				if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
					last = fmt.Sprintf("%s still has taint %s", name, taint.ToString())
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("nodes not settled: %s", last)
	}
}

func nodeIsReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func getNodes(t *testing.T, c kubernetes.Interface, names []string) map[string]*corev1.Node {
	t.Helper()
	out := map[string]*corev1.Node{}
	for _, name := range names {
		n, err := c.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// checkDaemonSetPlacement waits until the DaemonSet controller has acted on
// the DaemonSet's current generation and its pods sit on exactly want, then
// checks that gpu.DiagnoseDaemonSet says CanRun for exactly those nodes
// among names. It returns the DaemonSet as the controller last saw it.
func checkDaemonSetPlacement(t *testing.T, tt *testbed.Test, name string, names, want []string) *appsv1.DaemonSet {
	t.Helper()
	slices.Sort(want)
	var ds *appsv1.DaemonSet
	var placed []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		ds, err = tt.Client.AppsV1().DaemonSets(tt.Name).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := tt.Client.CoreV1().Pods(tt.Name).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		placed = nil
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				placed = append(placed, daemonPodNode(&p))
			}
		}
		slices.Sort(placed)
		return ds.Status.ObservedGeneration >= ds.Generation && int(ds.Status.DesiredNumberScheduled) == len(want) &&
			slices.Equal(placed, want), nil
	})
	if err != nil {
		t.Fatalf("DaemonSet %s (generation %d, observed %d, desiredNumberScheduled %d) has pods on %q, want %q",
			name, ds.Generation, ds.Status.ObservedGeneration, ds.Status.DesiredNumberScheduled, placed, want)
	}
	for _, n := range getNodes(t, tt.Client, names) {
		d := gpu.DiagnoseDaemonSet(ds, n)
		if controller := slices.Contains(want, n.Name); d.CanRun != controller {
			t.Errorf("node %s: DiagnoseDaemonSet says CanRun %t, the DaemonSet controller placed a pod there: %t (findings %+v)", n.Name, d.CanRun, controller, d.Findings)
		}
	}
	return ds
}

// daemonPodNode is the node a DaemonSet pod is for: the controller pins it
// with a required node affinity on metadata.name before it is scheduled.
func daemonPodNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

// jsonPatchOfFix takes the JSON patch out of a diagnosis' Fix, a command of
// the form kubectl -n NS patch daemonset NAME --type=json -p 'PATCH', after
// checking that it names the DaemonSet.
func jsonPatchOfFix(fix, namespace, name string) ([]byte, error) {
	prefix := fmt.Sprintf("kubectl -n %s patch daemonset %s --type=json -p '", namespace, name)
	patch, ok := strings.CutPrefix(fix, prefix)
	if !ok || !strings.HasSuffix(patch, "'") {
		return nil, fmt.Errorf("fix %q is not %s...'", fix, prefix)
	}
	patch = strings.TrimSuffix(patch, "'")
	if !json.Valid([]byte(patch)) {
		return nil, fmt.Errorf("fix %q: the patch is not JSON", fix)
	}
	return []byte(patch), nil
}
