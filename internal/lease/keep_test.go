package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/udrain/udrain/internal/testkit"
)

// renewal is how the server answers a renewal.
type renewal int

const (
	renewed     renewal = iota // it is written
	unavailable                // 503
	stolen                     // another holder took the Lease: a conflict
	raced                      // a conflict, but the Lease is still ours
	unreadable                 // a conflict, and then the Lease cannot be read
)

// The Lease (30 s) is renewed every 10 s of the clock; renewals that fail
// lose it once the last success is more than 20 s old, or at once when
// another holder has it.
func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		renewals  []renewal // one per tick of 10 s
		wantLost  string    // in the error Keep reports after the last tick; empty: kept
		wantSpec  coordinationv1.LeaseSpec
		wantCause func(error) bool
	}{
		{name: "renewed on the clock", renewals: []renewal{renewed, renewed, renewed},
			wantSpec: spec(t0, t0.Add(30*time.Second))},
		{name: "two failures are within the Lease", renewals: []renewal{renewed, unavailable, unavailable},
			wantSpec: spec(t0, t0.Add(10*time.Second))},
		{name: "the third is too late", renewals: []renewal{renewed, unavailable, unavailable, unavailable},
			wantLost: "Lease udrain-system/udrain-rollout-r is lost: etcd is down", wantCause: apierrors.IsServiceUnavailable},
		{name: "a success starts over", renewals: []renewal{unavailable, unavailable, renewed, unavailable, unavailable},
			wantSpec: spec(t0, t0.Add(30*time.Second))},
		{name: "taken over", renewals: []renewal{renewed, stolen},
			wantLost:  `another holder took it over (held by "other", renewed at 2026-12-01T08:00:20Z)`, // as it took it
			wantCause: apierrors.IsConflict},
		{name: "a race with itself is renewed at the next tick", renewals: []renewal{raced, renewed},
			wantSpec: spec(t0, t0.Add(20*time.Second))},
		{name: "a conflict it cannot read is a failed renewal", renewals: []renewal{unreadable, renewed},
			wantSpec: spec(t0, t0.Add(20*time.Second))},
		{name: "and counts as one", renewals: []renewal{unreadable, unavailable, unavailable},
			wantLost: "Lease udrain-system/udrain-rollout-r is lost: etcd is down", wantCause: apierrors.IsServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			client, clk, h := acquired(t, &logs)
			answers := make(chan renewal, len(tc.renewals))
			for _, r := range tc.renewals {
				answers <- r
			}
			attempts := serve(client, answers)
			lost := runKeep(t, testContext(t, &logs), clk, h, len(tc.renewals), attempts)
			if tc.wantLost == "" {
				if lost != nil {
					t.Fatalf("lost at %s: %v; want kept", clk.Now().Sub(t0), lost)
				}
				checkLease(t, client, &tc.wantSpec)
				return
			}
			if lost == nil || !strings.Contains(lost.Error(), tc.wantLost) || !tc.wantCause(lost) || lost.Namespace != ns || lost.Name != name {
				t.Fatalf("lost: %v; want a *LostError of the Lease with %q", lost, tc.wantLost)
			}
			if !strings.Contains(logs.String(), `"msg"="Renewing the rollout's Lease failed; retrying" "lease"="udrain-system/udrain-rollout-r"`) && tc.renewals[len(tc.renewals)-1] != stolen {
				t.Errorf("logs:\n%s\nwant the failed renewals", logs.String())
			}
		})
	}
}

// spec is the Lease spec of "me", taken at taken and renewed at at.
func spec(taken, at time.Time) coordinationv1.LeaseSpec {
	s := ours(taken)
	mt := metav1.NewMicroTime(at)
	s.RenewTime = &mt
	return s
}

// acquired is a Lease of "me" taken at t0 on a fake clock.
func acquired(t *testing.T, logs *testkit.SyncBuffer) (*fake.Clientset, testkit.JudgedClock, *Held) {
	t.Helper()
	client, clk := fake.NewClientset(), testkit.NewJudgedClock(t0)
	h, err := New(client, clk, testConfig()).Acquire(testContext(t, logs))
	if err != nil {
		t.Fatal(err)
	}
	return client, clk, h
}

