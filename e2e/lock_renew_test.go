package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// TestRolloutLockIsRenewed is issue 24's "the lock test does not prove
// renewal": a rollout holds a Lease of 3 s through an upgrade step of 10 s
// (more than three Lease durations), while a second rollout with the same
// ID tries to start every 500 ms. Without renewals the Lease would expire
// after 3 s and the second would take it over and run the same domains at
// once; with them every try is refused with a *RetryError (ReasonLocked) naming the
// holder, and the API server's Lease shows its renewTime moving on. Once
// the first rollout returns, its Lease is released and the second starts
// at once.
func TestRolloutLockIsRenewed(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	const (
		id       = "e2e-lock-renew"
		duration = 3 * time.Second
		step     = 10 * time.Second
	)
	dom := s.nodes.UD(0)
	inStep := make(chan struct{})
	var once sync.Once
	opts := eviction.RolloutOptions{ID: id, Domains: []string{dom}, RecoveryTimeout: 3 * time.Minute, LockIdentity: "holder", LockDuration: duration,
		Upgrade: func(ctx context.Context, _ topology.Domain) error {
			once.Do(func() { close(inStep) })
			select {
			case <-time.After(step):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	holder := s.drainer(t, &eventLog{}, eviction.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := holder.Rollout(ctx, opts)
		done <- err
	}()
	select {
	case <-inStep:
	case err := <-done:
		t.Fatalf("the rollout ended before its upgrade step: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("the rollout never reached its upgrade step")
	}

	other := s.drainer(t, &eventLog{}, eviction.Options{})
	otherOpts := opts
	otherOpts.LockIdentity = "other"
	otherOpts.Upgrade = func(context.Context, topology.Domain) error { return nil }
	leases := s.tt.Client.CoordinationV1().Leases(eviction.DefaultLockNamespace)
	renewals := map[time.Time]bool{}
	var refused int
	stepStart := time.Now()
	for time.Since(stepStart) < step-time.Second {
		_, err := other.Rollout(ctx, otherOpts)
		var locked *eviction.RetryError
		if !errors.As(err, &locked) || locked.Reason != eviction.ReasonLocked {
			t.Fatalf("a second rollout %s after the holder's upgrade step began, with a Lease of %s: %v, want a *RetryError, ReasonLocked", time.Since(stepStart).Round(time.Millisecond), duration, err)
		}
		if locked.Holder != "holder" {
			t.Errorf("the Locked RetryError names %q, want the holder", locked.Holder)
		}
		refused++
		l, err := leases.Get(ctx, "udrain-rollout-"+id, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.RenewTime != nil {
			renewals[l.Spec.RenewTime.Time] = true
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Renewed every third of its duration: about 9 renewal times in 9 s.
	if len(renewals) < 3 {
		t.Errorf("%d distinct renewTimes of the Lease seen over %s, want the holder to renew it every %s", len(renewals), step-time.Second, duration/3)
	}
	t.Logf("%d tries of a second rollout refused over %s (Lease of %s); %d renewals seen", refused, time.Since(stepStart).Round(time.Millisecond), duration, len(renewals))
	if err := <-done; err != nil {
		t.Fatalf("the holder's rollout: %v", err)
	}
	// Released on return: the second starts at once (its domain is done,
	// so it only checks and marks it).
	if _, err := other.Rollout(ctx, otherOpts); err != nil {
		t.Errorf("a second rollout after the holder returned: %v, want it to take the released Lease", err)
	}
}
