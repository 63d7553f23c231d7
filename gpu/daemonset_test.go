package gpu

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// diagnosisVerdict is what a table row asserts of a Diagnosis.
type diagnosisVerdict struct {
	CanRun                 bool
	UntoleratedTaints      []corev1.Taint
	SuggestedTolerations   []corev1.Toleration
	NodeSelectorMismatches []Mismatch
	AffinityMismatches     []Mismatch
	Findings               []FindingCode
}

func diagnosisVerdictOf(d Diagnosis) diagnosisVerdict {
	v := diagnosisVerdict{
		CanRun: d.CanRun, UntoleratedTaints: d.UntoleratedTaints, SuggestedTolerations: d.SuggestedTolerations,
		NodeSelectorMismatches: d.NodeSelectorMismatches, AffinityMismatches: d.AffinityMismatches,
	}
	for _, f := range d.Findings {
		v.Findings = append(v.Findings, f.Code)
	}
	return v
}

func withSelector(ds *appsv1.DaemonSet, sel map[string]string) *appsv1.DaemonSet {
	ds.Spec.Template.Spec.NodeSelector = sel
	return ds
}

func withRequiredAffinity(ds *appsv1.DaemonSet, terms ...corev1.NodeSelectorTerm) *appsv1.DaemonSet {
	ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
	return ds
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestDiagnoseDaemonSet(t *testing.T) {
	dedicatedGPU := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	gpuNode := func(opts ...nodeOption) *corev1.Node {
		return newNode("gpu-01", map[string]string{
			"node-role.kubernetes.io/gpu":                 "",
			"feature.node.kubernetes.io/pci-10de.present": "true",
			"nvidia.com/gpu.present":                      "true",
		}, opts...)
	}
	tainted := withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		node *corev1.Node
		want diagnosisVerdict
	}{
		{
			// The incident this package exists for: the GPU node is
			// tainted, the device plugin does not tolerate it.
			name: "dedicated=gpu:NoSchedule without a toleration",
			ds:   devicePluginDS(),
			node: gpuNode(tainted),
			want: diagnosisVerdict{
				UntoleratedTaints:    []corev1.Taint{dedicatedGPU},
				SuggestedTolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				Findings:             []FindingCode{FindingUntoleratedTaint},
			},
		},
		{
			name: "the Helm chart's default toleration is for another taint",
			ds:   devicePluginDS(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			node: gpuNode(tainted),
			want: diagnosisVerdict{
				UntoleratedTaints:    []corev1.Taint{dedicatedGPU},
				SuggestedTolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				Findings:             []FindingCode{FindingUntoleratedTaint},
			},
		},
		{
			name: "fixed as in the runbook: tolerations[0] dedicated=gpu",
			ds:   devicePluginDS(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}),
			node: gpuNode(tainted),
			want: diagnosisVerdict{CanRun: true},
		},
		{
			name: "a toleration with the wrong value does not tolerate",
			ds:   devicePluginDS(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cpu", Effect: corev1.TaintEffectNoSchedule}),
			node: gpuNode(tainted),
			want: diagnosisVerdict{
				UntoleratedTaints:    []corev1.Taint{dedicatedGPU},
				SuggestedTolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				Findings:             []FindingCode{FindingUntoleratedTaint},
			},
		},
		{
			name: "operator Exists without a key tolerates everything",
			ds:   devicePluginDS(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			node: gpuNode(tainted, withTaint("nvidia.com/gpu", "", corev1.TaintEffectNoExecute)),
			want: diagnosisVerdict{CanRun: true},
		},
		{
			name: "NoExecute taint without value: an Exists toleration is suggested; PreferNoSchedule is ignored",
			ds:   devicePluginDS(),
			node: gpuNode(withTaint("nvidia.com/gpu", "", corev1.TaintEffectNoExecute), withTaint("soft", "x", corev1.TaintEffectPreferNoSchedule)),
			want: diagnosisVerdict{
				UntoleratedTaints:    []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoExecute}},
				SuggestedTolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
				Findings:             []FindingCode{FindingUntoleratedTaint},
			},
		},
		{
			name: "node-condition taints and cordons are tolerated by every daemon pod",
			ds:   devicePluginDS(),
			node: gpuNode(cordoned(),
				withTaint("node.kubernetes.io/unschedulable", "", corev1.TaintEffectNoSchedule),
				withTaint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoExecute),
				withTaint("node.kubernetes.io/memory-pressure", "", corev1.TaintEffectNoSchedule)),
			want: diagnosisVerdict{CanRun: true},
		},
		{
			name: "network-unavailable is tolerated only by host-network daemon pods",
			ds:   devicePluginDS(),
			node: gpuNode(withTaint("node.kubernetes.io/network-unavailable", "", corev1.TaintEffectNoSchedule)),
			want: diagnosisVerdict{
				UntoleratedTaints:    []corev1.Taint{{Key: "node.kubernetes.io/network-unavailable", Effect: corev1.TaintEffectNoSchedule}},
				SuggestedTolerations: []corev1.Toleration{{Key: "node.kubernetes.io/network-unavailable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Findings:             []FindingCode{FindingUntoleratedTaint},
			},
		},
		{
			name: "Gt toleration needs an alpha feature gate",
			ds:   devicePluginDS(corev1.Toleration{Key: "gpu-generation", Operator: corev1.TolerationOpGt, Value: "7", Effect: corev1.TaintEffectNoSchedule}),
			node: gpuNode(withTaint("gpu-generation", "9", corev1.TaintEffectNoSchedule)),
			want: diagnosisVerdict{
				UntoleratedTaints:    []corev1.Taint{{Key: "gpu-generation", Value: "9", Effect: corev1.TaintEffectNoSchedule}},
				SuggestedTolerations: []corev1.Toleration{{Key: "gpu-generation", Operator: corev1.TolerationOpEqual, Value: "9", Effect: corev1.TaintEffectNoSchedule}},
				Findings:             []FindingCode{FindingUntoleratedTaint},
			},
		},
		{
			name: "GPU Operator nodeSelector the node does not carry",
			ds:   withSelector(devicePluginDS(), map[string]string{"nvidia.com/gpu.deploy.device-plugin": "true", "kubernetes.io/os": "linux"}),
			node: gpuNode(func(n *corev1.Node) { n.Labels["kubernetes.io/os"] = "linux" }),
			want: diagnosisVerdict{
				NodeSelectorMismatches: []Mismatch{{
					Path:        `spec.template.spec.nodeSelector["nvidia.com/gpu.deploy.device-plugin"]`,
					Requirement: "nvidia.com/gpu.deploy.device-plugin=true", Key: "nvidia.com/gpu.deploy.device-plugin",
				}},
				Findings: []FindingCode{FindingNodeSelectorMismatch},
			},
		},
		{
			name: "nodeSelector with another value",
			ds:   withSelector(devicePluginDS(), map[string]string{"nvidia.com/gpu.deploy.device-plugin": "true"}),
			node: gpuNode(func(n *corev1.Node) { n.Labels["nvidia.com/gpu.deploy.device-plugin"] = "false" }),
			want: diagnosisVerdict{
				NodeSelectorMismatches: []Mismatch{{
					Path:        `spec.template.spec.nodeSelector["nvidia.com/gpu.deploy.device-plugin"]`,
					Requirement: "nvidia.com/gpu.deploy.device-plugin=true", Key: "nvidia.com/gpu.deploy.device-plugin", NodeHasKey: true, NodeValue: "false",
				}},
				Findings: []FindingCode{FindingNodeSelectorMismatch},
			},
		},
		{
			name: "required affinity: every failing requirement of every term is named",
			ds: withRequiredAffinity(devicePluginDS(),
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					expr("feature.node.kubernetes.io/pci-10de.present", corev1.NodeSelectorOpIn, "true"),
					expr("nvidia.com/gpu.count", corev1.NodeSelectorOpGt, "0"),
				}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					expr("nvidia.com/gpu.present", corev1.NodeSelectorOpNotIn, "true"),
				}},
			),
			node: gpuNode(),
			want: diagnosisVerdict{
				AffinityMismatches: []Mismatch{
					{Path: pathRequired + ".nodeSelectorTerms[0].matchExpressions[1]", Requirement: "nvidia.com/gpu.count Gt [0]", Key: "nvidia.com/gpu.count"},
					{Path: pathRequired + ".nodeSelectorTerms[1].matchExpressions[0]", Requirement: "nvidia.com/gpu.present NotIn [true]", Key: "nvidia.com/gpu.present", NodeHasKey: true, NodeValue: "true"},
				},
				Findings: []FindingCode{FindingNodeAffinityMismatch, FindingNodeAffinityMismatch},
			},
		},
		{
			name: "required affinity: one matching term is enough",
			ds: withRequiredAffinity(devicePluginDS(),
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("nvidia.com/gpu.count", corev1.NodeSelectorOpExists)}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("nvidia.com/gpu.present", corev1.NodeSelectorOpIn, "true")}},
			),
			node: gpuNode(),
			want: diagnosisVerdict{CanRun: true},
		},
		{
			name: "matchFields on the node name",
			ds: withRequiredAffinity(devicePluginDS(),
				corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "gpu-02")}}),
			node: gpuNode(),
			want: diagnosisVerdict{
				AffinityMismatches: []Mismatch{{Path: pathRequired + ".nodeSelectorTerms[0].matchFields[0]", Requirement: "metadata.name In [gpu-02]", Key: "metadata.name", NodeHasKey: true, NodeValue: "gpu-01"}},
				Findings:           []FindingCode{FindingNodeAffinityMismatch},
			},
		},
		{
			name: "an unparseable requirement matches nothing",
			ds: withRequiredAffinity(devicePluginDS(),
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("nvidia.com/gpu.present", corev1.NodeSelectorOpIn)}}),
			node: gpuNode(),
			want: diagnosisVerdict{
				AffinityMismatches: []Mismatch{{
					Path: pathRequired + ".nodeSelectorTerms[0].matchExpressions[0]", Requirement: "nvidia.com/gpu.present In []", Key: "nvidia.com/gpu.present", NodeHasKey: true, NodeValue: "true",
					Error: "Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
				}},
				Findings: []FindingCode{FindingInvalidNodeAffinity},
			},
		},
		{
			name: "nodeName pins another node",
			ds: func() *appsv1.DaemonSet {
				ds := devicePluginDS()
				ds.Spec.Template.Spec.NodeName = "gpu-02"
				return ds
			}(),
			node: gpuNode(),
			want: diagnosisVerdict{Findings: []FindingCode{FindingNodeNameMismatch}},
		},
		{
			name: "taint, selector and affinity fail together: all are reported",
			ds: withRequiredAffinity(withSelector(devicePluginDS(), map[string]string{"accelerator": "nvidia"}),
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("nvidia.com/gpu.present", corev1.NodeSelectorOpDoesNotExist)}}),
			node: gpuNode(tainted),
			want: diagnosisVerdict{
				UntoleratedTaints:      []corev1.Taint{dedicatedGPU},
				SuggestedTolerations:   []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				NodeSelectorMismatches: []Mismatch{{Path: `spec.template.spec.nodeSelector["accelerator"]`, Requirement: "accelerator=nvidia", Key: "accelerator"}},
				AffinityMismatches:     []Mismatch{{Path: pathRequired + ".nodeSelectorTerms[0].matchExpressions[0]", Requirement: "nvidia.com/gpu.present DoesNotExist", Key: "nvidia.com/gpu.present", NodeHasKey: true, NodeValue: "true"}},
				Findings:               []FindingCode{FindingNodeSelectorMismatch, FindingNodeAffinityMismatch, FindingUntoleratedTaint},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DiagnoseDaemonSet(tt.ds, tt.node)
			if diff := cmp.Diff(tt.want, diagnosisVerdictOf(d)); diff != "" {
				t.Errorf("DiagnoseDaemonSet mismatch (-want +got):\n%s", diff)
			}
			wantSelects := len(tt.want.NodeSelectorMismatches) == 0 && len(tt.want.AffinityMismatches) == 0 &&
				!slices.Contains(tt.want.Findings, FindingNodeNameMismatch)
			if d.SelectsNode != wantSelects {
				t.Errorf("SelectsNode = %v, want %v", d.SelectsNode, wantSelects)
			}
			if d.DaemonSet != "kube-system/nvdp-nvidia-device-plugin" || d.Node != "gpu-01" || d.Vendor != VendorNVIDIA {
				t.Errorf("identity = %q on %q vendor %q", d.DaemonSet, d.Node, d.Vendor)
			}
		})
	}
}