// serve answers each renewal as the next of answers says, and reports it
// on the channel it returns.
func serve(client *fake.Clientset, answers chan renewal) <-chan renewal {
	attempts := make(chan renewal, cap(answers))
	failGet := false
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failGet {
			failGet = false
			return true, nil, errors.New("connection reset by peer")
		}
		return false, nil, nil
	})
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := <-answers
		defer func() { attempts <- r }()
		switch r {
		case unavailable:
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		case stolen:
			l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
			l.Spec.HolderIdentity = ptr.To("other")
			if err := client.Tracker().Update(leases, l, ns); err != nil {
				return true, nil, err
			}
			return true, nil, conflict()
		case raced:
			return true, nil, conflict()
		case unreadable:
			failGet = true
			return true, nil, conflict()
		}
		return false, nil, nil
	})
	return attempts
}

// runKeep runs Keep, steps the clock n times by 10 s, each time once the
// renewal is answered (and, if it failed, judged), and returns what Keep
// reported lost: it must report it after the last tick or not at all.
func runKeep(t *testing.T, ctx context.Context, clk testkit.JudgedClock, h *Held, n int, attempts <-chan renewal) *LostError {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lost *LostError
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Keep(ctx, func(err *LostError) { lost = err })
	}()
	for i := range n {
		for !clk.HasWaiters() {
			select {
			case <-done:
				t.Fatalf("Keep returned before tick %d (lost: %v)", i+1, lost)
			case <-time.After(time.Millisecond):
			}
		}
		clk.Step(10 * time.Second)
		var r renewal
		select {
		case r = <-attempts:
		case <-done:
			select {
			case r = <-attempts: // answered, then lost
			default:
				t.Fatalf("Keep returned before tick %d (lost: %v)", i+1, lost)
			}
		case <-ctx.Done():
			t.Fatalf("tick %d: no renewal", i+1)
		}
		if r == unavailable || r == unreadable {
			<-clk.Judged
		}
	}
	select {
	case <-done:
		return lost
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	<-done
	return lost
}

// Release clears the holder of a Lease still its own, and leaves any
// other alone.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name        string
		react       func(c *fake.Clientset)
		wantHolder  *string // nil: released
		wantUpdates int
		wantLog     string
	}{
		{name: "its own: released", wantUpdates: 1},
		{name: "taken over: left alone", wantHolder: ptr.To("other"), react: func(c *fake.Clientset) {
			_ = c.Tracker().Update(leases, heldBy("other", &t0), ns)
		}},
		{name: "gone", react: func(c *fake.Clientset) { _ = c.Tracker().Delete(leases, ns, name) }},
		{name: "a race is looked at again", wantUpdates: 2,
			react: func(c *fake.Clientset) { c.PrependReactor("update", "leases", once(1, conflict(), nil)) }},
		{name: "three races: it expires by itself", wantHolder: ptr.To("me"), wantUpdates: 3,
			react: func(c *fake.Clientset) { c.PrependReactor("update", "leases", once(3, conflict(), nil)) }},
		{name: "failed: it expires by itself", wantHolder: ptr.To("me"), wantUpdates: 1,
			react: func(c *fake.Clientset) {
				c.PrependReactor("update", "leases", once(1, apierrors.NewServiceUnavailable("etcd is down"), nil))
			},
			wantLog: `"msg"="Releasing the rollout's Lease failed; it expires by itself" "lease"="udrain-system/udrain-rollout-r" "err"="etcd is down"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			client, _, h := acquired(t, &logs)
			client.ClearActions()
			if tc.react != nil {
				tc.react(client)
			}
			h.Release(testContext(t, &logs))
			updates := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" {
					updates++
				}
			}
			if updates != tc.wantUpdates {
				t.Errorf("%d update(s), want %d", updates, tc.wantUpdates)
			}
			if o, err := client.Tracker().Get(leases, ns, name); err == nil {
				if got := o.(*coordinationv1.Lease).Spec.HolderIdentity; !cmp.Equal(got, tc.wantHolder) {
					t.Errorf("holder %v, want %v", ptr.Deref(got, "none"), ptr.Deref(tc.wantHolder, "none"))
				}
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("logs:\n%s\nwant a line with %s", logs.String(), tc.wantLog)
			}
		})
	}
}
