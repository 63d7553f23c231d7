package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/internal/clusterview"
	"github.com/udrain/udrain/topology"
)

// gpuCluster is lwsCluster with 8-GPU nodes and the NVIDIA device plugin
// DaemonSet, which tolerates nothing but the GPU taint.
func gpuCluster() []runtime.Object {
	objs := lwsCluster(2, 1, 2)
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			gpuNode(n, 8)
			n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
		}
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		}}}}
	return append(objs, ds)
}

// setGPUs changes what node advertises, and adds a taint when taint is set.
func setGPUs(ctx context.Context, fc *fakeCluster, node string, n int64, taint *corev1.Taint) error {
	nd, err := fc.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	q := *resource.NewQuantity(n, resource.DecimalSI)
	nd.Status.Allocatable["nvidia.com/gpu"] = q
	if taint != nil {
		nd.Spec.Taints = append(nd.Spec.Taints, *taint)
	}
	_, err = fc.client.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{})
	return err
}

// A GPU node that comes back from its upgrade without its GPUs stops the
// rollout before its domain is uncordoned and before the next domain, with
// the node, the GPUs lost and the device plugin's diagnosis; run again
// after the fix, the rollout goes on.
func TestRolloutStopsOnGPUsLostInTheUpgrade(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, gpuCluster()...)
	badTaint := &corev1.Taint{Key: "example.com/new-driver", Value: "pending", Effect: corev1.TaintEffectNoSchedule}
	upgrade := func(ctx context.Context, dom topology.Domain) error {
		if dom.Name == "ud-1" {
			return setGPUs(ctx, fc, "node-1-1", 0, badTaint)
		}
		return nil
	}
	log := newEventLog()
	d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(_ context.Context, e Event) {
		log.add(ctx, e)
		if e.Type == EventUncordoned {
			go fc.recreateGroup(ctx, domainIndex(e.Domain)-1, 2, domainIndex(e.Domain), 1, 2)
		}
	}})
	// The grace also bounds the wait for the view to show the node's
	// upgraded mark: 300 ms was close for a busy machine's watch.
	const grace = 2 * time.Second
	_, err := d.Rollout(ctx, RolloutOptions{ID: "driver-580", Upgrade: upgrade, GPUCheckGrace: grace})
	var de *DomainError
	var lost *ClusterError
	if !errors.As(err, &de) || !asReason(err, &lost, ReasonGPUsLost) || de.Stage != StageGPUCheck || de.Domain != "ud-1" {
		t.Fatalf("err = %v, want a DomainError of ud-1 at GPUCheck with a *ClusterError, ReasonGPUsLost", err)
	}
	if len(lost.Losses) != 1 || lost.Losses[0].Node != "node-1-1" || lost.Losses[0].Before != 8 || lost.Losses[0].After != 0 || lost.Losses[0].Resource != "nvidia.com/gpu" {
		t.Fatalf("losses %+v, want node-1-1 8 -> 0 nvidia.com/gpu", lost.Losses)
	}
	diag := lost.Losses[0].Diagnoses
	if len(diag) != 1 || diag[0].CanRun || len(diag[0].UntoleratedTaints) != 1 || diag[0].UntoleratedTaints[0].Key != badTaint.Key {
		t.Errorf("diagnoses %+v, want the device plugin unable to run for the untolerated taint %s", diag, badTaint.Key)
	}
	if !strings.Contains(err.Error(), "example.com/new-driver") || !strings.Contains(err.Error(), "fix") {
		t.Errorf("the error does not say what to fix: %v", err)
	}
	for _, a := range fc.attempts {
		if strings.HasPrefix(a, "inference/llm-1") {
			t.Errorf("ud-2 was touched: eviction of %s", a)
		}
	}
	if n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Error("ud-1 was uncordoned although its GPUs are lost")
	}
	if len(log.ofType(EventWaitingGPUs)) == 0 {
		t.Error("no WaitingGPUs event while the GPUs were missing")
	}

	// The fix: the taint goes, the plugin advertises again; the same
	// rollout goes on from ud-1's recovery.
	nd, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
	nd.Spec.Taints = nd.Spec.Taints[:1]
	if _, err := fc.client.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := setGPUs(ctx, fc, "node-1-1", 8, nil); err != nil {
		t.Fatal(err)
	}
	fc.recreateGroup(ctx, 0, 2, 1, 1, 2)
	res, err := d.Rollout(ctx, RolloutOptions{ID: "driver-580", Upgrade: upgrade, GPUCheckGrace: grace})
	if err != nil {
		t.Fatalf("resumed rollout: %v", err)
	}
	if got := []DomainState{res.Domains[0].State, res.Domains[1].State}; got[0] != StateSkipped || got[1] != StateDone {
		t.Errorf("resumed rollout statuses %v, want Skipped (upgraded before) and Done", got)
	}
}

