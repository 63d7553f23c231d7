package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/topology"
)

// healthState is the default cluster's state, changed by mod.
func healthState(t *testing.T, mod func(s *clusterState)) (*clusterState, *topology.Layout) {
	t.Helper()
	o := defaultObjects()
	s := &clusterState{}
	for _, n := range o.nodes {
		s.Nodes = append(s.Nodes, *n)
	}
	for _, p := range o.pods {
		s.Pods = append(s.Pods, p)
	}
	for _, p := range o.pdbs {
		s.PDBs = append(s.PDBs, *p)
	}
	if mod != nil {
		mod(s)
	}
	l, err := topology.BuildLayout(s.Nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

func pod(s *clusterState, name string) *corev1.Pod {
	for _, p := range s.Pods {
		if p.Name == name {
			return p
		}
	}
	panic("no pod " + name)
}

func removePod(s *clusterState, name string) {
	for i := range s.Pods {
		if s.Pods[i].Name == name {
			s.Pods = append(s.Pods[:i], s.Pods[i+1:]...)
			return
		}
	}
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func TestEvaluateHealth(t *testing.T) {
	for _, tc := range []struct {
		name        string
		domain      string
		mod         func(s *clusterState)
		wantGroups  []string
		wantWaiting []string
	}{
		{name: "healthy domain", domain: "ud-1", wantGroups: []string{"llama-0"}},
		{name: "healthy cluster", wantGroups: []string{"llama-0", "llama-1"}},
		{name: "worker not Ready", domain: "ud-1", mod: func(s *clusterState) { notReady(pod(s, "llama-0-1")) },
			wantGroups: []string{"llama-0"}, wantWaiting: []string{"group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"}},
		{name: "leader not Ready", domain: "ud-1", mod: func(s *clusterState) { notReady(pod(s, "llama-0")) },
			wantGroups: []string{"llama-0"}, wantWaiting: []string{"group inference/llama-0: leader llama-0 not Ready (1/2 members Ready)"}},
		{name: "worker missing", domain: "ud-1", mod: func(s *clusterState) { removePod(s, "llama-0-1") },
			wantGroups: []string{"llama-0"}, wantWaiting: []string{"group inference/llama-0: 1/2 members Ready"}},
		{name: "terminating member", domain: "ud-1", mod: func(s *clusterState) {
			now := metav1.NewTime(testNow)
			pod(s, "llama-0-1").DeletionTimestamp = &now
		}, wantGroups: []string{"llama-0"}, wantWaiting: []string{"group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"}},
		{name: "another domain's trouble does not count", domain: "ud-1", mod: func(s *clusterState) { notReady(pod(s, "llama-1-1")) },
			wantGroups: []string{"llama-0"}},
		{name: "a group not scheduled anywhere counts for every domain", domain: "ud-1", mod: func(s *clusterState) {
			for _, n := range []string{"llama-1", "llama-1-1"} {
				p := pod(s, n)
				p.Spec.NodeName, p.Status = "", corev1.PodStatus{Phase: corev1.PodPending}
			}
		}, wantGroups: []string{"llama-0", "llama-1"}, wantWaiting: []string{"group inference/llama-1: leader llama-1 not Ready (0/2 members Ready)"}},
		{name: "budget in deficit", domain: "ud-2", mod: func(s *clusterState) { s.PDBs[0].Status.CurrentHealthy = 0 },
			wantGroups: []string{"llama-1"}, wantWaiting: []string{"PodDisruptionBudget inference/llama-leaders: in deficit: 0 healthy, 1 needed"}},
		{name: "budget status behind the pods", domain: "ud-2", mod: func(s *clusterState) { s.PDBs[0].Status.CurrentHealthy = 1 },
			wantGroups: []string{"llama-1"}, wantWaiting: []string{"PodDisruptionBudget inference/llama-leaders: status counts 1 healthy, the pods show 2"}},
		{name: "recently disrupted pods are not counted", domain: "ud-2", mod: func(s *clusterState) {
			s.PDBs[0].Status.CurrentHealthy = 1
			s.PDBs[0].Status.DisruptedPods = map[string]metav1.Time{"llama-0": metav1.NewTime(testNow.Add(-time.Minute))}
		}, wantGroups: []string{"llama-1"}},
		{name: "budget spec not observed", domain: "ud-2", mod: func(s *clusterState) { s.PDBs[0].Generation = 2 },
			wantGroups: []string{"llama-1"}, wantWaiting: []string{"PodDisruptionBudget inference/llama-leaders: status not yet observed for the current spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, l := healthState(t, tc.mod)
			r := evaluateHealth(s, l, tc.domain, testNow)
			var groups []string
			for _, g := range r.Groups {
				groups = append(groups, g.Name)
			}
			if diff := cmp.Diff(tc.wantGroups, groups); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orEmpty(tc.wantWaiting), r.Waiting); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
			if r.Healthy != (len(tc.wantWaiting) == 0) {
				t.Errorf("healthy = %v with waiting %q", r.Healthy, r.Waiting)
			}
		})
	}
}

// TestWaitHealthy: wait-healthy returns once the group is Ready again, and
// exits 1 after --timeout (on the fake clock) when it never is.
func TestWaitHealthy(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		c := newCluster(t)
		setReady(t, c, "llama-0-1", false)
		cfg, _ := testConfig(c.client)
		ctx, _ := contextWithCancel(t)
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- Run(ctx, []string{"wait-healthy", "ud-1", "-o", "json"}, streamsOf(&out, &errOut), cfg)
		}()
		waitFor(t, func() bool { return strings.Contains(errOut.String(), "WaitingHealthy") })
		if want := `WaitingHealthy domain=ud-1 msg="group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"`; !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not say what it waits for (%s):\n%s", want, errOut.String())
		}
		setReady(t, c, "llama-0-1", true)
		if code := <-done; code != ExitOK {
			t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
		}
		var r HealthReport
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatal(err)
		}
		if !r.Healthy || len(r.Waiting) != 0 || r.Error != nil {
			t.Errorf("report: %+v, want healthy", r)
		}
	})
	t.Run("times out", func(t *testing.T) {
		c := newCluster(t)
		setReady(t, c, "llama-0-1", false)
		cfg, clk := testConfig(c.client)
		ctx, _ := contextWithCancel(t)
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- Run(ctx, []string{"wait-healthy", "ud-1", "--timeout", "10m"}, streamsOf(&out, &errOut), cfg)
		}()
		waitFor(t, func() bool { return strings.Contains(errOut.String(), "WaitingHealthy") && clk.HasWaiters() })
		clk.Step(10 * time.Minute)
		if code := <-done; code != ExitError {
			t.Fatalf("exit code %d, want %d; stderr:\n%s", code, ExitError, errOut.String())
		}
		if want := "Domain ud-1 is not healthy after 10m0s:\n  group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1\n"; out.String() != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
		}
		if want := "error: domain ud-1 not healthy within 10m0s: group inference/llama-0"; !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr has no %q:\n%s", want, errOut.String())
		}
	})
	t.Run("unknown domain", func(t *testing.T) {
		r := runOn(t, newCluster(t), "wait-healthy", "ud-7")
		if r.code != ExitUsage || !strings.Contains(r.stderr, `unknown upgrade domain "ud-7"`) {
			t.Errorf("exit code %d, stderr %q; want a usage error naming the domain", r.code, r.stderr)
		}
	})
}

func setReady(t *testing.T, c *cluster, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	p, err := c.client.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if _, err := c.client.CoreV1().Pods(testNS).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
