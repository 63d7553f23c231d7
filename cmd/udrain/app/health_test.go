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
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/topology"
)

func objPod(o *clusterObjects, name string) *corev1.Pod {
	for _, p := range o.pods {
		if p.Name == name {
			return p
		}
	}
	panic("no pod " + name)
}

func removeObjPod(o *clusterObjects, name string) {
	for i := range o.pods {
		if o.pods[i].Name == name {
			o.pods = append(o.pods[:i], o.pods[i+1:]...)
			return
		}
	}
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

// healthOf is one wait-healthy evaluation, without waiting, of domain ("" for
// all) on the default fake cluster changed by mod.
func healthOf(t *testing.T, domain string, mod clusterOption) HealthReport {
	t.Helper()
	var opts []clusterOption
	if mod != nil {
		opts = append(opts, mod)
	}
	c := newCluster(t, opts...)
	h, err := newHealthCheck(c.client, topology.LayoutOptions{}, domain, clocktesting.NewFakeClock(testNow), func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.current(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHealthReport: which groups and budgets count for a domain, what is
// missing (package eviction's judgement), and that the report's groups,
// budgets and verdict agree with its waiting lines.
func TestHealthReport(t *testing.T) {
	type named struct {
		Name    string
		Healthy bool
	}
	ok := func(names ...string) []named {
		var out []named
		for _, n := range names {
			out = append(out, named{n, true})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		domain      string
		mod         clusterOption
		wantGroups  []named
		wantPDBs    []named
		wantWaiting []string
	}{
		{name: "healthy domain", domain: "ud-1", wantGroups: ok("llama-0"), wantPDBs: ok("llama-leaders")},
		{name: "healthy cluster", wantGroups: ok("llama-0", "llama-1"), wantPDBs: ok("llama-leaders")},
		{name: "worker not Ready", domain: "ud-1", mod: func(o *clusterObjects) { notReady(objPod(o, "llama-0-1")) },
			wantGroups: []named{{"llama-0", false}}, wantPDBs: ok("llama-leaders"),
			wantWaiting: []string{"group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"}},
		{name: "leader not Ready", domain: "ud-1", mod: func(o *clusterObjects) {
			notReady(objPod(o, "llama-0"))
			o.pdbs[0].Status.CurrentHealthy = 1
		}, wantGroups: []named{{"llama-0", false}}, wantPDBs: ok("llama-leaders"),
			wantWaiting: []string{"group inference/llama-0: leader llama-0 not Ready (1/2 members Ready)"}},
		{name: "worker missing", domain: "ud-1", mod: func(o *clusterObjects) { removeObjPod(o, "llama-0-1") },
			wantGroups: []named{{"llama-0", false}}, wantPDBs: ok("llama-leaders"),
			wantWaiting: []string{"group inference/llama-0: 1/2 members Ready; 1 missing"}},
		// Health is about groups, not about what a drain may evict: pods
		// kubectl drain would refuse without flags count too.
		{name: "members kubectl drain would refuse still count", domain: "ud-1", mod: func(o *clusterObjects) {
			for _, n := range []string{"llama-0", "llama-0-1"} {
				p := objPod(o, n)
				p.OwnerReferences = nil // unreplicated: refused without --force
				p.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}
			notReady(objPod(o, "llama-0-1"))
		}, wantGroups: []named{{"llama-0", false}}, wantPDBs: ok("llama-leaders"),
			wantWaiting: []string{"group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"}},
		{name: "terminating member", domain: "ud-1", mod: func(o *clusterObjects) {
			now := metav1.NewTime(testNow)
			objPod(o, "llama-0-1").DeletionTimestamp = &now
		}, wantGroups: []named{{"llama-0", false}}, wantPDBs: ok("llama-leaders"),
			wantWaiting: []string{"group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"}},
		{name: "another domain's trouble does not count", domain: "ud-1", mod: func(o *clusterObjects) {
			notReady(objPod(o, "llama-1-1"))
		}, wantGroups: ok("llama-0"), wantPDBs: ok("llama-leaders")},
		{name: "every domain: each line names its domain", mod: func(o *clusterObjects) { notReady(objPod(o, "llama-1-1")) },
			wantGroups: []named{{"llama-0", true}, {"llama-1", false}}, wantPDBs: ok("llama-leaders"),
			wantWaiting: []string{"ud-2: group inference/llama-1: 1/2 members Ready; not Ready: llama-1-1"}},
		// A group none of whose pods is on a node (Pending after a drain and
		// an uncordon by hand) is not healthy: eviction reports it as
		// "unscheduled".
		{name: "a group none of whose pods is on a node is not healthy", domain: "ud-1", mod: func(o *clusterObjects) {
			for _, n := range []string{"llama-0", "llama-0-1"} {
				p := objPod(o, n)
				p.Spec.NodeName, p.Status = "", corev1.PodStatus{Phase: corev1.PodPending}
			}
			o.pdbs[0].Status.CurrentHealthy = 1
		}, wantWaiting: []string{"unscheduled: group inference/llama-0: leader llama-0 not Ready (0/2 members Ready)"}},
		{name: "budget status behind the pods", domain: "ud-2", mod: func(o *clusterObjects) { o.pdbs[0].Status.CurrentHealthy = 1 },
			wantGroups: ok("llama-1"), wantPDBs: []named{{"llama-leaders", false}},
			wantWaiting: []string{"PodDisruptionBudget inference/llama-leaders: status counts 1 healthy, the pods show 2"}},
		// A Ready pod the disruption controller still lists as being evicted
		// is not counted by it until the entry expires: not healthy yet.
		{name: "a stale disruptedPods entry holds the budget back", domain: "ud-2", mod: func(o *clusterObjects) {
			o.pdbs[0].Status.CurrentHealthy = 1
			o.pdbs[0].Status.DisruptedPods = map[string]metav1.Time{"llama-0": metav1.NewTime(testNow.Add(-time.Minute))}
		}, wantGroups: ok("llama-1"), wantPDBs: []named{{"llama-leaders", false}},
			wantWaiting: []string{"PodDisruptionBudget inference/llama-leaders: status counts 1 healthy, the pods show 2; the disruption controller still counts llama-0 as being evicted (status.disruptedPods) until " +
				testNow.Add(time.Minute).UTC().Format(time.TimeOnly)}},
		{name: "budget spec not observed", domain: "ud-2", mod: func(o *clusterObjects) { o.pdbs[0].Generation = 2 },
			wantGroups: ok("llama-1"), wantPDBs: []named{{"llama-leaders", false}},
			wantWaiting: []string{"PodDisruptionBudget inference/llama-leaders: status not yet observed for the current spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := healthOf(t, tc.domain, tc.mod)
			var groups, pdbs []named
			for _, g := range r.Groups {
				groups = append(groups, named{g.Name, g.Healthy})
				if g.Healthy != (g.Reason == "") {
					t.Errorf("group %s: healthy %v with reason %q", g.Name, g.Healthy, g.Reason)
				}
			}
			for _, p := range r.PDBs {
				pdbs = append(pdbs, named{p.Name, p.Healthy})
			}
			if diff := cmp.Diff(tc.wantGroups, groups); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPDBs, pdbs); diff != "" {
				t.Errorf("budgets (-want +got):\n%s", diff)
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
		out, errOut, done := runInBackground(ctx, cfg, "wait-healthy", "ud-1", "-o", "json")
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
		if !r.Healthy || len(r.Waiting) != 0 || r.Error != nil || len(r.Groups) != 1 || !r.Groups[0].Healthy {
			t.Errorf("report: %+v, want healthy", r)
		}
	})
	t.Run("times out", func(t *testing.T) {
		c := newCluster(t)
		setReady(t, c, "llama-0-1", false)
		cfg, clk := testConfig(c.client)
		ctx, _ := contextWithCancel(t)
		out, errOut, done := runInBackground(ctx, cfg, "wait-healthy", "ud-1", "--timeout", "10m")
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
	t.Run("interrupted", func(t *testing.T) {
		c := newCluster(t)
		setReady(t, c, "llama-0-1", false)
		cfg, _ := testConfig(c.client)
		ctx, cancel := contextWithCancel(t)
		out, errOut, done := runInBackground(ctx, cfg, "wait-healthy", "ud-1", "-o", "json")
		waitFor(t, func() bool { return strings.Contains(errOut.String(), "WaitingHealthy") })
		cancel()
		if code := <-done; code != ExitInterrupted {
			t.Fatalf("exit code %d, want %d; stderr:\n%s", code, ExitInterrupted, errOut.String())
		}
		var r HealthReport
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatalf("%v; stdout:\n%s", err, out.String())
		}
		want := []string{"group inference/llama-0: 1/2 members Ready; not Ready: llama-0-1"}
		if diff := cmp.Diff(want, r.Waiting); diff != "" || r.Healthy || r.Error == nil || r.Error.Reason != "Interrupted" {
			t.Errorf("report %+v; waiting (-want +got):\n%s", r, diff)
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
