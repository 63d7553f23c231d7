package nativegroups

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// upgradeStep stands for the node upgrade: the domain stays cordoned and
// empty this long.
const upgradeStep = 2 * time.Second

// TestRolloutTakesGroupsFromPodGroups: three gangs, each a PodGroup (gang
// of 2, disruptionMode all) and two 8-GPU pods that name it and carry no
// other group label, one gang per domain. udrain's plan finds each gang as
// a group of the PodGroup kind, sized by its minCount; a rollout evicts each
// gang whole in its domain's drain, disrupts it once, and waits for it to
// be whole and Ready again before the next domain, so no two gangs are ever
// down at once. The same rollout with label groupers only (no PodGroups)
// is the control: it does not wait, and two gangs are down at once.
func TestRolloutTakesGroupsFromPodGroups(t *testing.T) {
	tt := bed.ForTest(t)
	ctx := t.Context()
	c := tt.Client
	if _, err := c.SchedulingV1beta1().PodGroups(tt.Name).List(ctx, metav1.ListOptions{}); err != nil {
		if apierrors.IsNotFound(err) && os.Getenv("E2E_KUBECONFIG") != "" {
			t.Skip("the existing cluster (E2E_KUBECONFIG) does not serve PodGroups: it runs without the GenericWorkload feature gate")
		}
		t.Fatalf("PodGroups are not served although the testbed turned GenericWorkload on: %v", err)
	}
	gpu := fixture.H100()
	nodes := fixture.Nodes{Pool: tt.Name, UDs: 3, PerUD: 2, GPU: &gpu}
	if _, err := nodes.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	g := fixture.Gangs{Namespace: tt.Name, Name: "gang", Domains: []string{nodes.UD(0), nodes.UD(1), nodes.UD(2)},
		Size: 2, GPUsPerPod: 8, Pool: tt.Name, ReadyDelay: 2 * time.Second, TerminateDelay: time.Second}
	rec, err := fixture.RecordPods(ctx, c, tt.Name, g.Selector())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Stop)
	tt.OnFailure("pod-timeline.txt", rec.WriteTimeline)
	if err := g.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	pods, err := fixture.WaitForPods(ctx, c, tt.Name, g.Selector(), fixture.PodsReady(len(g.Domains)*g.Size))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		i, _ := g.GangIndex(&p)
		if sg := p.Spec.SchedulingGroup; sg == nil || sg.PodGroupName == nil || *sg.PodGroupName != g.GangName(i) {
			t.Fatalf("pod %s: spec.schedulingGroup %+v, want podGroupName %s (the API server drops it without the gate)", p.Name, sg, g.GangName(i))
		}
	}

	// What udrain sees: the real PodGroups make the groups.
	pgs, err := c.SchedulingV1beta1().PodGroups(tt.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type group struct {
		ID         topology.GroupID
		Size       int
		DisruptAll bool
		Members    int
	}
	var got []group
	for _, gr := range topology.FindGroups(topology.PodPointers(pods), topology.ByPodGroup(pgs.Items)) {
		got = append(got, group{gr.ID, gr.ExpectedSize(), gr.DisruptAll, len(gr.Members)})
	}
	var want []group
	for i := range g.Domains {
		want = append(want, group{topology.GroupID{Kind: topology.KindPodGroup, Namespace: tt.Name, Name: g.GangName(i)}, g.Size, true, g.Size})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups of the PodGroups (-want +got):\n%s", diff)
	}
	d, err := eviction.New(c, eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.Plan(ctx, nodes.UD(0))
	if err != nil {
		t.Fatal(err)
	}
	type plannedGroup struct {
		ID            topology.GroupID
		Workload      string
		Size, Evicted int
		Healthy       bool
	}
	wantPlan := []plannedGroup{{ID: want[0].ID, Workload: g.GangName(0), Size: g.Size, Evicted: g.Size, Healthy: true}}
	var gotPlan []plannedGroup
	for _, pg := range plan.Groups {
		gotPlan = append(gotPlan, plannedGroup{ID: pg.ID, Workload: pg.Workload, Size: pg.Size, Evicted: pg.Evicted, Healthy: pg.Healthy})
	}
	if diff := cmp.Diff(wantPlan, gotPlan); diff != "" {
		t.Errorf("groups of the plan of %s (-want +got):\n%s", nodes.UD(0), diff)
	}
	if len(plan.Phase1) != 0 || len(plan.Phase2) != g.Size {
		t.Errorf("plan of %s: %d pods in phase 1, %d in phase 2; want 0 and the gang's %d (no PDB)", nodes.UD(0), len(plan.Phase1), len(plan.Phase2), g.Size)
	}

	status := func(pods []corev1.Pod) []fixture.GroupStatus { return g.Groups(pods, nl.Items) }
	rollout := func(id string, opts eviction.Options) (fixture.Timeline, *eviction.RolloutResult) {
		t.Helper()
		d, err := eviction.New(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := d.Rollout(ctx, eviction.RolloutOptions{
			ID: id, Domains: g.Domains, RecoveryTimeout: 2 * time.Minute,
			Upgrade: func(context.Context, topology.Domain) error { time.Sleep(upgradeStep); return nil },
		})
		if err != nil {
			t.Fatalf("rollout %s: %v", id, err)
		}
		if _, err := fixture.WaitForPods(ctx, c, tt.Name, g.Selector(), fixture.PodsReady(len(g.Domains)*g.Size)); err != nil {
			t.Fatal(err)
		}
		tl, err := fixture.NewTimeline(rec.Events(), start, status, g.GangIndex)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rollout %s took %s; fewest gangs healthy %d", id, time.Since(start).Round(time.Millisecond), tl.MinHealthy)
		return tl, res
	}

	tl, res := rollout("e2e-podgroups", eviction.Options{})
	if tot := report.SummarizeRollout(res); tot.DomainsDone != 3 || tot.Phase1Evicted != 0 || tot.Phase2Evicted != 6 || tot.GroupsDisrupted != 3 {
		t.Errorf("totals %+v, want 3 domains, 6 pods in phase 2, 3 groups disrupted", tot)
	}
	if want := len(g.Domains) - 1; tl.MinHealthy < want {
		t.Errorf("only %d gangs healthy at %s, want at least %d: udrain did not wait for a gang", tl.MinHealthy, tl.MinHealthyAt.Format("15:04:05.000"), want)
	}
	for k, gt := range tl.Groups {
		if gt.Disruptions != 1 || gt.Evicted != g.Size {
			t.Errorf("gang %d: disrupted %d times, %d of its %d pods evicted; want once, all", k, gt.Disruptions, gt.Evicted, g.Size)
		}
		t.Logf("gang %d: its %d pods evicted within %s; whole and Ready again after %s", k, gt.Evicted,
			gt.LastEvicted.Sub(gt.FirstEvicted).Round(time.Millisecond), gt.Recovered.Sub(gt.FirstEvicted).Round(time.Millisecond))
		if k == 0 {
			continue
		}
		prev := tl.Groups[k-1]
		if !prev.LastEvicted.Before(gt.FirstEvicted) || prev.Recovered.IsZero() || !prev.Recovered.Before(gt.FirstEvicted) {
			t.Errorf("gang %d evicted from %s, gang %d evicted until %s and whole again at %s: want each gang evicted together and recovered before the next",
				k, gt.FirstEvicted.Format("15:04:05.000"), k-1, prev.LastEvicted.Format("15:04:05.000"), prev.Recovered.Format("15:04:05.000"))
		}
	}

	// The control: without the PodGroups, udrain sees no group and moves on
	// at once.
	control, _ := rollout("e2e-labels-only", eviction.Options{Groupers: topology.DefaultGroupers()})
	if control.MinHealthy >= len(g.Domains)-1 {
		t.Errorf("with label groupers only, the fewest gangs healthy was %d: the control shows no difference, so the test above proves nothing", control.MinHealthy)
	}
}
