package gate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

// problemOf returns the HealthProblem of a check's error, "" for nil and
// "not a HealthError" for another error.
func problemOf(err error) HealthProblem {
	if err == nil {
		return ""
	}
	var he *HealthError
	if !errors.As(err, &he) {
		return "not a HealthError"
	}
	return he.Problem
}

type verdicts struct {
	Alive, Ready HealthProblem
}

func verdictsOf(h Health) verdicts {
	return verdicts{problemOf(h.Alive()), problemOf(h.Ready())}
}

// TestHealthVerdicts: the liveness and readiness of each state, at the
// bound and past it.
func TestHealthVerdicts(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	const bound = time.Minute
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	synced := Health{Time: now, Running: true, Synced: true, MaxSyncAge: bound}
	leader := synced
	leader.Leading, leader.LeadingSince, leader.LastSync = true, ago(time.Hour), ago(5*time.Second)
	with := func(h Health, mod func(*Health)) Health { mod(&h); return h }

	tests := []struct {
		name string
		h    Health
		want verdicts
	}{
		{"not started", Health{Time: now, MaxSyncAge: bound}, verdicts{NotRunning, NotRunning}},
		{"cache filling", Health{Time: now, Running: true, MaxSyncAge: bound}, verdicts{"", NotSynced}},
		{"standby", synced, verdicts{"", ""}},
		{"standby, never leads, so probes do not apply", with(synced, func(h *Health) { h.ProbeQueued = ago(time.Hour) }), verdicts{"", ""}},
		{"leader, idle", leader, verdicts{"", ""}},
		{"leader, new, no probe through yet", with(leader, func(h *Health) { h.LeadingSince, h.LastSync = now, time.Time{} }), verdicts{"", ""}},
		{"leader, probe on its way", with(leader, func(h *Health) { h.ProbeQueued = ago(bound) }), verdicts{"", ""}},
		{"leader, probe stuck", with(leader, func(h *Health) { h.ProbeQueued = ago(bound + time.Millisecond) }), verdicts{QueueStalled, QueueStalled}},
		{"leader, reconcile running", with(leader, func(h *Health) { h.ReconcilingSince = ago(bound) }), verdicts{"", ""}},
		{"leader, reconcile stuck", with(leader, func(h *Health) { h.ReconcilingSince = ago(2 * bound) }), verdicts{ReconcileStalled, ReconcileStalled}},
		{"leader, failing lately", with(leader, func(h *Health) { h.Failing, h.FailingSince = 2, ago(bound) }), verdicts{"", ""}},
		{"leader, failing too long", with(leader, func(h *Health) { h.Failing, h.FailingSince = 2, ago(bound+time.Second) }), verdicts{"", SyncFailing}},
		{"leader, stuck and failing", with(leader, func(h *Health) {
			h.Failing, h.FailingSince, h.ProbeQueued = 1, ago(2*bound), ago(2*bound)
		}), verdicts{QueueStalled, QueueStalled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, verdictsOf(tt.h)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealthString(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		h    Health
		want string
	}{
		{Health{Time: now}, "not running"},
		{Health{Time: now, Running: true}, "pod cache filling"},
		{Health{Time: now, Running: true, Synced: true}, "standby; pod cache synced"},
		{Health{Time: now, Running: true, Synced: true, Leading: true, LeadingSince: ago(2 * time.Second)},
			"leading for 2s; no sync probe through yet; pod cache synced"},
		{Health{Time: now, Running: true, Synced: true, Leading: true, LeadingSince: ago(5*time.Minute + 2*time.Second + 300*time.Millisecond),
			LastSync: ago(3140 * time.Millisecond), Failing: 2, FailingSince: ago(90 * time.Second)},
			"leading for 5m2s; last successful sync 3.1s ago; 2 group(s) failing for 1m30s; pod cache synced"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// healthState is what the tests of a running controller compare.
type healthState struct {
	Running, Synced, Leading bool
	LastSync, ProbeQueued    time.Time
	Failing                  int
	Alive, Ready             HealthProblem
}

func stateOf(c *Controller) healthState {
	h := c.Health()
	return healthState{h.Running, h.Synced, h.Leading, h.LastSync, h.ProbeQueued, h.Failing,
		problemOf(h.Alive()), problemOf(h.Ready())}
}

// TestHealthOfAController goes through the states of one controller
// without leader election: cache filling, leading and in sync, stuck on a
// write past the bound, and back.
func TestHealthOfAController(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(t0)
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, nil)...)

	// The first list waits, so that the cache is seen filling.
	listed := make(chan struct{})
	var listOnce sync.Once
	fc.client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		listOnce.Do(func() { <-listed })
		return false, nil, nil
	})
	// The patch of the second write hangs until released.
	var patches atomic.Int32
	patchEntered, releasePatch := make(chan struct{}), make(chan struct{})
	fc.client.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if patches.Add(1) == 2 {
			close(patchEntered)
			<-releasePatch
		}
		return false, nil, nil
	})

	c := fc.start(Options{Clock: clock, Workers: 1, MaxSyncAge: time.Minute}).ctrl
	fc.waitFor("Run to start", func() bool { return c.Health().Running })
	if diff := cmp.Diff(healthState{Running: true, Ready: NotSynced}, stateOf(c)); diff != "" {
		t.Errorf("while the cache fills (-want +got):\n%s", diff)
	}
	if err := c.Readyz(); problemOf(err) != NotSynced {
		t.Errorf("Readyz while the cache fills: %v, want NotSynced", err)
	}

	close(listed)
	fc.waitFor("the first write", func() bool { return leaderStatus(fc) == corev1.ConditionTrue })
	fc.waitFor("a sync probe through", func() bool { return c.Readyz() == nil && !c.Health().LastSync.IsZero() })
	fc.waitFor("the last probe through", func() bool { return c.Health().ProbeQueued.IsZero() })
	if diff := cmp.Diff(healthState{Running: true, Synced: true, Leading: true, LastSync: t0}, stateOf(c)); diff != "" {
		t.Errorf("leading, in sync (-want +got):\n%s", diff)
	}

	// The only worker hangs in the next write; a probe queued then waits.
	fc.update("vllm-0-1", notReady)
	<-patchEntered
	if err := c.Readyz(); err != nil {
		t.Errorf("Readyz with a probe just queued: %v, want nil", err)
	}
	clock.SetTime(t0.Add(time.Minute))
	if err := c.Healthz(); err != nil {
		t.Errorf("Healthz at the bound: %v, want nil", err)
	}
	clock.SetTime(t0.Add(time.Minute + time.Second))
	if diff := cmp.Diff(healthState{Running: true, Synced: true, Leading: true, LastSync: t0, ProbeQueued: t0, Alive: QueueStalled, Ready: QueueStalled}, stateOf(c)); diff != "" {
		t.Errorf("stuck past the bound (-want +got):\n%s", diff)
	}
	if h := c.Health(); !h.ReconcilingSince.Equal(t0) {
		t.Errorf("ReconcilingSince = %v, want %v", h.ReconcilingSince, t0)
	}
	if err := c.Healthz(); err == nil || !strings.Contains(err.Error(), "queued 1m1s ago (bound 1m0s)") {
		t.Errorf("Healthz: %v, want the probe's age and the bound", err)
	}

	close(releasePatch)
	t1 := clock.Now()
	fc.waitFor("the probe through", func() bool { return c.Healthz() == nil && c.Health().LastSync.Equal(t1) })
	fc.waitFor("the write", func() bool { return leaderStatus(fc) == corev1.ConditionFalse })
}

