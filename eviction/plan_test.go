package eviction

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

// snapshotOf turns test objects into a Snapshot.
func snapshotOf(objs []runtime.Object) *Snapshot {
	s := &Snapshot{Now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			s.Nodes = append(s.Nodes, *o)
		case *corev1.Pod:
			s.Pods = append(s.Pods, o)
		case *policyv1.PodDisruptionBudget:
			s.PDBs = append(s.PDBs, *o)
		}
	}
	return s
}

// gpuNode labels n as a node of eight H100s and has it advertise count GPUs
// (kube.EightH100s, kube.AdvertisesGPUs).
func gpuNode(n *corev1.Node, count int64) *corev1.Node {
	kube.EightH100s(n)
	kube.AdvertisesGPUs(count)(n)
	return n
}

func TestPlan(t *testing.T) {
	base := func() []runtime.Object { return lwsCluster(3, 2, 3) }
	dsPod := func(name, node string) *corev1.Pod {
		p := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, OwnerReferences: ownedBy("DaemonSet", "device-plugin")},
			Spec: corev1.PodSpec{NodeName: node}})
		return p
	}
	mirror := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "static-node-1-1",
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}, OwnerReferences: ownedBy("Node", "node-1-1")},
		Spec: corev1.PodSpec{NodeName: "node-1-1"}})
	scratch := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "cache-0", OwnerReferences: ownedBy("ReplicaSet", "cache")},
		Spec: corev1.PodSpec{NodeName: "node-1-2", Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}})

	step := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "udrain-upgrade", Name: "upgrade-node-1-1-x",
		Labels: map[string]string{udrain.UpgradeStepLabel: "abc"}, OwnerReferences: ownedBy("Job", "upgrade-node-1-1")},
		Spec: corev1.PodSpec{NodeName: "node-1-1"}})

	type summary struct {
		Phase1, Phase2 []string
		Skipped        []PlannedPod
		Refused        []PlannedPod
		Warnings       []string
		Blockers       []health.Blocker
		Groups         []string
		GPUs           []gpu.Capacity
		Findings       []topology.FindingCode
	}
	tests := []struct {
		name   string
		objs   func() []runtime.Object
		helper *drain.Helper
		snap   func(*Snapshot)
		want   summary
	}{
		{
			name: "leaders in phase 1, workers in phase 2, GPUs counted",
			objs: func() []runtime.Object {
				o := base()
				for _, x := range o {
					if n, ok := x.(*corev1.Node); ok && n.Labels[topology.DefaultDomainLabel] == "ud-1" {
						gpuNode(n, 8)
					}
				}
				return o
			},
			want: summary{
				Phase1: []string{"inference/llm-0"},
				Phase2: []string{"inference/llm-0-2", "inference/llm-0-1"},
				Groups: []string{"inference/llm-0"},
				GPUs:   []gpu.Capacity{{Vendor: "nvidia", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 16, Nodes: 2}},
			},
		},
		{
			name: "the rollout's own upgrade step pods are skipped",
			objs: func() []runtime.Object { return append(base(), step) },
			want: summary{
				Phase1:  []string{"inference/llm-0"},
				Phase2:  []string{"inference/llm-0-2", "inference/llm-0-1"},
				Skipped: []PlannedPod{{PodRef: topology.PodRef{Namespace: "udrain-upgrade", Name: "upgrade-node-1-1-x", Node: "node-1-1"}, Reason: reasonUpgradeStepPod}},
				Groups:  []string{"inference/llm-0"},
			},
		},
		{
			name: "kubectl's filters: DaemonSet refused without --ignore-daemonsets, emptyDir refused, mirror skipped",
			objs: func() []runtime.Object {
				return append(base(), dsPod("plugin-a", "node-1-1"), mirror, scratch)
			},
			snap: func(s *Snapshot) {
				s.DaemonSets = []*appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "device-plugin"}}}
			},
			want: summary{
				Phase1:  []string{"inference/llm-0"},
				Phase2:  []string{"inference/llm-0-2", "inference/llm-0-1"},
				Skipped: []PlannedPod{{PodRef: topology.PodRef{Namespace: "kube-system", Name: "static-node-1-1", Node: "node-1-1"}, Reason: reasonMirrorPod}},
				Refused: []PlannedPod{
					{PodRef: topology.PodRef{Namespace: "kube-system", Name: "plugin-a", Node: "node-1-1"}, Reason: msgDaemonSetFatal},
					{PodRef: topology.PodRef{Namespace: "web", Name: "cache-0", Node: "node-1-2"}, Reason: msgLocalStorageFatal},
				},
				Groups: []string{"inference/llm-0"},
			},
		},
		{
			name:   "with --ignore-daemonsets --delete-emptydir-data",
			objs:   func() []runtime.Object { return append(base(), dsPod("plugin-a", "node-1-1"), scratch) },
			helper: &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true},
			snap: func(s *Snapshot) {
				s.DaemonSets = []*appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "device-plugin"}}}
			},
			want: summary{
				Phase1:  []string{"inference/llm-0"},
				Phase2:  []string{"inference/llm-0-2", "inference/llm-0-1", "web/cache-0"},
				Skipped: []PlannedPod{{PodRef: topology.PodRef{Namespace: "kube-system", Name: "plugin-a", Node: "node-1-1"}, Reason: msgDaemonSetWarning}},
				// kubectl drops the local-storage warning when a later filter
				// passes the pod; udrain keeps that behaviour.
				Warnings: []string{"ignoring DaemonSet-managed Pods: kube-system/plugin-a"},
				Groups:   []string{"inference/llm-0"},
			},
		},
		{
			name: "a spent budget is a blocker",
			objs: func() []runtime.Object {
				o := base()
				for _, x := range o {
					if b, ok := x.(*policyv1.PodDisruptionBudget); ok {
						b.Status.DisruptionsAllowed, b.Status.CurrentHealthy = 0, 2
					}
				}
				return o
			},
			want: summary{
				Phase1:   []string{"inference/llm-0"},
				Phase2:   []string{"inference/llm-0-2", "inference/llm-0-1"},
				Blockers: []health.Blocker{{BudgetRef: health.BudgetRef{Namespace: testNS, PDB: "llm-leaders"}, Needed: 1, BudgetCounts: health.BudgetCounts{DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3}}},
				Groups:   []string{"inference/llm-0"},
			},
		},
		{
			name:   "--pod-selector limits the drain to matching pods",
			objs:   base,
			helper: &drain.Helper{GracePeriodSeconds: -1, PodSelector: topology.LWSWorkerIndexLabel + "!=0"},
			want: summary{
				Phase2: []string{"inference/llm-0-2", "inference/llm-0-1"},
				Groups: []string{"inference/llm-0"},
			},
		},
		{
			name: "a group spread over two domains is a pack finding",
			objs: func() []runtime.Object {
				o := base()
				for _, x := range o {
					if p, ok := x.(*corev1.Pod); ok && p.Name == "llm-1-2" {
						p.Spec.NodeName = "node-1-1"
					}
				}
				return o
			},
			want: summary{
				Phase1:   []string{"inference/llm-0"},
				Phase2:   []string{"inference/llm-0-2", "inference/llm-1-2", "inference/llm-0-1"},
				Groups:   []string{"inference/llm-0", "inference/llm-1"},
				Findings: []topology.FindingCode{topology.FindingPack},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotOf(tc.objs())
			if tc.snap != nil {
				tc.snap(snap)
			}
			plan, err := NewPlan("ud-1", snap, Options{Helper: tc.helper})
			if err != nil {
				t.Fatal(err)
			}
			got := summary{
				Phase1: keys(plan.Phase1), Phase2: keys(plan.Phase2), Skipped: withoutUIDs(plan.Skipped), Refused: withoutUIDs(plan.Refused),
				Warnings: plan.Warnings, Blockers: plan.Blockers, GPUs: plan.GPUs,
			}
			for _, g := range plan.Groups {
				got.Groups = append(got.Groups, g.ID.String())
			}
			for _, f := range plan.Findings {
				got.Findings = append(got.Findings, f.Code)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			for _, p := range plan.Phase1 {
				if diff := cmp.Diff([]string{"llm-leaders"}, p.PDBs); diff != "" {
					t.Errorf("phase-1 pod %s PDBs (-want +got):\n%s", p.String(), diff)
				}
			}
		})
	}
}