// TestDiagnoseDaemonSetFix checks the ready-to-paste fixes: the toleration
// in the message, and a JSON patch that, applied, makes the DaemonSet
// schedulable.
func TestDiagnoseDaemonSetFix(t *testing.T) {
	node := newNode("gpu-01", nil,
		withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule),
		withTaint("nvidia.com/gpu", "true", corev1.TaintEffectNoExecute))
	for _, existing := range [][]corev1.Toleration{nil, {{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}}} {
		ds := devicePluginDS(existing...)
		d := DiagnoseDaemonSet(ds, node)
		if d.CanRun || len(d.Findings) != 2 {
			t.Fatalf("want two untolerated taints, got %+v", d)
		}
		if want := `add this item to spec.template.spec.tolerations: - {key: "dedicated", operator: Equal, value: "gpu", effect: NoSchedule}`; !strings.Contains(d.Findings[0].Message, want) {
			t.Errorf("message %q lacks %q", d.Findings[0].Message, want)
		}
		if want := `value: "true"`; !strings.Contains(d.Findings[1].Message, want) {
			t.Errorf("message %q does not quote %q, so YAML would read a bool", d.Findings[1].Message, want)
		}
		prefix := "kubectl -n kube-system patch daemonset nvdp-nvidia-device-plugin --type=json -p '"
		if !strings.HasPrefix(d.Fix, prefix) || !strings.HasSuffix(d.Fix, "'") || d.Findings[0].Fix != d.Fix {
			t.Fatalf("Fix = %q", d.Fix)
		}
		patched := applyTolerationPatch(t, ds, strings.TrimSuffix(strings.TrimPrefix(d.Fix, prefix), "'"))
		if after := DiagnoseDaemonSet(patched, node); !after.CanRun {
			t.Errorf("after the suggested patch the DaemonSet still cannot run: %+v", after.Findings)
		}
		if len(patched.Spec.Template.Spec.Tolerations) != len(existing)+2 {
			t.Errorf("patch left %d tolerations, want %d", len(patched.Spec.Template.Spec.Tolerations), len(existing)+2)
		}
	}
}

