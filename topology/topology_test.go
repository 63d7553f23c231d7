package topology

import (
	"errors"
	"fmt"
	"github.com/udrain/udrain"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apilabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func node(name, domain string, labels ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if domain != "" {
		n.Labels[DefaultDomainLabel] = domain
	}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

func TestNaturalLess(t *testing.T) {
	in := []string{"ud-10", "ud-2", "ud-1", "ud-02", "ud", "a", "ud-2a", "ud-2-b", "ud-100", "UD-3"}
	sort.Slice(in, func(i, j int) bool { return NaturalLess(in[i], in[j]) })
	want := []string{"UD-3", "a", "ud", "ud-1", "ud-02", "ud-2", "ud-2-b", "ud-2a", "ud-10", "ud-100"}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("natural order (-want +got):\n%s", diff)
	}
	for _, s := range in {
		if NaturalLess(s, s) {
			t.Errorf("NaturalLess(%q, %q) = true, want false (irreflexive)", s, s)
		}
	}
}

func TestBuildLayout(t *testing.T) {
	nodes := []corev1.Node{
		node("n-10", "ud-10"), node("n-2", "ud-2"), node("n-1", "ud-2"),
		node("cp-1", "ud-1", ControlPlaneLabel, ""), node("bare-b", ""), node("bare-a", ""),
	}
	tests := []struct {
		name    string
		opts    LayoutOptions
		want    []Domain
		skipped []string
		wantErr *UnlabeledNodesError
	}{
		{
			name:    "unlabeled nodes are an error by default",
			wantErr: &UnlabeledNodesError{LabelKey: DefaultDomainLabel, Nodes: []string{"bare-a", "bare-b"}},
		},
		{
			name: "skip unlabeled",
			opts: LayoutOptions{Unlabeled: UnlabeledSkip},
			want: []Domain{
				{Name: "ud-1", Nodes: []string{"cp-1"}, ControlPlaneNodes: []string{"cp-1"}},
				{Name: "ud-2", Nodes: []string{"n-1", "n-2"}},
				{Name: "ud-10", Nodes: []string{"n-10"}},
			},
			skipped: []string{"bare-a", "bare-b"},
		},
		{
			name: "own domain per unlabeled node",
			opts: LayoutOptions{Unlabeled: UnlabeledOwnDomain},
			want: []Domain{
				{Name: "bare-a", Nodes: []string{"bare-a"}},
				{Name: "bare-b", Nodes: []string{"bare-b"}},
				{Name: "ud-1", Nodes: []string{"cp-1"}, ControlPlaneNodes: []string{"cp-1"}},
				{Name: "ud-2", Nodes: []string{"n-1", "n-2"}},
				{Name: "ud-10", Nodes: []string{"n-10"}},
			},
		},
		{
			name:    "custom key",
			opts:    LayoutOptions{LabelKey: "pool", Unlabeled: UnlabeledSkip},
			want:    []Domain{},
			skipped: []string{"bare-a", "bare-b", "cp-1", "n-1", "n-2", "n-10"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := BuildLayout(nodes, tc.opts)
			if tc.wantErr != nil {
				var ue *UnlabeledNodesError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want *UnlabeledNodesError", err)
				}
				if diff := cmp.Diff(tc.wantErr, ue); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, l.Domains); diff != "" {
				t.Errorf("domains (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, l.Unlabeled); diff != "" {
				t.Errorf("unlabeled (-want +got):\n%s", diff)
			}
			if l.ControlPlaneTotal != 1 {
				t.Errorf("ControlPlaneTotal = %d, want 1", l.ControlPlaneTotal)
			}
		})
	}
}

// The zero value leaves out a control-plane node without the domain label
// (listed in Unlabeled), and still refuses an unlabelled worker; Skip and
// OwnDomain treat both alike.
func TestBuildLayoutLeavesOutUnlabeledControlPlane(t *testing.T) {
	labelled := []corev1.Node{node("n-1", "ud-1"), node("n-2", "ud-2"), node("cp-b", "", ControlPlaneLabel, ""), node("cp-a", "", ControlPlaneLabel, "")}
	l, err := BuildLayout(labelled, LayoutOptions{})
	if err != nil {
		t.Fatalf("unlabelled control-plane nodes under the zero value: %v", err)
	}
	want := []Domain{{Name: "ud-1", Nodes: []string{"n-1"}}, {Name: "ud-2", Nodes: []string{"n-2"}}}
	if diff := cmp.Diff(want, l.Domains); diff != "" {
		t.Errorf("domains (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"cp-a", "cp-b"}, l.Unlabeled); diff != "" {
		t.Errorf("unlabeled (-want +got):\n%s", diff)
	}
	if l.ControlPlaneTotal != 2 {
		t.Errorf("ControlPlaneTotal = %d, want 2", l.ControlPlaneTotal)
	}
	if _, ok := l.DomainOf("cp-a"); ok {
		t.Error("cp-a is in a domain")
	}

	_, err = BuildLayout(append(labelled, node("w-bare", "")), LayoutOptions{})
	var ue *UnlabeledNodesError
	if !errors.As(err, &ue) {
		t.Fatalf("an unlabelled worker beside them: err = %v, want *UnlabeledNodesError", err)
	}
	if diff := cmp.Diff(&UnlabeledNodesError{LabelKey: DefaultDomainLabel, Nodes: []string{"w-bare"}}, ue); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}

	l, err = BuildLayout(labelled, LayoutOptions{Unlabeled: UnlabeledOwnDomain})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Names(); !slices.Equal(got, []string{"cp-a", "cp-b", "ud-1", "ud-2"}) {
		t.Errorf("own-domain: domains %v, want each control-plane node its own", got)
	}
}

func TestLayoutLookup(t *testing.T) {
	l, err := BuildLayout([]corev1.Node{node("a", "ud-1"), node("b", "ud-2")}, LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := l.DomainOf("b"); !ok || d != "ud-2" {
		t.Errorf("DomainOf(b) = %q, %v; want ud-2, true", d, ok)
	}
	if _, ok := l.DomainOf("zzz"); ok {
		t.Errorf("DomainOf(zzz) found a domain")
	}
	_, err = l.Domain("ud-3")
	var ude *UnknownDomainError
	if !errors.As(err, &ude) {
		t.Fatalf("Domain(ud-3) err = %v, want *UnknownDomainError", err)
	}
	if diff := cmp.Diff([]string{"ud-1", "ud-2"}, ude.Known); diff != "" {
		t.Errorf("known domains (-want +got):\n%s", diff)
	}
	if got := err.Error(); got != `unknown upgrade domain "ud-3" (label "topology.udrain.dev/upgrade-domain"); known domains: ud-1, ud-2` {
		t.Errorf("message = %q", got)
	}
}

type podOpt func(*corev1.Pod)

func pod(ns, name, nodeName string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: nodeName},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func withLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func annotations(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

// lws returns a pod of an LWS group with the real labels and annotations.
func lws(ns, lwsName, group, worker, nodeName string, size string) corev1.Pod {
	name := lwsName + "-" + group
	if worker != "0" {
		name += "-" + worker
	}
	return pod(ns, name, nodeName,
		withLabels(LWSNameLabel, lwsName, LWSGroupIndexLabel, group, LWSWorkerIndexLabel, worker),
		annotations(LWSSizeAnnotation, size))
}

type groupSummary struct {
	ID         GroupID
	Workload   string
	Leader     string
	Members    []string
	Size       int
	DisruptAll bool
}

func summarize(groups []Group) []groupSummary {
	var out []groupSummary
	for i := range groups {
		g := &groups[i]
		s := groupSummary{ID: g.ID, Workload: g.Workload, Members: g.MemberNames(), Size: g.ExpectedSize(), DisruptAll: g.DisruptAll}
		if g.Leader != nil {
			s.Leader = g.Leader.Name
		}
		out = append(out, s)
	}
	return out
}

func TestFindGroups(t *testing.T) {
	pg := func(name string) podOpt {
		return func(p *corev1.Pod) { p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)} }
	}
	podGroups := []schedulingv1beta1.PodGroup{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gang-a"},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: "train", TemplateName: "workers"},
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}},
			DisruptionMode:   &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}},
		},
	}}
	tests := []struct {
		name     string
		pods     []corev1.Pod
		groupers []Grouper
		want     []groupSummary
	}{
		{
			name: "LWS groups with leader, size from annotation, natural member order",
			pods: []corev1.Pod{
				lws("inf", "vllm", "1", "10", "n1", "11"), lws("inf", "vllm", "1", "2", "n1", "11"),
				lws("inf", "vllm", "1", "0", "n1", "11"), lws("inf", "vllm", "0", "1", "n2", "2"),
				pod("inf", "loner", "n1"),
			},
			want: []groupSummary{
				{ID: GroupID{KindLeaderWorkerSet, "inf", "vllm-0"}, Workload: "vllm", Members: []string{"vllm-0-1"}, Size: 2},
				{ID: GroupID{KindLeaderWorkerSet, "inf", "vllm-1"}, Workload: "vllm", Leader: "vllm-1", Members: []string{"vllm-1", "vllm-1-2", "vllm-1-10"}, Size: 11},
			},
		},
		{
			name: "Ray head is the leader; size unknown means members seen",
			pods: []corev1.Pod{
				pod("ray", "rc-worker-x", "n1", withLabels(RayClusterLabel, "rc", RayNodeTypeLabel, "worker")),
				pod("ray", "rc-head", "n1", withLabels(RayClusterLabel, "rc", RayNodeTypeLabel, RayNodeTypeHead)),
			},
			want: []groupSummary{
				{ID: GroupID{KindRay, "ray", "rc"}, Workload: "rc", Leader: "rc-head", Members: []string{"rc-head", "rc-worker-x"}, Size: 2},
			},
		},
		{
			name: "custom label convention",
			pods: []corev1.Pod{
				pod("a", "p1", "n1", withLabels("gang", "g1", "app", "sglang", "role", "leader"), annotations("gang-size", "3")),
				pod("a", "p2", "n1", withLabels("gang", "g1", "app", "sglang", "role", "worker")),
			},
			groupers: []Grouper{ByLabel(LabelGrouping{GroupLabel: "gang", WorkloadLabel: "app", LeaderLabel: "role", LeaderValue: "leader", SizeAnnotation: "gang-size"})},
			want: []groupSummary{
				{ID: GroupID{KindLabel, "a", "g1"}, Workload: "sglang", Leader: "p1", Members: []string{"p1", "p2"}, Size: 3},
			},
		},
		{
			name: "native PodGroup: workload, gang size and disruption mode from the PodGroup",
			pods: []corev1.Pod{
				pod("ml", "t-0", "n1", pg("gang-a")), pod("ml", "t-1", "n1", pg("gang-a")),
				pod("ml", "u-0", "n1", pg("gang-unknown")),
			},
			groupers: []Grouper{ByPodGroup(podGroups)},
			want: []groupSummary{
				{ID: GroupID{KindPodGroup, "ml", "gang-a"}, Workload: "train/workers", Members: []string{"t-0", "t-1"}, Size: 4, DisruptAll: true},
				{ID: GroupID{KindPodGroup, "ml", "gang-unknown"}, Workload: "gang-unknown", Members: []string{"u-0"}, Size: 1},
			},
		},
		{
			name: "first grouper that claims a pod wins",
			pods: []corev1.Pod{
				pod("x", "both", "n1", withLabels(LWSNameLabel, "l", LWSGroupIndexLabel, "0", LWSWorkerIndexLabel, "0", RayClusterLabel, "rc")),
			},
			want: []groupSummary{
				{ID: GroupID{KindLeaderWorkerSet, "x", "l-0"}, Workload: "l", Leader: "both", Members: []string{"both"}, Size: 1},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(FindGroups(PodPointers(tc.pods), tc.groupers...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupIndex(t *testing.T) {
	pods := []corev1.Pod{lws("ns", "w", "0", "0", "n", "2"), lws("ns", "w", "0", "1", "n", "2")}
	gi := NewGroupIndex(FindGroups(PodPointers(pods)))
	g, ok := gi.GroupOf("ns", "w-0-1")
	if !ok || g.ID.Name != "w-0" {
		t.Fatalf("GroupOf(w-0-1) = %v, %v", g, ok)
	}
	if _, ok := gi.GroupOf("other", "w-0-1"); ok {
		t.Errorf("GroupOf found a pod in the wrong namespace")
	}
}

func pdb(ns, name string, sel *metav1.LabelSelector) policyv1.PodDisruptionBudget {
	min := intstr.FromInt32(1)
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: &min},
	}
}

func TestPDBIndex(t *testing.T) {
	pdbs := []policyv1.PodDisruptionBudget{
		pdb("ns", "leaders", &metav1.LabelSelector{MatchLabels: map[string]string{"role": "leader"}}),
		pdb("ns", "everything", &metav1.LabelSelector{}),
		pdb("ns", "nil-selector", nil),
		pdb("ns", "invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}),
		pdb("other", "leaders", &metav1.LabelSelector{MatchLabels: map[string]string{"role": "leader"}}),
	}
	idx := NewPDBIndex(pdbs)
	tests := []struct {
		pod  corev1.Pod
		want []string
	}{
		{pod("ns", "l", "", withLabels("role", "leader")), []string{"everything", "leaders"}},
		{pod("ns", "w", "", withLabels("role", "worker")), []string{"everything"}},
		{pod("other", "l", "", withLabels("role", "leader")), []string{"leaders"}},
		{pod("third", "l", "", withLabels("role", "leader")), nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, PDBNames(idx.For(&tc.pod))); diff != "" {
			t.Errorf("PDBs for %s/%s (-want +got):\n%s", tc.pod.Namespace, tc.pod.Name, diff)
		}
	}
}

func TestAudit(t *testing.T) {
	leaderSel := &metav1.LabelSelector{MatchLabels: map[string]string{LWSWorkerIndexLabel: "0"}}
	nodes := []corev1.Node{node("a1", "ud-a"), node("a2", "ud-a"), node("b1", "ud-b"), node("c1", "ud-c")}
	healthy := []corev1.Pod{
		lws("inf", "w", "0", "0", "a1", "2"), lws("inf", "w", "0", "1", "a2", "2"),
		lws("inf", "w", "1", "0", "b1", "2"), lws("inf", "w", "1", "1", "b1", "2"),
		lws("inf", "w", "2", "0", "c1", "2"), lws("inf", "w", "2", "1", "c1", "2"),
	}
	leadersPDB := []policyv1.PodDisruptionBudget{pdb("inf", "w-leaders", leaderSel)}

	type finding struct {
		Code     FindingCode
		Severity udrain.Severity
		Group    string
		Domains  []string
		PDBs     []string
		Pods     []string
		Nodes    []string
	}
	tests := []struct {
		name  string
		nodes []corev1.Node
		pods  []corev1.Pod
		pdbs  []policyv1.PodDisruptionBudget
		want  []finding
	}{
		{name: "contract holds", nodes: nodes, pods: healthy, pdbs: leadersPDB},
		{
			name:  "pack: group spans two domains",
			nodes: nodes,
			pods: []corev1.Pod{
				lws("inf", "w", "0", "0", "a1", "2"), lws("inf", "w", "0", "1", "b1", "2"),
				lws("inf", "w", "1", "0", "b1", "2"), lws("inf", "w", "2", "0", "c1", "2"),
			},
			pdbs: leadersPDB,
			want: []finding{{Code: FindingPack, Severity: udrain.SeverityError, Group: "w-0", Domains: []string{"ud-a", "ud-b"}, Pods: []string{"w-0@ud-a", "w-0-1@ud-b"}}},
		},
		{
			name:  "spread: two groups in ud-a, none in ud-c",
			nodes: nodes,
			pods: []corev1.Pod{
				lws("inf", "w", "0", "0", "a1", "1"), lws("inf", "w", "1", "0", "a2", "1"), lws("inf", "w", "2", "0", "b1", "1"),
			},
			pdbs: leadersPDB,
			want: []finding{{Code: FindingSpread, Severity: udrain.SeverityError, Domains: []string{"ud-a"}}},
		},
		{
			name:  "spread: more groups than domains is fine",
			nodes: nodes[:3],
			pods: []corev1.Pod{
				lws("inf", "w", "0", "0", "a1", "1"), lws("inf", "w", "1", "0", "a2", "1"), lws("inf", "w", "2", "0", "b1", "1"),
			},
			pdbs: leadersPDB,
		},
		{
			name:  "leader without PDB",
			nodes: nodes,
			pods:  healthy,
			want: []finding{
				{Code: FindingUnprotectedLeader, Severity: udrain.SeverityError, Group: "w-0", Domains: []string{"ud-a"}, Pods: []string{"w-0"}},
				{Code: FindingUnprotectedLeader, Severity: udrain.SeverityError, Group: "w-1", Domains: []string{"ud-b"}, Pods: []string{"w-1"}},
				{Code: FindingUnprotectedLeader, Severity: udrain.SeverityError, Group: "w-2", Domains: []string{"ud-c"}, Pods: []string{"w-2"}},
			},
		},
		{
			name:  "two PDBs over a pod, and workers under a PDB",
			nodes: nodes,
			pods:  append(healthy[:2:2], pod("inf", "stray", "c1", withLabels("app", "x"))),
			pdbs: []policyv1.PodDisruptionBudget{
				pdb("inf", "all", &metav1.LabelSelector{}),
				pdb("inf", "w-leaders", leaderSel),
			},
			want: []finding{
				{Code: FindingMultiplePDBs, Severity: udrain.SeverityError, Group: "w-0", Domains: []string{"ud-a"}, PDBs: []string{"all", "w-leaders"}, Pods: []string{"w-0"}},
				{Code: FindingProtectedWorker, Severity: udrain.SeverityWarning, Group: "w-0", Domains: []string{"ud-a"}, PDBs: []string{"all"}, Pods: []string{"w-0-1"}},
			},
		},
		{
			name: "control-plane quorum: 2 of 3 in one domain",
			nodes: []corev1.Node{
				node("cp1", "ud-a", ControlPlaneLabel, ""), node("cp2", "ud-a", ControlPlaneLabel, ""),
				node("cp3", "ud-b", ControlPlaneLabel, ""), node("w", "ud-c"),
			},
			want: []finding{{Code: FindingControlPlaneQuorum, Severity: udrain.SeverityError, Domains: []string{"ud-a"}, Nodes: []string{"cp1", "cp2"}}},
		},
		{
			name: "control-plane quorum: 1 of 3 per domain is fine",
			nodes: []corev1.Node{
				node("cp1", "ud-a", ControlPlaneLabel, ""), node("cp2", "ud-b", ControlPlaneLabel, ""),
				node("cp3", "ud-c", ControlPlaneLabel, ""),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := BuildLayout(tc.nodes, LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ptrs := PodPointers(tc.pods)
			r := Audit(AuditInput{Layout: l, Groups: FindGroups(ptrs), PDBs: tc.pdbs, Pods: ptrs})
			var got []finding
			for _, f := range r.Findings {
				if f.Message == "" {
					t.Errorf("finding %s has no message", f.Code)
				}
				got = append(got, finding{f.Code, f.Severity, f.Group, f.Domains, f.PDBs, f.Pods, f.Nodes})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			var ce *ContractError
			hasErr := errors.As(r.Err(), &ce)
			if hasErr != (len(r.Errors()) > 0) {
				t.Errorf("Err() = %v with %d error findings", r.Err(), len(r.Errors()))
			}
		})
	}
}

// TestPDBIndexMatchesBruteForce compares the indexed lookup with matching
// every selector, over random selectors and pods.
func TestPDBIndexMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	keys := []string{"app", "tier", "idx", "role"}
	vals := []string{"a", "b", "c"}
	randomLabels := func() map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			if rng.Intn(2) == 0 {
				m[k] = vals[rng.Intn(len(vals))]
			}
		}
		return m
	}
	for round := 0; round < 200; round++ {
		var pdbs []policyv1.PodDisruptionBudget
		for i := 0; i < 1+rng.Intn(8); i++ {
			var sel *metav1.LabelSelector
			switch rng.Intn(6) {
			case 0:
				sel = nil
			case 1:
				sel = &metav1.LabelSelector{}
			case 2:
				sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: keys[rng.Intn(4)], Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
			case 3:
				sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: keys[rng.Intn(4)], Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}}}}
			default:
				sel = &metav1.LabelSelector{MatchLabels: randomLabels()}
			}
			pdbs = append(pdbs, pdb([]string{"x", "y"}[rng.Intn(2)], fmt.Sprintf("p%d", i), sel))
		}
		idx := NewPDBIndex(pdbs)
		for j := 0; j < 20; j++ {
			p := pod([]string{"x", "y"}[rng.Intn(2)], "pod", "", withLabels())
			p.Labels = randomLabels()
			var want []string
			for i := range pdbs {
				sel, err := metav1.LabelSelectorAsSelector(pdbs[i].Spec.Selector)
				if err == nil && pdbs[i].Namespace == p.Namespace && sel.Matches(apilabels.Set(p.Labels)) {
					want = append(want, pdbs[i].Name)
				}
			}
			sort.Strings(want)
			if diff := cmp.Diff(want, PDBNames(idx.For(&p))); diff != "" {
				t.Fatalf("round %d, pod labels %v (-brute force +index):\n%s", round, p.Labels, diff)
			}
		}
	}
}