// withoutUIDs drops the UIDs of the pods, which the table does not name.
func withoutUIDs(pods []PlannedPod) []PlannedPod {
	for i := range pods {
		pods[i].UID = ""
	}
	return pods
}

func TestPlanRefusesToGuessDaemonSets(t *testing.T) {
	objs := append(lwsCluster(2, 1, 2), readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin-a", OwnerReferences: ownedBy("DaemonSet", "device-plugin")},
		Spec: corev1.PodSpec{NodeName: "node-1-1"}}))
	snap := snapshotOf(objs)
	snap.DaemonSets = nil
	_, err := NewPlan("ud-1", snap, Options{Helper: &drain.Helper{GracePeriodSeconds: -1, Force: true}})
	var cfg *udrain.ConfigError
	if !errors.As(err, &cfg) || cfg.Field != "eviction.Snapshot.DaemonSets" || !strings.Contains(cfg.Problem, "plugin-a") {
		t.Fatalf("NewPlan with DaemonSet pods and no DaemonSets lookup: %v, want a ConfigError naming Snapshot.DaemonSets and the pod", err)
	}
	// Without DaemonSet pods on the domain, nil is fine.
	if _, err := NewPlan("ud-2", snap, Options{}); err != nil {
		t.Errorf("NewPlan of a domain without DaemonSet pods: %v", err)
	}
	// Empty, not nil, says there are none: the pod's DaemonSet is gone, and
	// kubectl treats the pod as an orphan (deleted with --force).
	snap.DaemonSets = []*appsv1.DaemonSet{}
	p, err := NewPlan("ud-1", snap, Options{Helper: &drain.Helper{GracePeriodSeconds: -1, Force: true}})
	if err != nil {
		t.Fatalf("NewPlan with an empty DaemonSets: %v", err)
	}
	if !slices.ContainsFunc(p.Phase2, func(pp PlannedPod) bool { return pp.Name == "plugin-a" }) {
		t.Errorf("the pod of a DaemonSet that is not in DaemonSets is not evicted as an orphan: phase 2 %v", p.Phase2)
	}
}