// applyTolerationPatch applies the two JSON-patch shapes tolerationPatch
// emits (replace the list, append to it), as the API server would.
func applyTolerationPatch(t *testing.T, ds *appsv1.DaemonSet, patch string) *appsv1.DaemonSet {
	t.Helper()
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(patch), &ops); err != nil {
		t.Fatalf("patch %s is not JSON: %v", patch, err)
	}
	out := ds.DeepCopy()
	spec := &out.Spec.Template.Spec
	for _, op := range ops {
		switch {
		case op.Op == "add" && op.Path == "/spec/template/spec/tolerations":
			if len(spec.Tolerations) != 0 {
				t.Fatalf("patch replaces existing tolerations %v", spec.Tolerations)
			}
			if err := json.Unmarshal(op.Value, &spec.Tolerations); err != nil {
				t.Fatal(err)
			}
		case op.Op == "add" && op.Path == "/spec/template/spec/tolerations/-":
			if len(spec.Tolerations) == 0 {
				t.Fatal("patch appends to a missing array, which the API server rejects")
			}
			var tol corev1.Toleration
			if err := json.Unmarshal(op.Value, &tol); err != nil {
				t.Fatal(err)
			}
			spec.Tolerations = append(spec.Tolerations, tol)
		default:
			t.Fatalf("unexpected op %+v", op)
		}
	}
	return out
}

