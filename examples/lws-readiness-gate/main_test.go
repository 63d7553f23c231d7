package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/topology"
)

// TestRunWiresFlagsToTheController runs the program on a fake cluster: the
// flags must reach the controller (kubeconfig path, namespace, selector,
// lease) and each write must be printed.
func TestRunWiresFlagsToTheController(t *testing.T) {
	// Groups of two: the leader declares the gate, its containers ready;
	// the worker is not ready.
	gated, notReady, staging := kube.GatedLeader(gate.ConditionType), kube.Ready(false), kube.InNamespace("staging")
	client := fake.NewClientset(
		kube.LWSPod("vllm", 0, 0, 2, gated), kube.LWSPod("vllm", 0, 1, 2, notReady),
		kube.LWSPod("other", 0, 0, 2, gated), kube.LWSPod("other", 0, 1, 2, notReady), // outside --selector
		kube.LWSPod("vllm", 0, 0, 2, staging, gated), kube.LWSPod("vllm", 0, 1, 2, staging, notReady), // outside --namespace
	)
	var gotKubeconfig string
	newClient := func(path string) (kubernetes.Interface, error) {
		gotKubeconfig = path
		return client, nil
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stdout testkit.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--kubeconfig", "/etc/udrain/kubeconfig",
			"--namespace", "inference",
			"--selector", topology.LWSNameLabel + "=vllm",
			"--lease-namespace", "udrain-system", "--id", "replica-a",
		}, &stdout, &stdout, newClient)
	}()

	want := "inference/vllm-0: udrain.dev/group-ready=False MemberNotReady: vllm-0-1 not ready; 1/2 members healthy\n"
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return stdout.String() == want, nil
	})
	if err != nil {
		t.Fatalf("output %q, want %q: %v", stdout.String(), want, err)
	}
	if h := leaseHolder(t, client); h != "replica-a" {
		t.Errorf("Lease held by %q, want replica-a (--id)", h)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}

	if gotKubeconfig != "/etc/udrain/kubeconfig" {
		t.Errorf("client built from %q, want the --kubeconfig path", gotKubeconfig)
	}
	for _, p := range []struct{ ns, name string }{{"inference", "other-0"}, {"staging", "vllm-0"}} {
		pod, err := client.CoreV1().Pods(p.ns).Get(context.Background(), p.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := gate.CurrentCondition(pod); c != nil {
			t.Errorf("%s/%s, outside the flags' scope, got condition %v", p.ns, p.name, c)
		}
	}
	if h := leaseHolder(t, client); h != "" {
		t.Errorf("Lease still held by %q after shutdown, want it released", h)
	}
}

func TestRunRejectsBadCommandLines(t *testing.T) {
	newClient := func(string) (kubernetes.Interface, error) { return fake.NewClientset(), nil }
	tests := []struct {
		name string
		args []string
		want string // in the error
	}{
		{"bad selector", []string{"--selector", "app in (vllm"}, "Options.Selector"},
		{"bad namespace", []string{"--namespace", "Inference"}, "Options.Namespace"},
		{"unknown flag", []string{"--namspace", "x"}, "flag provided but not defined"},
		{"stray argument", []string{"inference"}, "unexpected arguments"},
		{"bad lease name", []string{"--lease-namespace", "udrain-system", "--lease-name", "Bad Name"}, "LeaderElection.Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out testkit.SyncBuffer
			err := run(context.Background(), tt.args, &out, &out, newClient)
			var usage *usageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want a usage error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestRunReportsClientErrors(t *testing.T) {
	boom := errors.New("no kubeconfig here")
	err := run(context.Background(), nil, &testkit.SyncBuffer{}, &testkit.SyncBuffer{}, func(string) (kubernetes.Interface, error) { return nil, boom })
	var usage *usageError
	if !errors.Is(err, boom) || errors.As(err, &usage) {
		t.Errorf("run = %v, want the client error, not a usage error", err)
	}
}

func leaseHolder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases("udrain-system").Get(context.Background(), gate.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no Lease from --lease-namespace: %v", err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