// leaderStatus is the status of vllm-0's condition; "" if it has none.
func leaderStatus(fc *fakeCluster) corev1.ConditionStatus {
	if c := CurrentCondition(fc.pod("vllm-0")); c != nil {
		return c.Status
	}
	return ""
}

// TestHealthWhileWritesFail: a leader whose writes keep failing stays
// alive (a restart would not help) but is not ready past the bound, and
// is ready again once a write goes through.
func TestHealthWhileWritesFail(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(t0)
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, nil)...)
	var refuse atomic.Bool
	refuse.Store(true)
	fc.client.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "vllm-0", errors.New("RBAC says no"))
		}
		return false, nil, nil
	})
	r := fc.start(Options{Clock: clock, MaxSyncAge: time.Minute})
	c := r.ctrl
	fc.waitFor("a failed write", func() bool { return c.Health().Failing == 1 })
	if err := c.Readyz(); err != nil {
		t.Errorf("Readyz right after the failure: %v, want nil", err)
	}
	clock.SetTime(t0.Add(2 * time.Minute))
	// A probe queued, then seen through: a check that queues one and
	// looks at once would need the worker to run in between.
	_ = c.Healthz()
	fc.waitFor("a probe through", func() bool { return c.Health().ProbeQueued.IsZero() })
	if err := c.Health().Alive(); err != nil {
		t.Errorf("alive with its probe through: %v, want nil", err)
	}
	if diff := cmp.Diff(healthState{Running: true, Synced: true, Leading: true, Failing: 1, Ready: SyncFailing}, stateOf(c)); diff != "" {
		t.Errorf("failing past the bound (-want +got):\n%s", diff)
	}
	h := c.Health()
	if !h.FailingSince.Equal(t0) || !apierrors.IsForbidden(h.LastError) {
		t.Errorf("FailingSince %v, LastError %v; want %v and the Forbidden", h.FailingSince, h.LastError, t0)
	}

	refuse.Store(false)
	fc.waitFor("the write through, then a probe", func() bool { return c.Readyz() == nil && c.Health().LastSync.Equal(t0.Add(2*time.Minute)) })
}

