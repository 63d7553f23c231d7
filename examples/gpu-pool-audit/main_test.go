package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/gpu"
)

func node(name string, labels map[string]string, gpus int64, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			}},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("31")},
		},
	}
	if gpus > 0 {
		n.Status.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		n.Status.Allocatable["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return n
}

func daemonSet(ns, name, image string, tolerations ...corev1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations: tolerations,
			Containers:  []corev1.Container{{Name: "c", Image: image}},
		}}},
	}
}

// cluster is the seed incident: gpu-02 was tainted dedicated=gpu after the
// device plugin was installed with only the chart's default toleration.
func cluster() []runtime.Object {
	gfd := map[string]string{
		"nvidia.com/gpu.present": "true",
		"nvidia.com/gpu.product": "NVIDIA-L40S",
		"nvidia.com/gpu.count":   "4",
		"nvidia.com/gpu.memory":  "46068",
	}
	dedicated := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	return []runtime.Object{
		node("cpu-01", nil, 0),
		node("gpu-01", gfd, 4, corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}),
		node("gpu-02", gfd, 0, dedicated),
		daemonSet("kube-system", "nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
			corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
		// Not device plugins: filtered out, not diagnosed.
		daemonSet("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2"),
		daemonSet("monitoring", "node-exporter", "quay.io/prometheus/node-exporter:v1.9.0"),
	}
}

func TestAudit(t *testing.T) {
	client := fake.NewClientset(cluster()...)
	var warnings []string
	s, err := audit(context.Background(), client, gpu.Options{}, func(m string) { warnings = append(warnings, m) })
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("unexpected warnings %v", warnings)
	}
	var diagnosed []string
	for _, d := range s.Diagnoses {
		diagnosed = append(diagnosed, d.DaemonSet+" on "+d.Node)
	}
	if diff := cmp.Diff([]string{"kube-system/nvidia-device-plugin on gpu-02"}, diagnosed); diff != "" {
		t.Errorf("diagnosed mismatch (-want +got):\n%s", diff)
	}
	type problem struct {
		Node, DaemonSet string
		Code            gpu.FindingCode
	}
	var got []problem
	for _, p := range s.Problems {
		got = append(got, problem{p.Node, p.DaemonSet, p.Code})
	}
	want := []problem{
		{"gpu-02", "", gpu.FindingResourceMissing},
		{"gpu-02", "kube-system/nvidia-device-plugin", gpu.FindingUntoleratedTaint},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if p := s.Pools[0]; p.Kind != gpu.PoolDedicatedGPU || len(p.Nodes) != 2 || p.GPUs != 8 || p.AdvertisedGPUs != 4 {
		t.Errorf("dedicated pool = %+v, want gpu-01 and gpu-02 with 8 GPUs, 4 advertised", p)
	}
}

// TestAuditWithoutDaemonSetAccess checks that a caller without list on
// DaemonSets still gets the node summary, and a warning saying what it
// misses.
func TestAuditWithoutDaemonSetAccess(t *testing.T) {
	client := fake.NewClientset(cluster()...)
	client.PrependReactor("list", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "", errors.New("RBAC: access denied"))
	})
	var warnings []string
	s, err := audit(context.Background(), client, gpu.Options{}, func(m string) { warnings = append(warnings, m) })
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "Grant list on daemonsets.apps") {
		t.Errorf("warnings = %q", warnings)
	}
	if len(s.Diagnoses) != 0 || len(s.Problems) != 1 || s.Problems[0].Code != gpu.FindingResourceMissing {
		t.Errorf("without DaemonSets want only ResourceMissing, got %+v", s.Problems)
	}
}

func TestAuditListNodesFails(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
	})
	_, err := audit(context.Background(), client, gpu.Options{}, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "list nodes") || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("err = %v, want a wrapped ServiceUnavailable naming the list", err)
	}
}

// TestAuditPaginates serves nodes in pages, as an API server does with
// --limit, and checks that every page is read.
func TestAuditPaginates(t *testing.T) {
	client := fake.NewClientset()
	pages := map[string]*corev1.NodeList{
		"":      {ListMeta: metav1.ListMeta{Continue: "page2"}, Items: []corev1.Node{*node("a", nil, 0)}},
		"page2": {ListMeta: metav1.ListMeta{Continue: "page3"}, Items: []corev1.Node{*node("b", nil, 0)}},
		"page3": {Items: []corev1.Node{*node("c", map[string]string{"nvidia.com/gpu.present": "true"}, 2)}},
	}
	client.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		if opts.Limit != listPageSize {
			t.Errorf("Limit = %d, want %d", opts.Limit, listPageSize)
		}
		return true, pages[opts.Continue], nil
	})
	s, err := audit(context.Background(), client, gpu.Options{}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Nodes {
		names = append(names, c.Node)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" {
		t.Errorf("nodes mismatch (-want +got):\n%s", diff)
	}
}

func fakeClient(objs ...runtime.Object) newClientFunc {
	return func(string) (kubernetes.Interface, error) { return fake.NewClientset(objs...), nil }
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		objs       []runtime.Object
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		{
			name:     "text with problems exits 3",
			objs:     cluster(),
			wantCode: exitProblems,
			wantStdout: []string{
				"dedicated-gpu  2      8     4           1",
				"nvidia  NVIDIA-L40S  2      8     4",
				"gpu-02  -       ResourceMissing  nvidia  NVIDIA-L40S  4     nvidia.com/gpu 0/0  none     yes",
				"2 problems:",
				"2. ERROR UntoleratedTaint node gpu-02 (DaemonSet kube-system/nvidia-device-plugin): DaemonSet kube-system/nvidia-device-plugin does not tolerate taint dedicated=gpu:NoSchedule",
				`   fix: kubectl -n kube-system patch daemonset nvidia-device-plugin --type=json -p '[{"op":"add","path":"/spec/template/spec/tolerations/-","value":{"key":"dedicated","operator":"Equal","value":"gpu","effect":"NoSchedule"}}]'`,
			},
		},
		{
			name:       "healthy cluster exits 0",
			objs:       []runtime.Object{node("cpu-01", nil, 0)},
			wantCode:   exitOK,
			wantStdout: []string{"cpu            1      0     0           0", "No problems found."},
		},
		{
			name:       "json",
			args:       []string{"-o", "json"},
			objs:       cluster(),
			wantCode:   exitProblems,
			wantStdout: []string{`"kind": "dedicated-gpu"`, `"code": "UntoleratedTaint"`},
		},
		{
			name:       "unknown output format",
			args:       []string{"-o", "yaml"},
			wantCode:   exitUsage,
			wantStderr: `unknown output format "yaml"`,
		},
		{
			name:       "bad grace period",
			args:       []string{"--grace-period", "-1m"},
			wantCode:   exitUsage,
			wantStderr: "--grace-period must be positive",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr, fakeClient(tt.objs...))
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantStderr)
			}
			if len(tt.args) == 2 && tt.args[1] == "json" {
				var s gpu.Summary
				if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
					t.Errorf("-o json output does not decode into gpu.Summary: %v", err)
				}
			}
		})
	}
}

func TestRunClientError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	failing := func(string) (kubernetes.Interface, error) { return nil, errors.New("load kubeconfig: no such file") }
	if code := run(context.Background(), nil, &stdout, &stderr, failing); code != exitFailed {
		t.Errorf("exit code %d, want %d", code, exitFailed)
	}
	if !strings.Contains(stderr.String(), "no such file") {
		t.Errorf("stderr = %q", stderr.String())
	}
}
