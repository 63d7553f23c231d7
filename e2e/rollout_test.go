package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// upgradeStep stands for the node upgrade (a reboot, a kubelet upgrade):
// the domain stays cordoned and empty for this long.
const upgradeStep = 2 * time.Second

// TestRolloutDisruptsEachGroupOnce is scenario 1: a rollout over 3 UDs x 2
// nodes with 3 groups of 4 pods. Every group is disrupted exactly once; at
// no recorded moment is more than one group unhealthy; in each UD every
// leader is evicted before any worker of that UD; at the end all groups
// are healthy and all nodes uncordoned.
func TestRolloutDisruptsEachGroupOnce(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{
		ID: "e2e", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, dom topology.Domain) error {
			time.Sleep(upgradeStep)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	t.Logf("rollout took %s", time.Since(start).Round(time.Millisecond))
	checkWholeRollout(t, s, start, "udrain rollout")
	sum := report.SummarizeRollout(res)
	if sum.DomainsDone != 3 || sum.Phase1Evicted != 3 || sum.Phase2Evicted != 9 || sum.GroupsDisrupted != 3 {
		t.Errorf("summary %+v, want 3 domains done, 3 pods evicted in phase 1 and 9 in phase 2, 3 groups disrupted", sum)
	}
	for _, dom := range res.Domains {
		if dom.State != eviction.StateDone || dom.Health == nil || !dom.Health.Healthy {
			t.Errorf("domain %s: status %s, health %+v; want Done and healthy", dom.Domain, dom.State, dom.Health)
		}
	}
	checkUpgradedAndUncordoned(t, s, "e2e")
}

// TestDrainBlocksWhileAnotherGroupIsDown is scenario 2: with the group in
// UD b unhealthy, draining UD a blocks on the PDB, the progress names the
// PDB and its counts, no worker of UD a is touched, and once the group
// heals the drain goes on and completes with no outside help.
func TestDrainBlocksWhileAnotherGroupIsDown(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	// Find the group in UD b (domain 1) and take one worker down.
	groups, err := s.lws.Health(ctx, s.tt.Client)
	if err != nil {
		t.Fatal(err)
	}
	var broken, drained int = -1, -1
	for _, g := range groups {
		switch g.UDs[0] {
		case s.nodes.UD(1):
			broken = g.Index
		case s.nodes.UD(0):
			drained = g.Index
		}
	}
	if broken < 0 || drained < 0 {
		t.Fatalf("groups not spread as expected: %+v", groups)
	}
	worker := s.lws.WorkerName(broken, 1)
	setContainersReady(t, s, worker, false)
	waitBudget(t, s, func(allowed, healthy int32) bool { return allowed == 0 && healthy == int32(s.lws.Groups-1) })

	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, _, err := d.Drain(ctx, s.nodes.UD(0), eviction.DrainOptions{ID: "e2e-blocked"})
		done <- err
	}()
	blocked, err := events.waitFor(ctx, time.Minute, func(e eviction.Event) bool { return e.Type == eviction.EventBlocked })
	if err != nil {
		t.Fatalf("the drain did not report a block: %v", err)
	}
	b := blocked.Block
	if b == nil || b.PDB != s.lws.PDBName() || b.DisruptionsAllowed != 0 || b.CurrentHealthy != 2 || b.DesiredHealthy != 2 || b.ExpectedPods != 3 {
		t.Errorf("block = %+v, want PDB %s allowing 0 with 2 healthy of 2 needed, 3 expected", b, s.lws.PDBName())
	}
	t.Logf("reported: %s", blocked.Message)
	// Stay blocked for a while: nothing of UD a may be evicted meanwhile.
	time.Sleep(3 * time.Second)
	for _, e := range s.observe(t, start).Evicted {
		t.Errorf("pod %s evicted while the drain was blocked", e.Name)
	}
	select {
	case err := <-done:
		t.Fatalf("drain returned while blocked: %v", err)
	default:
	}
	// The group heals; the drain must finish by itself.
	setContainersReady(t, s, worker, true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("drain after the group healed: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("drain did not finish within 2 minutes after the group healed")
	}
	s.recorded(t) // the drain saw its pods gone on its own watch
	o := s.observe(t, start)
	if got := len(o.Evicted); got != s.lws.Size {
		t.Errorf("%d pods evicted, want the %d of the drained group", got, s.lws.Size)
	}
	for _, p := range o.leadersFirst() {
		t.Error(p)
	}
	if len(events.ofType(eviction.EventUnblocked)) == 0 {
		t.Error("no Unblocked event")
	}
}

// setContainersReady makes a member's containers (un)ready, as a crashing
// model server would; the gate controller then turns its leader unready.
func setContainersReady(t *testing.T, s *scenario, pod string, ready bool) {
	t.Helper()
	if err := fixture.HoldUnready(t.Context(), s.tt.Client, s.lws.Namespace, pod, !ready); err != nil {
		t.Fatal(err)
	}
}

// waitBudget waits until the PDB's status satisfies ok.
func waitBudget(t *testing.T, s *scenario, ok func(allowed, healthy int32) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pdb, err := s.tt.Client.PolicyV1().PodDisruptionBudgets(s.lws.Namespace).Get(ctx, s.lws.PDBName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return ok(pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy), nil
	})
	if err != nil {
		t.Fatalf("PDB status: %v", err)
	}
}