// GPUs that come back within the grace period are fine; the check can be
// turned off.
func TestGPUCheckGraceAndDisabled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check gpuCheck
		back  bool
	}{
		{"the GPUs come back within the grace period", gpuCheck{Grace: 5 * time.Second}, true},
		{"the check is off", gpuCheck{Disabled: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, gpuCluster()...)
			upgrade := func(ctx context.Context, dom topology.Domain) error {
				node := "node-" + dom.Name[len("ud-"):] + "-1"
				if err := setGPUs(ctx, fc, node, 0, nil); err != nil {
					return err
				}
				if tc.back {
					go func() {
						time.Sleep(200 * time.Millisecond)
						_ = setGPUs(context.Background(), fc, node, 8, nil)
					}()
				}
				return nil
			}
			d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(_ context.Context, e Event) {
				if e.Type == EventUncordoned {
					go fc.recreateGroup(ctx, domainIndex(e.Domain)-1, 2, domainIndex(e.Domain), 1, 2)
				}
			}})
			if _, err := d.Rollout(ctx, RolloutOptions{Upgrade: upgrade, SkipGPUCheck: tc.check.Disabled, GPUCheckGrace: tc.check.Grace}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The GPU check judges a domain's nodes only once its view shows the
// upgraded mark written after the upgrade step: a view that still shows
// the nodes as they were before the step (its watch behind) would see the
// GPUs there and let a domain that lost them go on.
func TestGPUCheckWaitsForTheViewToShowTheUpgrade(t *testing.T) {
	const id = "driver-580"
	node := func(gpus int64, marked bool) *corev1.Node {
		n := gpuNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1-1", Labels: map[string]string{}, Annotations: map[string]string{}}}, 8)
		n.Status.Allocatable["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		if marked {
			n.Annotations[udrain.UpgradedByAnnotation] = id
		}
		return n
	}
	dom := topology.Domain{Name: "ud-1", Nodes: []string{"node-1-1"}}
	tests := []struct {
		name  string
		mark  upgradeMark
		later *corev1.Node // what the view shows 50 ms in, if anything
		want  string       // "" (passes), "lost", "behind"
	}{
		{"the upgrade's loss arrives after the step", upgradeMark{"node-1-1", id}, node(0, true), "lost"},
		{"the GPUs are there when the mark arrives", upgradeMark{"node-1-1", id}, node(8, true), ""},
		{"the mark never arrives", upgradeMark{"node-1-1", id}, nil, "behind"},
		{"no mark to wait for (a resumed rollout)", upgradeMark{}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			d, err := New(fake.NewClientset(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			nodes := cache.NewStore(cache.MetaNamespaceKeyFunc)
			v := d.newView(clusterview.Stores{Nodes: nodes})
			if err := nodes.Add(node(8, false)); err != nil { // as before the step
				t.Fatal(err)
			}
			if tt.later != nil {
				go func() {
					time.Sleep(50 * time.Millisecond)
					_ = nodes.Update(tt.later)
					v.Notify()
				}()
			}
			err = d.checkGPUs(ctx, v, dom, map[string]int64{"node-1-1": 8}, tt.mark, gpuCheck{Grace: time.Second}, func(Event) {})
			var lost *ClusterError
			got := ""
			switch {
			case asReason(err, &lost, ReasonGPUsLost):
				got = "lost"
			case err != nil && strings.Contains(err.Error(), "upgraded mark"):
				got = "behind"
			case err != nil:
				t.Fatalf("checkGPUs: %v", err)
			}
			if got != tt.want {
				t.Errorf("checkGPUs = %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

// A GPUsLost ClusterError names each node, its GPUs before and now, and why: the
// fix of a device plugin that cannot run there, else that it cannot, else
// the node's first problem; five nodes at most.
func TestGPUsLostMessage(t *testing.T) {
	const tail = "; fix the driver or the device plugin, then run the rollout again"
	missing := gpu.Finding{Code: gpu.FindingResourceMissing, Severity: udrain.SeverityError, Message: "no nvidia.com/gpu"}
	info := gpu.Finding{Code: gpu.FindingNotDedicated, Severity: udrain.SeverityInfo, Message: "not dedicated"}
	var seven []gpu.Loss
	for i := range 7 {
		seven = append(seven, gpu.Loss{Node: fmt.Sprintf("n%d", i), Resource: "nvidia.com/gpu", Before: 8})
	}
	for _, tc := range []struct {
		name string
		err  *ClusterError
		want string
	}{
		{"the plugin's fix", &ClusterError{Reason: ReasonGPUsLost, Waited: 5 * time.Minute, Losses: []gpu.Loss{{Node: "n1", Resource: "nvidia.com/gpu", Before: 8, After: 0,
			Findings:  []gpu.Finding{missing},
			Diagnoses: []gpu.Diagnosis{{DaemonSet: "kube-system/ok", CanRun: true}, {DaemonSet: "kube-system/nvdp", Fix: "kubectl patch ..."}}}}},
			"1 GPU node(s) came back from the upgrade without their GPUs after 5m0s: node n1 advertises 0 nvidia.com/gpu, had 8 (device plugin kube-system/nvdp cannot run there: kubectl patch ...)" + tail},
		{"a plugin that cannot run, without a fix", &ClusterError{Reason: ReasonGPUsLost, Waited: time.Second, Losses: []gpu.Loss{{Node: "n1", Resource: "nvidia.com/gpu", Before: 8, After: 4,
			Diagnoses: []gpu.Diagnosis{{DaemonSet: "kube-system/nvdp"}}}}},
			"1 GPU node(s) came back from the upgrade without their GPUs after 1s: node n1 advertises 4 nvidia.com/gpu, had 8 (device plugin kube-system/nvdp cannot run there)" + tail},
		{"the node's first problem", &ClusterError{Reason: ReasonGPUsLost, Waited: time.Second, Losses: []gpu.Loss{{Node: "n1", Resource: "nvidia.com/gpu", Before: 8, After: 0,
			Findings: []gpu.Finding{info, missing, {Code: gpu.FindingAllocatableZero, Severity: udrain.SeverityError, Message: "none allocatable"}}}}},
			"1 GPU node(s) came back from the upgrade without their GPUs after 1s: node n1 advertises 0 nvidia.com/gpu, had 8 (no nvidia.com/gpu)" + tail},
		{"five nodes at most", &ClusterError{Reason: ReasonGPUsLost, Waited: time.Second, Losses: seven},
			"7 GPU node(s) came back from the upgrade without their GPUs after 1s: node n0 advertises 0 nvidia.com/gpu, had 8; node n1 advertises 0 nvidia.com/gpu, had 8; " +
				"node n2 advertises 0 nvidia.com/gpu, had 8; node n3 advertises 0 nvidia.com/gpu, had 8; node n4 advertises 0 nvidia.com/gpu, had 8; and 2 more" + tail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