func TestDiagnoseDaemonSetLabelFixes(t *testing.T) {
	node := newNode("gpu-01", map[string]string{"nvidia.com/gpu.present": "true"})
	ds := withRequiredAffinity(withSelector(devicePluginDS(), map[string]string{"nvidia.com/gpu.deploy.device-plugin": "true"}),
		corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("node-role.kubernetes.io/gpu", corev1.NodeSelectorOpExists)}})
	d := DiagnoseDaemonSet(ds, node)
	var fixes []string
	for _, f := range d.Findings {
		fixes = append(fixes, f.Fix)
	}
	want := []string{
		"kubectl label node gpu-01 nvidia.com/gpu.deploy.device-plugin=true --overwrite",
		"kubectl label node gpu-01 node-role.kubernetes.io/gpu= --overwrite",
	}
	if diff := cmp.Diff(want, fixes); diff != "" {
		t.Errorf("fixes mismatch (-want +got):\n%s", diff)
	}
}

func TestDiagnoseDaemonSetNil(t *testing.T) {
	if d := DiagnoseDaemonSet(nil, newNode("n", nil)); d.CanRun {
		t.Error("nil DaemonSet can run")
	}
	if d := DiagnoseDaemonSet(devicePluginDS(), nil); d.CanRun {
		t.Error("DaemonSet can run on a nil node")
	}
}

