package app

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// TestOneHealthJudgment: planning, recovery (Drainer.Health), the
// readiness-gate controller and "udrain domains" give package health's
// verdict on every group of a table of edge cases. A package that judged
// group health on its own would disagree on one of them.
func TestOneHealthJudgment(t *testing.T) {
	type podChange func(*corev1.Pod)
	notReady := func(p *corev1.Pod) { kube.SetCondition(p, corev1.PodReady, corev1.ConditionFalse) }
	containersNotReady := func(p *corev1.Pod) {
		kube.SetCondition(p, corev1.PodReady, corev1.ConditionFalse)
		kube.SetCondition(p, corev1.ContainersReady, corev1.ConditionFalse)
	}
	terminating := func(p *corev1.Pod) {
		now := metav1.NewTime(testNow)
		p.DeletionTimestamp = &now
		p.Finalizers = []string{"example.com/hold"}
	}
	unscheduled := func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}}
	}
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	scheduled := func(p *corev1.Pod) { kube.SetCondition(p, corev1.PodScheduled, corev1.ConditionTrue) }
	for _, tc := range []struct {
		name    string
		size    int
		members int
		change  map[int]podChange
	}{
		{"whole and Ready", 4, 4, nil},
		{"five pods of four, all Ready", 4, 5, nil},
		{"five pods of four, the fifth not Ready", 4, 5, map[int]podChange{4: notReady}},
		{"a member missing", 4, 3, nil},
		{"the leader Running, not Ready, its containers neither", 4, 4, map[int]podChange{0: containersNotReady}},
		{"the leader not Ready, its containers Ready (the gate's own case)", 4, 4, map[int]podChange{0: notReady}},
		{"a worker not scheduled", 4, 4, map[int]podChange{3: unscheduled}},
		{"a worker terminating", 4, 4, map[int]podChange{2: terminating}},
		{"a worker failed", 4, 4, map[int]podChange{1: failed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for w := range tc.members {
				// Member w of LWS group llm-0 on ud-1, scheduled, Running and Ready.
				p := kube.LWSPod("llm", 0, w, tc.size, kube.OnNode(fmt.Sprintf("n-%d", w%2+1)), kube.OwnedByStatefulSets, scheduled)
				if c := tc.change[w]; c != nil {
					c(p)
				}
				pods = append(pods, p)
			}
			groups := topology.FindGroups(pods)
			if len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			want := health.Evaluate(&groups[0], health.Options{})
			wantGate := health.Evaluate(&groups[0], health.Options{LeaderByContainers: true})

			objs := []runtime.Object{kube.Node("n-1", kube.InDomain("ud-1")), kube.Node("n-2", kube.InDomain("ud-1")), kube.Node("n-3", kube.InDomain("ud-2")), consistencyPDB()}
			for _, p := range pods {
				objs = append(objs, p)
			}
			client := fake.NewClientset(objs...)
			verdicts := map[string]bool{}

			// Planning.
			nodes, _ := client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
			plan, err := eviction.NewPlan("ud-1", &eviction.Snapshot{Nodes: nodes.Items, Pods: pods, PDBs: []policyv1.PodDisruptionBudget{*consistencyPDB()}, Now: testNow},
				eviction.Options{Helper: &drain.Helper{GracePeriodSeconds: -1, Force: true}})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Groups) == 1 {
				verdicts["plan"] = plan.Groups[0].Healthy
			}

			// Recovery's judgment, as Drainer.Health reports it.
			d, err := eviction.New(client, eviction.Options{})
			if err != nil {
				t.Fatal(err)
			}
			hr, err := d.Health(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, dom := range hr.Domains {
				for _, g := range dom.Groups {
					verdicts["recovery"] = g.Healthy
				}
			}
			for _, g := range hr.Unscheduled {
				verdicts["recovery"] = g.Healthy
			}

			// The readiness-gate controller's condition.
			verdicts["gate"] = gate.ConditionFor(&groups[0], testNow).Status == corev1.ConditionTrue

			// udrain domains -o json.
			cfg, _ := testConfig(client)
			r := run(t, t.Context(), cfg, "domains", "-o", "json")
			if r.code != ExitOK {
				t.Fatalf("domains: exit code %d: %s", r.code, r.stderr)
			}
			var list report.DomainList
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				t.Fatal(err)
			}
			for _, item := range list.Items {
				for _, g := range item.Health.Groups {
					verdicts["domains"] = g.Healthy
				}
			}
			for _, g := range list.Unscheduled {
				verdicts["domains"] = g.Healthy
			}

			for _, who := range []string{"plan", "recovery", "domains"} {
				got, ok := verdicts[who]
				if !ok {
					t.Errorf("%s judged no group", who)
				} else if got != want.Healthy {
					t.Errorf("%s says healthy=%v, package health says %v (%s)", who, got, want.Healthy, want.Message)
				}
			}
			if verdicts["gate"] != wantGate.Healthy {
				t.Errorf("gate says healthy=%v, package health (leader by its containers) says %v (%s)", verdicts["gate"], wantGate.Healthy, wantGate.Message)
			}
			t.Logf("%s: %v", want.Reason, verdicts)
		})
	}
}

func consistencyPDB() *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "llm-leaders"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			topology.LWSNameLabel: "llm", topology.LWSWorkerIndexLabel: "0"}}},
	}
}

// TestNoOtherPackageJudgesPodHealth: outside package health, no code of the
// module reads a pod's Ready, ContainersReady or Running state: a second
// judgment of health would have to. The test kit's builders set those
// states and judge none; only tests import the kit (TestOnlyTestsImportTheTestKit).
func TestNoOtherPackageJudgesPodHealth(t *testing.T) {
	root := "../../.."
	forbidden := map[string]bool{"PodReady": true, "ContainersReady": true, "PodRunning": true, "IsPodReady": true}
	var found []string
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if info.IsDir() {
			switch rel {
			case "health", "e2e", "examples", "hack", ".git", filepath.Join("internal", "testkit"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && forbidden[sel.Sel.Name] {
				found = append(found, fmt.Sprintf("%s: %s", rel, sel.Sel.Name))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("pod health read outside package health (ask health.Evaluate, health.MemberHealthy or health.CountsForBudget):\n%s", strings.Join(found, "\n"))
	}
}
