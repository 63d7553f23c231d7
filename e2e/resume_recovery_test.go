package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// TestResumeWaitsForUnscheduledGroups: a rollout stopped while a domain it
// has upgraded and uncordoned recovers, at a moment when the domain's
// evicted groups are Pending (no node yet: here the kube-scheduler is
// down), is run again with the same ID. The domain is skipped as
// upgraded, but its recovery must still wait for those groups: the run
// may report the domain recovered, and go on, only once they are healthy.
func TestResumeWaitsForUnscheduledGroups(t *testing.T) {
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	dom := s.nodes.UD(0)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := bed.StartComponents(ctx); err != nil && !errors.Is(err, testbed.ErrNotSupported) {
			t.Errorf("starting the kube-scheduler again: %v", err)
		}
	})
	opts := eviction.RolloutOptions{ID: "e2e-resume-pending", Domains: []string{dom}, RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, _ topology.Domain) error {
			// The replacements stay Pending: nothing schedules them.
			if err := bed.KillComponent(ctx, "kube-scheduler"); err != nil {
				if errors.Is(err, testbed.ErrNotSupported) {
					t.Skip("this cluster's scheduler cannot be stopped from a test:", err)
				}
				return err
			}
			return nil
		}}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	first := &eventLog{}
	d1 := hookedDrainer(t, s, "udrain-events-run1.txt", first, eviction.Options{}, func(e eviction.Event) {
		if e.Type == eviction.EventWaitingRecovery {
			once.Do(cancel)
		}
	})
	if _, err := d1.Rollout(runCtx, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want it cancelled while %s recovers", err, dom)
	}
	// The StatefulSets create the evicted pods again, Pending: the moment
	// this test is about. (Stopped before they exist, a run leaves no
	// trace of them in the cluster for the next one to find; see the
	// README's "What resume relies on".)
	created, stopCreated := context.WithTimeout(ctx, time.Minute)
	defer stopCreated()
	if _, err := fixture.WaitForPods(created, s.tt.Client, s.tt.Name, s.lws.Selector(), fixture.PodsCreated(s.lws.Groups*s.lws.Size)); err != nil {
		t.Fatalf("the evicted group's replacements: %v", err)
	}
	again := &eventLog{}
	d2 := hookedDrainer(t, s, "udrain-events-run2.txt", again, eviction.Options{}, nil)
	waitCtx, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	res, err := d2.Rollout(waitCtx, opts)
	// The scheduler is still down: the drained group cannot be healthy.
	if err == nil {
		h := res.Domains[0].Health
		t.Errorf("second run returned done with domain %s %s and health %+v, while its drained group is Pending (no scheduler): recovery did not wait for it",
			dom, res.Domains[0].State, h)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second run: %v, want it still waiting for the Pending group when the test's deadline ends", err)
	}
}