// TestHealthOfTwoReplicas: the standby is alive and ready without
// reconciling; when the leader stops, it leads and syncs.
func TestHealthOfTwoReplicas(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, nil)...)
	election := func(id string) *LeaderElection {
		return &LeaderElection{Namespace: "udrain-system", Identity: id, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 50 * time.Millisecond}
	}
	a := fc.start(Options{LeaderElection: election("a")})
	fc.waitFor("a to lead and sync", func() bool { return a.ctrl.Readyz() == nil && !a.ctrl.Health().LastSync.IsZero() })
	b := fc.start(Options{LeaderElection: election("b")})
	fc.waitFor("b to see a lead", func() bool { return b.rec.sawLeader("a") && b.ctrl.Health().Synced })
	if err := b.ctrl.Readyz(); err != nil {
		t.Errorf("standby Readyz: %v, want nil", err)
	}
	if h := b.ctrl.Health(); h.Leading || !h.ProbeQueued.IsZero() || !strings.HasPrefix(h.String(), "standby;") {
		t.Errorf("standby: %+v (%s), want not leading, no probe", h, h)
	}

	a.stop()
	if err := a.ctrl.Readyz(); problemOf(err) != NotRunning {
		t.Errorf("a's Readyz once stopped: %v, want NotRunning", err)
	}
	fc.waitFor("b to lead and sync", func() bool {
		return b.ctrl.Readyz() == nil && b.ctrl.Health().Leading && !b.ctrl.Health().LastSync.IsZero()
	})
}

// TestHealthHandler: the answers of /healthz and /readyz, with the state.
func TestHealthHandler(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, nil)...)
	c, err := New(fc.client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, path string) (int, string) {
		rec := httptest.NewRecorder()
		c.HealthHandler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}
	if code, body := get("GET", "/healthz"); code != http.StatusServiceUnavailable || body != "NotRunning: the controller is not running (Run was not called, or has returned)\nnot running\n" {
		t.Errorf("before Run: /healthz %d %q", code, body)
	}

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	fc.waitFor("a sync probe through", func() bool { code, _ := get("GET", "/readyz"); return code == 200 && !c.Health().LastSync.IsZero() })
	code, body := get("GET", "/readyz")
	if code != http.StatusOK || !strings.HasPrefix(body, "ok\nleading for ") || !strings.Contains(body, "; last successful sync ") {
		t.Errorf("/readyz of a leader in sync: %d %q", code, body)
	}
	if code, body := get("GET", "/healthz"); code != http.StatusOK || !strings.HasPrefix(body, "ok\n") {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get("HEAD", "/readyz"); code != http.StatusOK {
		t.Errorf("HEAD /readyz: %d", code)
	}
	if code, _ := get("POST", "/readyz"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /readyz: %d, want 405", code)
	}
	if code, _ := get("GET", "/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics: %d, want 404", code)
	}
}