func TestDevicePluginVendor(t *testing.T) {
	ds := func(name, image string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Image: image}},
			}}},
		}
	}
	tests := []struct {
		ds     *appsv1.DaemonSet
		want   Vendor
		wantOK bool
	}{
		{ds("nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"), VendorNVIDIA, true},
		{ds("nvidia-gpu-device-plugin-large-cos", "gke.gcr.io/nvidia-gpu-device-plugin@sha256:abc"), VendorNVIDIA, true},
		{ds("amdgpu-device-plugin-daemonset", "rocm/k8s-device-plugin:latest"), VendorAMD, true},
		{ds("intel-gpu-plugin", "intel/intel-gpu-plugin:0.32.0"), VendorIntel, true},
		{ds("habanalabs-device-plugin-daemonset", "vault.habana.ai/docker-k8s-device-plugin/docker-k8s-device-plugin:1.19.0"), VendorHabana, true},
		{ds("neuron-device-plugin-daemonset", "public.ecr.aws/neuron/neuron-device-plugin:2.22.4.0"), VendorAWSNeuron, true},
		{ds("tpu-device-plugin", "gke.gcr.io/tpu-device-plugin:v1"), VendorGoogleTPU, true},
		{ds("kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2"), "", false},
		{ds("nvidia-device-plugin-mps-control-daemon", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"), "", false},
		{ds("nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:4.0"), "", false},
		{ds("rdma-shared-dp-ds", "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin"), "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		got, ok := DevicePluginVendor(tt.ds)
		if got != tt.want || ok != tt.wantOK {
			name := "<nil>"
			if tt.ds != nil {
				name = tt.ds.Name
			}
			t.Errorf("DevicePluginVendor(%s) = %q, %v; want %q, %v", name, got, ok, tt.want, tt.wantOK)
		}
	}
}