// threeLeaders is a layout of three domains, ud-a to ud-c, with the
// leader of a group of workload w in each, and its pods.
func threeLeaders(t *testing.T) (*Layout, []*corev1.Pod) {
	t.Helper()
	nodes := []corev1.Node{node("a1", "ud-a"), node("b1", "ud-b"), node("c1", "ud-c")}
	pods := []corev1.Pod{
		lws("inf", "w", "0", "0", "a1", "1"), lws("inf", "w", "1", "0", "b1", "1"), lws("inf", "w", "2", "0", "c1", "1"),
	}
	l, err := BuildLayout(nodes, LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l, PodPointers(pods)
}

func TestAuditOnlyReportsTheDomainsAsked(t *testing.T) {
	l, ptrs := threeLeaders(t)
	r := Audit(AuditInput{Layout: l, Groups: FindGroups(ptrs), Pods: ptrs, Only: []string{"ud-b"}})
	if len(r.Findings) != 1 || r.Findings[0].Code != FindingUnprotectedLeader || r.Findings[0].Group != "w-1" {
		t.Errorf("findings = %+v, want only the unprotected leader in ud-b", r.Findings)
	}
}

// TestAuditSaysWhatItLookedAt: a report names the layout's label, the
// domains audited (those asked, or every one) and counts the groups and
// PDBs it was given.
func TestAuditSaysWhatItLookedAt(t *testing.T) {
	l, ptrs := threeLeaders(t)
	pdbs := []policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "inf", Name: "other"}}}
	type seen struct {
		LabelKey     string
		Domains      []string
		Groups, PDBs int
	}
	for name, tc := range map[string]struct {
		only []string
		want seen
	}{
		"every domain":      {nil, seen{DefaultDomainLabel, []string{"ud-a", "ud-b", "ud-c"}, 3, 1}},
		"the domains asked": {[]string{"ud-b"}, seen{DefaultDomainLabel, []string{"ud-b"}, 3, 1}},
	} {
		t.Run(name, func(t *testing.T) {
			r := Audit(AuditInput{Layout: l, Groups: FindGroups(ptrs), PDBs: pdbs, Pods: ptrs, Only: tc.only})
			if diff := cmp.Diff(tc.want, seen{r.LabelKey, r.Domains, r.Groups, r.PDBs}); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}
