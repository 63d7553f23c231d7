package gpu

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// readyUnknownSince makes a node Ready since an unknown time, so that a
// missing resource is ResourceMissing whatever the clock says (Losses
// classifies with the real one).
func readyUnknownSince(n *corev1.Node) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
}

// TestAdvertised: the allocatable GPUs of each GPU node, 0 when missing.
func TestAdvertised(t *testing.T) {
	nodes := []*corev1.Node{h100("n1", 8), h100("n2", 6), newNode("n3", gpuOperatorH100), mi300x("m1", 8), newNode("cpu", nfdCPU)}
	want := map[string]int64{"n1": 8, "n2": 6, "n3": 0, "m1": 8}
	if diff := cmp.Diff(want, Advertised(nodes, Options{})); diff != "" {
		t.Errorf("Advertised (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{}, Advertised(nil, Options{})); diff != "" {
		t.Errorf("Advertised(nil) (-want +got):\n%s", diff)
	}
}

// lossVerdict is what the table compares of a Loss: its numbers, its
// findings' codes and the DaemonSets diagnosed, in order, and whether
// they can run ("ns/name can run", "ns/name cannot run").
type lossVerdict struct {
	Node, Resource string
	Before, After  int64
	Findings       []FindingCode
	Diagnoses      []string
}

// lossVerdictOf returns the lossVerdict of l.
func lossVerdictOf(l Loss) lossVerdict {
	v := lossVerdict{Node: l.Node, Resource: string(l.Resource), Before: l.Before, After: l.After}
	for _, f := range l.Findings {
		v.Findings = append(v.Findings, f.Code)
	}
	for _, d := range l.Diagnoses {
		can := " can run"
		if !d.CanRun {
			can = " cannot run"
		}
		v.Diagnoses = append(v.Diagnoses, d.DaemonSet+can)
	}
	return v
}

// lossesCase is a case of TestLosses.
type lossesCase struct {
	name       string
	before     map[string]int64
	nodes      []*corev1.Node
	daemonSets []*appsv1.DaemonSet
	want       []lossVerdict
}

// lossesCases are TestLosses' cases, on H100 nodes tainted for GPU pods
// and an AMD node.
func lossesCases() []lossesCase {
	tolerating := devicePluginDS(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	tolerating.Name = "b-nvidia-plugin"
	intolerant := devicePluginDS()
	intolerant.Name = "a-nvidia-plugin"
	amdPlugin := devicePluginDS()
	amdPlugin.Name = "amd-plugin"
	amdPlugin.Spec.Template.Spec.Containers[0].Image = "docker.io/rocm/k8s-device-plugin:1.31.0.6"
	exporter := devicePluginDS()
	exporter.Name = "node-exporter"
	exporter.Spec.Template.Spec.Containers[0].Image = "quay.io/prometheus/node-exporter:v1.9.1"
	daemonSets := []*appsv1.DaemonSet{tolerating, amdPlugin, exporter, intolerant}

	tainted := withTaint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)
	lost := func(name string, alloc int64) *corev1.Node {
		n := newNode(name, gpuOperatorH100, withResource("nvidia.com/gpu", 8, alloc), tainted)
		readyUnknownSince(n)
		return n
	}
	return []lossesCase{
		{
			name:   "every GPU back",
			before: map[string]int64{"n1": 8, "n2": 8},
			nodes:  []*corev1.Node{h100("n1", 8), h100("n2", 8), newNode("cpu", nfdCPU)},
		},
		{
			name:   "a node with fewer GPUs than before, in the nodes' order",
			before: map[string]int64{"n1": 8, "n2": 8},
			nodes:  []*corev1.Node{lost("n2", 6), lost("n1", 0)},
			want: []lossVerdict{
				{Node: "n2", Resource: "nvidia.com/gpu", Before: 8, After: 6, Findings: []FindingCode{FindingUnhealthyDevices, FindingCountMismatch}},
				{Node: "n1", Resource: "nvidia.com/gpu", Before: 8, After: 0, Findings: []FindingCode{FindingResourceMissing, FindingAllocatableZero}},
			},
		},
		{
			name:   "more GPUs than before is no loss",
			before: map[string]int64{"n1": 4},
			nodes:  []*corev1.Node{h100("n1", 8)},
		},
		{
			name:   "a node whose GPUs were missing before is not the upgrade's loss",
			before: map[string]int64{"n1": 0},
			nodes:  []*corev1.Node{lost("n1", 0)},
		},
		{
			name:  "a node before does not name should have what its labels count",
			nodes: []*corev1.Node{lost("n1", 0), h100("n2", 8)},
			want: []lossVerdict{
				{Node: "n1", Resource: "nvidia.com/gpu", Before: 8, After: 0, Findings: []FindingCode{FindingResourceMissing, FindingAllocatableZero}},
			},
		},
		{
			// Not against AMD's plugin, nor against a DaemonSet that is
			// no device plugin.
			name:       "diagnosed against the device plugins of the node's vendor, by name",
			before:     map[string]int64{"n1": 8},
			nodes:      []*corev1.Node{lost("n1", 0)},
			daemonSets: daemonSets,
			want: []lossVerdict{
				{Node: "n1", Resource: "nvidia.com/gpu", Before: 8, After: 0, Findings: []FindingCode{FindingResourceMissing, FindingAllocatableZero},
					Diagnoses: []string{"kube-system/a-nvidia-plugin cannot run", "kube-system/b-nvidia-plugin can run"}},
			},
		},
		{
			name:       "an AMD node is not diagnosed against NVIDIA's plugins",
			before:     map[string]int64{"m1": 8},
			nodes:      []*corev1.Node{mi300x("m1", 4)},
			daemonSets: []*appsv1.DaemonSet{tolerating},
			want: []lossVerdict{
				{Node: "m1", Resource: "amd.com/gpu", Before: 8, After: 4, Findings: []FindingCode{FindingUnhealthyDevices, FindingCountMismatch}},
			},
		},
	}
}

// TestLosses: the nodes that came back with fewer GPUs than before (or
// than their labels count, when before does not name them), and their
// diagnoses.
func TestLosses(t *testing.T) {
	for _, tc := range lossesCases() {
		t.Run(tc.name, func(t *testing.T) {
			losses := Losses(tc.before, tc.nodes, tc.daemonSets, Options{})
			var got []lossVerdict
			for _, l := range losses {
				got = append(got, lossVerdictOf(l))
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Losses (-want +got):\n%s", diff)
			}
		})
	}
}
