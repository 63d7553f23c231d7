package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

func healthy(n int) verdict {
	return verdict{corev1.ConditionTrue, health.ReasonGroupReady, fmt.Sprintf("%d/%d members healthy", n, n)}
}

// TestControllerFollowsMembers starts the controller on a group, changes a
// member through the API, and checks every write to the leader.
func TestControllerFollowsMembers(t *testing.T) {
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		change func(*fakeCluster)
		want   []verdict // every condition written, in order
	}{{
		name:   "member deleted",
		pods:   lwsGroup("vllm", 0, 4, nil),
		change: func(fc *fakeCluster) { fc.delete("vllm-0-3") },
		want:   []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-3 missing; 3/4 members healthy"}},
	}, {
		name:   "member unready",
		pods:   lwsGroup("vllm", 0, 4, nil),
		change: func(fc *fakeCluster) { fc.update("vllm-0-2", notReady) },
		want:   []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-2 not ready; 3/4 members healthy"}},
	}, {
		name:   "member terminating",
		pods:   lwsGroup("vllm", 0, 4, nil),
		change: func(fc *fakeCluster) { fc.update("vllm-0-1", terminating) },
		want:   []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberTerminating, "vllm-0-1 terminating; 3/4 members healthy"}},
	}, {
		name:   "leader's containers unready",
		pods:   lwsGroup("vllm", 0, 4, nil),
		change: func(fc *fakeCluster) { fc.update("vllm-0", containersNotReady) },
		want:   []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0 containers not ready; 3/4 members healthy"}},
	}, {
		name: "group short of size",
		pods: lwsGroup("vllm", 0, 4, nil, 3),
		want: []verdict{{corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-3 missing; 3/4 members healthy"}},
	}, {
		name:   "recovery: the missing member comes back",
		pods:   lwsGroup("vllm", 0, 4, nil, 3),
		change: func(fc *fakeCluster) { fc.create(lwsPod("vllm", 0, 3, 4)) },
		want:   []verdict{{corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-3 missing; 3/4 members healthy"}, healthy(4)},
	}, {
		name:   "recovery: the unready member becomes ready",
		pods:   lwsGroup("vllm", 0, 4, map[int][]podOption{2: {notReady}}),
		change: func(fc *fakeCluster) { fc.update("vllm-0-2", ready) },
		want:   []verdict{{corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-2 not ready; 3/4 members healthy"}, healthy(4)},
	}, {
		name:   "member relabeled into another group",
		pods:   lwsGroup("vllm", 0, 4, nil),
		change: func(fc *fakeCluster) { fc.update("vllm-0-3", withLabel(topology.LWSGroupIndexLabel, "1")) },
		want:   []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberMissing, "vllm-0-3 missing; 3/4 members healthy"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, tt.pods...)
			ctrl := fc.start(Options{})
			// Change the member only once the controller has seen its own
			// first write. The fake clientset keeps no resourceVersions, so
			// a write decided on a cache that has not seen the previous
			// one would go through here; an API server refuses it with
			// Conflict (the patch carries the resourceVersion, see
			// TestPatch), and the controller retries from fresh state.
			fc.waitFor("the first write", func() bool {
				return len(ctrl.rec.changeList()) >= 1 && ctrl.rec.count("vllm-0", syncUnchanged) > 0
			})
			if tt.change != nil {
				tt.change(fc)
			}
			fc.waitFor("every write", func() bool { return len(ctrl.rec.changeList()) >= len(tt.want) })
			// The controller has seen its last write and found nothing
			// more to do: no write can still be on its way.
			last := ctrl.rec.changeList()[len(tt.want)-1]
			fc.waitFor("the controller to see its last write", func() bool {
				cur := CurrentCondition(fc.pod("vllm-0"))
				return cur != nil && verdictOf(*cur) == verdictOf(last.Condition) && ctrl.rec.count("vllm-0", syncUnchanged) > 0
			})
			if diff := cmp.Diff(tt.want, ctrl.rec.changeVerdicts()); diff != "" {
				t.Errorf("conditions written (-want +got):\n%s", diff)
			}
			if got := fc.statusPatches(); got != len(tt.want) {
				t.Errorf("%d status patches, want %d (one per change)", got, len(tt.want))
			}
			if diff := cmp.Diff(tt.want[len(tt.want)-1], verdictOf(*CurrentCondition(fc.pod("vllm-0")))); diff != "" {
				t.Errorf("leader's condition (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoPatchWhenNothingChanged: pod events that do not change the verdict
// cost no write.
func TestNoPatchWhenNothingChanged(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 4, nil)...)
	ctrl := fc.start(Options{})
	fc.waitFor("the leader's condition", func() bool { return ctrl.rec.count("vllm-0", syncUnchanged) > 0 })

	touches := []podOption{
		func(p *corev1.Pod) { p.Annotations["touched"] = "1" },
		func(p *corev1.Pod) { kube.SetCondition(p, corev1.PodScheduled, corev1.ConditionTrue) },
	}
	for _, name := range []string{"vllm-0-1", "vllm-0"} {
		for _, touch := range touches {
			before := ctrl.rec.count("vllm-0", syncUnchanged)
			fc.update(name, touch)
			fc.waitFor("a reconcile after "+name+" changed", func() bool { return ctrl.rec.count("vllm-0", syncUnchanged) > before })
		}
	}
	if got := fc.statusPatches(); got != 1 {
		t.Errorf("%d status patches, want 1 (the first write only)", got)
	}
	if got := len(ctrl.rec.changeList()); got != 1 {
		t.Errorf("%d changes reported, want 1", got)
	}
}

// TestLastTransitionTimeOnlyOnStatusChange: a new message keeps the time of
// the last status change.
func TestLastTransitionTimeOnlyOnStatusChange(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(t0)
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 4, map[int][]podOption{2: {notReady}})...)
	ctrl := fc.start(Options{Clock: clock})
	// Each step waits for the controller to see its own write (see
	// TestControllerFollowsMembers).
	fc.waitFor("the first write", func() bool {
		return len(ctrl.rec.changeList()) == 1 && ctrl.rec.count("vllm-0", syncUnchanged) > 0
	})

	clock.SetTime(t0.Add(time.Minute))
	seen := ctrl.rec.count("vllm-0", syncUnchanged)
	fc.update("vllm-0-3", notReady)
	fc.waitFor("the new message", func() bool {
		return len(ctrl.rec.changeList()) == 2 && ctrl.rec.count("vllm-0", syncUnchanged) > seen
	})

	clock.SetTime(t0.Add(2 * time.Minute))
	fc.update("vllm-0-2", ready)
	fc.update("vllm-0-3", ready)
	fc.waitFor("the group to recover", func() bool {
		cs := ctrl.rec.changeList()
		return len(cs) > 0 && cs[len(cs)-1].Condition.Status == corev1.ConditionTrue
	})

	type write struct {
		Message string
		Since   time.Time
	}
	var got []write
	for _, c := range ctrl.rec.changeList() {
		got = append(got, write{c.Condition.Message, c.Condition.LastTransitionTime.UTC()})
	}
	want := []write{
		{"vllm-0-2 not ready; 3/4 members healthy", t0},
		{"vllm-0-2 not ready, vllm-0-3 not ready; 2/4 members healthy", t0},
		// vllm-0-2 may recover before vllm-0-3 is seen; the last write is
		// the one that counts.
	}
	if len(got) < 3 {
		t.Fatalf("writes %v, want at least 3", got)
	}
	if diff := cmp.Diff(want, got[:2]); diff != "" {
		t.Errorf("first writes (-want +got):\n%s", diff)
	}
	lastWant := write{"4/4 members healthy", t0.Add(2 * time.Minute)}
	if diff := cmp.Diff(lastWant, got[len(got)-1]); diff != "" {
		t.Errorf("last write (-want +got):\n%s", diff)
	}
	if prev := ctrl.rec.changeList()[1].Previous; prev == nil || !prev.LastTransitionTime.UTC().Equal(t0) {
		t.Errorf("second change's Previous = %v, want the first condition", prev)
	}
}

// TestLeaderWithoutGateIsLeftAlone: a leader that did not opt in is never
// written to, even when its group is broken.
func TestLeaderWithoutGateIsLeftAlone(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 4, map[int][]podOption{0: {noGate}, 2: {notReady}})...)
	before := fc.pod("vllm-0")
	ctrl := fc.start(Options{})
	fc.waitFor("the group to be reconciled", func() bool { return ctrl.rec.count("vllm-0", syncNoGate) > 0 })
	fc.update("vllm-0-3", notReady)
	fc.waitFor("the group to be reconciled again", func() bool { return ctrl.rec.count("vllm-0", syncNoGate) > 1 })

	if got := fc.statusPatches(); got != 0 {
		t.Errorf("%d status patches, want 0", got)
	}
	if got := ctrl.rec.changeList(); len(got) != 0 {
		t.Errorf("changes %v, want none", got)
	}
	if diff := cmp.Diff(before.Status, fc.pod("vllm-0").Status); diff != "" {
		t.Errorf("leader status changed (-before +after):\n%s", diff)
	}
}

// TestConflictIsRetried: a write refused because the leader changed is
// redone.
func TestConflictIsRetried(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, nil)...)
	fc.failPatchesOnce(apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "vllm-0", errors.New("the object has been modified")))
	ctrl := fc.start(Options{})
	fc.waitFor("the condition", func() bool { return ctrl.rec.count("vllm-0", syncWritten) == 1 })

	if got := fc.statusPatches(); got != 2 {
		t.Errorf("%d status patches, want 2 (a refused one, then the retry)", got)
	}
	var failed int
	ctrl.rec.mu.Lock()
	for _, s := range ctrl.rec.syncs {
		if s.err != nil {
			failed++
			if !apierrors.IsConflict(s.err) {
				t.Errorf("reconcile error %v, want a wrapped Conflict", s.err)
			}
		}
	}
	ctrl.rec.mu.Unlock()
	if failed != 1 {
		t.Errorf("%d failed reconciles, want 1", failed)
	}
	if diff := cmp.Diff([]verdict{healthy(2)}, ctrl.rec.changeVerdicts()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestScope: the namespace and the selector limit what is written, also for
// pods a watch delivers unfiltered (as the fake clientset's watches do).
func TestScope(t *testing.T) {
	inScope := withLabel("app", "vllm")
	otherNS := func(p *corev1.Pod) { p.Namespace = "other" }
	pods := lwsGroup("a", 0, 2, map[int][]podOption{0: {inScope}, 1: {inScope}})
	pods = append(pods, lwsGroup("b", 0, 2, nil)...)                                                               // no label
	pods = append(pods, lwsGroup("c", 0, 2, map[int][]podOption{0: {inScope, otherNS}, 1: {inScope, otherNS}})...) // other namespace
	fc := newFakeCluster(t, pods...)
	ctrl := fc.start(Options{Namespace: testNamespace, Selector: "app=vllm", Workers: 1})
	fc.waitFor("group a's condition", func() bool { return ctrl.rec.count("a-0", syncUnchanged) > 0 })

	// Created after the start, so they come through the watch.
	for _, p := range lwsGroup("d", 0, 2, nil) {
		fc.create(p)
	}
	before := ctrl.rec.count("a-0", syncUnchanged)
	fc.update("a-0-1", func(p *corev1.Pod) { p.Annotations["touched"] = "1" })
	// One worker: everything queued before this reconcile is done.
	fc.waitFor("group a to be reconciled again", func() bool { return ctrl.rec.count("a-0", syncUnchanged) > before })

	var written []string
	for _, c := range ctrl.rec.changeList() {
		written = append(written, c.Group.String())
	}
	if diff := cmp.Diff([]string{"inference/a-0"}, written); diff != "" {
		t.Errorf("groups written (-want +got):\n%s", diff)
	}
	for _, name := range []string{"b-0", "d-0"} {
		if ctrl.rec.count(name, syncUnchanged)+ctrl.rec.count(name, syncWritten) > 0 {
			t.Errorf("group %s, outside the selector, was reconciled", name)
		}
	}
}

// TestTwoReplicas: with leader election, only the Lease holder writes; the
// other takes over when the holder stops, and no write is doubled.
func TestTwoReplicas(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 4, nil)...)
	election := func(id string) *LeaderElection {
		return &LeaderElection{Namespace: "udrain-system", Identity: id, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 50 * time.Millisecond}
	}
	a := fc.start(Options{LeaderElection: election("a")})
	fc.waitFor("a to lead and write", func() bool { return a.rec.sawLeader("a") && a.rec.count("vllm-0", syncUnchanged) > 0 })
	b := fc.start(Options{LeaderElection: election("b")})
	fc.waitFor("b to see a lead", func() bool { return b.rec.sawLeader("a") })

	fc.update("vllm-0-2", notReady)
	fc.waitFor("a to write the failure", func() bool { return len(a.rec.changeList()) == 2 && a.rec.count("vllm-0", syncUnchanged) > 1 })
	if n := b.rec.syncCount(); n != 0 {
		t.Fatalf("standby replica b reconciled %d times while a held the Lease", n)
	}

	a.stop() // releases the Lease after its workers have stopped
	fc.waitFor("b to take over", func() bool { return b.rec.sawLeader("b") && b.rec.count("vllm-0", syncUnchanged) > 0 })
	fc.update("vllm-0-2", ready)
	fc.waitFor("b to write the recovery", func() bool { return len(b.rec.changeList()) == 1 })

	wantA := []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-2 not ready; 3/4 members healthy"}}
	if diff := cmp.Diff(wantA, a.rec.changeVerdicts()); diff != "" {
		t.Errorf("a's writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]verdict{healthy(4)}, b.rec.changeVerdicts()); diff != "" {
		t.Errorf("b's writes (-want +got):\n%s", diff)
	}
	if got := fc.statusPatches(); got != 3 {
		t.Errorf("%d status patches, want 3", got)
	}
	lease, err := fc.client.CoordinationV1().Leases("udrain-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Lease: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "b" {
		t.Errorf("Lease holder %v, want b", h)
	}
}

// TestLostLeaseStopsWrites: a replica that cannot renew its Lease stops
// reconciling (before the Lease expires and another may take it), and
// resumes from fresh state when it holds the Lease again.
func TestLostLeaseStopsWrites(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, nil)...)
	var partitioned atomic.Bool
	fc.client.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if partitioned.Load() {
			return true, nil, apierrors.NewServiceUnavailable("partitioned from the API server")
		}
		return false, nil, nil
	})
	a := fc.start(Options{LeaderElection: &LeaderElection{Namespace: "udrain-system", Identity: "a", LeaseDuration: 2 * time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond}})
	fc.waitFor("a to write", func() bool { return a.rec.count("vllm-0", syncUnchanged) > 0 })

	partitioned.Store(true)
	fc.waitFor("a to stop its term", func() bool { return a.rec.eventCount("term end") == 1 })
	fc.update("vllm-0-1", notReady) // the pod watch still works, the Lease does not
	partitioned.Store(false)
	fc.waitFor("a to lead again and write the failure", func() bool { return len(a.rec.changeList()) == 2 })

	if n := a.rec.syncsOutsideTerms(); n != 0 {
		t.Errorf("%d reconciles while a did not hold the Lease, want 0", n)
	}
	if n := a.rec.eventCount("term start"); n != 2 {
		t.Errorf("%d terms, want 2", n)
	}
	want := []verdict{healthy(2), {corev1.ConditionFalse, health.ReasonMemberNotReady, "vllm-0-1 not ready; 1/2 members healthy"}}
	if diff := cmp.Diff(want, a.rec.changeVerdicts()); diff != "" {
		t.Errorf("a's writes (-want +got):\n%s", diff)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	le := func(mod func(*LeaderElection)) *LeaderElection {
		l := &LeaderElection{Namespace: "udrain-system"}
		mod(l)
		return l
	}
	// A caller's informer that was stopped cannot be indexed or watched.
	factory := informers.NewSharedInformerFactory(newFakeCluster(t).client, 0)
	stopped := factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	close(stop)
	factory.Shutdown()
	tests := []struct {
		name      string
		opts      Options
		wantField string
	}{
		{"stopped informer", Options{Pods: stopped}, "gate.Options.Pods"},
		{"bad selector", Options{Selector: "app in (a"}, "gate.Options.Selector"},
		{"bad namespace", Options{Namespace: "Not_A_Namespace"}, "gate.Options.Namespace"},
		{"negative workers", Options{Workers: -1}, "gate.Options.Workers"},
		{"negative resync", Options{ResyncPeriod: -time.Second}, "gate.Options.ResyncPeriod"},
		{"negative max sync age", Options{MaxSyncAge: -time.Second}, "gate.Options.MaxSyncAge"},
		{"nil grouper", Options{Groupers: []topology.Grouper{topology.LeaderWorkerSet(), nil}}, "gate.Options.Groupers[1]"},
		{"lease without namespace", Options{LeaderElection: &LeaderElection{}}, "gate.LeaderElection.Namespace"},
		{"bad lease name", Options{LeaderElection: le(func(l *LeaderElection) { l.Name = "Bad Name" })}, "gate.LeaderElection.Name"},
		{"negative retry period", Options{LeaderElection: le(func(l *LeaderElection) { l.RetryPeriod = -time.Second })}, "gate.LeaderElection.RetryPeriod"},
		{"lease shorter than renew deadline", Options{LeaderElection: le(func(l *LeaderElection) { l.LeaseDuration = 5 * time.Second })}, "gate.LeaderElection.LeaseDuration"},
		{"renew deadline within a retry", Options{LeaderElection: le(func(l *LeaderElection) { l.RetryPeriod = 9 * time.Second })}, "gate.LeaderElection.RenewDeadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(newFakeCluster(t).client, tt.opts)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New: %v, want a *udrain.ConfigError", err)
			}
			if ce.Field != tt.wantField {
				t.Errorf("ConfigError.Field = %q, want %q (error: %v)", ce.Field, tt.wantField, err)
			}
		})
	}
	t.Run("nil client", func(t *testing.T) {
		var ce *udrain.ConfigError
		if _, err := New(nil, Options{}); !errors.As(err, &ce) || ce.Field != "gate.New(client)" {
			t.Errorf("New(nil): %v, want a *udrain.ConfigError about the client", err)
		}
	})
}

func TestRunTwice(t *testing.T) {
	c, err := New(newFakeCluster(t).client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Errorf("first Run with a done context: %v, want nil", err)
	}
	if err := c.Run(ctx); !errors.Is(err, ErrAlreadyRun) {
		t.Errorf("second Run: %v, want ErrAlreadyRun", err)
	}
}

// TestPatch: the write is a strategic merge patch of pods/status that holds
// the one condition and the resourceVersion it was decided on.
// TestPatch: a True condition is a strategic merge patch of the status
// that carries the resourceVersion it was decided on (a group is never
// declared whole on a stale view); a False one does not (the safe side:
// it cannot fail on a concurrent update of the leader, which on real
// LeaderWorkerSets made a third of all patches 409s). Both record their
// time as lastProbeTime and leave the other conditions alone.
func TestPatch(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	kubeletCondition := corev1.PodCondition{Type: "example.com/other-gate", Status: corev1.ConditionTrue}
	for _, tc := range []struct {
		name   string
		worker []podOption
		want   map[string]any
	}{
		{"True", nil, map[string]any{
			"metadata": map[string]any{"resourceVersion": "42"},
			"status": map[string]any{"conditions": []any{map[string]any{
				"type":               string(ConditionType),
				"status":             "True",
				"reason":             string(health.ReasonGroupReady),
				"message":            "2/2 members healthy",
				"lastTransitionTime": "2026-07-01T12:00:00Z",
				"lastProbeTime":      "2026-07-01T12:00:00Z",
			}}},
		}},
		{"False", []podOption{notReady}, map[string]any{
			"status": map[string]any{"conditions": []any{map[string]any{
				"type":               string(ConditionType),
				"status":             "False",
				"reason":             string(health.ReasonMemberNotReady),
				"message":            "vllm-0-1 not ready; 1/2 members healthy",
				"lastTransitionTime": "2026-07-01T12:00:00Z",
				"lastProbeTime":      "2026-07-01T12:00:00Z",
			}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := lwsGroup("vllm", 0, 2, map[int][]podOption{0: {withCondition(kubeletCondition)}, 1: tc.worker})
			pods[0].ResourceVersion = "42"
			fc := newFakeCluster(t, pods...)
			ctrl := fc.start(Options{Clock: clocktesting.NewFakePassiveClock(t0)})
			fc.waitFor("the write", func() bool { return ctrl.rec.count("vllm-0", syncWritten) == 1 })

			var patches []clienttesting.PatchAction
			for _, a := range fc.client.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok {
					patches = append(patches, p)
				}
			}
			if len(patches) != 1 {
				t.Fatalf("%d patches, want 1", len(patches))
			}
			p := patches[0]
			if p.GetPatchType() != types.StrategicMergePatchType || p.GetSubresource() != "status" || p.GetName() != "vllm-0" {
				t.Errorf("patch %s of %s/%s, want a strategic merge patch of vllm-0/status", p.GetPatchType(), p.GetName(), p.GetSubresource())
			}
			var got map[string]any
			if err := json.Unmarshal(p.GetPatch(), &got); err != nil {
				t.Fatalf("patch is not JSON: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			// The other conditions are left as they were.
			leader := fc.pod("vllm-0")
			var others []corev1.PodCondition
			for _, c := range leader.Status.Conditions {
				if c.Type != ConditionType {
					others = append(others, c)
				}
			}
			if diff := cmp.Diff(pods[0].Status.Conditions, others); diff != "" {
				t.Errorf("other conditions changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTerminatingLeaderWrittenOnce: a leader being deleted gets one write
// (not ready) and none as its members go after it.
func TestTerminatingLeaderWrittenOnce(t *testing.T) {
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 4, nil)...)
	ctrl := fc.start(Options{})
	fc.waitFor("the first write", func() bool {
		return len(ctrl.rec.changeList()) >= 1 && ctrl.rec.count("vllm-0", syncUnchanged) > 0
	})
	fc.update("vllm-0", terminating)
	fc.waitFor("the leader's terminating condition", func() bool {
		cur := CurrentCondition(fc.pod("vllm-0"))
		return cur != nil && cur.Status == corev1.ConditionFalse
	})
	fc.waitFor("the controller to see its write", func() bool { return ctrl.rec.count("vllm-0", syncLeaderGoing) > 0 })
	for _, name := range []string{"vllm-0-1", "vllm-0-2", "vllm-0-3"} {
		before := ctrl.rec.count("vllm-0", syncLeaderGoing)
		fc.delete(name)
		fc.waitFor("a reconcile after "+name+" went", func() bool { return ctrl.rec.count("vllm-0", syncLeaderGoing) > before })
	}
	want := []verdict{healthy(4), {corev1.ConditionFalse, health.ReasonMemberTerminating, "vllm-0 terminating; 3/4 members healthy"}}
	if diff := cmp.Diff(want, ctrl.rec.changeVerdicts()); diff != "" {
		t.Errorf("conditions written (-want +got):\n%s", diff)
	}
	if got := fc.statusPatches(); got != len(want) {
		t.Errorf("%d status patches, want %d", got, len(want))
	}
}

// TestSharedPodInformer: over the caller's pod informer (Options.Pods) the
// controller lists and watches nothing itself, reconciles only the pods of
// its scope among the informer's, shares the informer with another
// controller, and leaves it serving the other when it stops.
func TestSharedPodInformer(t *testing.T) {
	inScope := withLabel("app", "vllm")
	pods := lwsGroup("a", 0, 2, map[int][]podOption{0: {inScope}, 1: {inScope}})
	pods = append(pods, lwsGroup("b", 0, 2, nil)...) // no label
	fc := newFakeCluster(t, pods...)
	factory := informers.NewSharedInformerFactory(fc.client, 0)
	shared := factory.Core().V1().Pods().Informer()
	labelled := fc.start(Options{Pods: shared, Selector: "app=vllm", Workers: 1})
	others := fc.start(Options{Pods: shared, Selector: "!app", Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done()) // after Run: Run waits for it to sync

	seen := func(r *running, name string) bool {
		return r.rec.count(name, syncWritten)+r.rec.count(name, syncUnchanged) > 0
	}
	fc.waitFor("groups a and b", func() bool { return seen(labelled, "a-0") && seen(others, "b-0") })
	for _, p := range lwsGroup("d", 0, 2, nil) { // through the watch
		fc.create(p)
	}
	fc.waitFor("group d", func() bool { return seen(others, "d-0") })
	labelled.stop()
	for _, p := range lwsGroup("e", 0, 2, nil) {
		fc.create(p)
	}
	fc.waitFor("group e, after the other controller stopped", func() bool { return seen(others, "e-0") })

	for _, tc := range []struct {
		r       *running
		outside []string
	}{
		{labelled, []string{"b-0", "d-0", "e-0"}},
		{others, []string{"a-0"}},
	} {
		for _, name := range tc.outside {
			if seen(tc.r, name) {
				t.Errorf("group %s, outside the controller's selector, was reconciled", name)
			}
		}
	}
	listWatch := map[string]int{}
	for _, a := range fc.client.Actions() {
		if a.GetResource().Resource == "pods" && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
			listWatch[a.GetVerb()]++
		}
	}
	if diff := cmp.Diff(map[string]int{"list": 1, "watch": 1}, listWatch); diff != "" {
		t.Errorf("pod lists and watches: only the caller's informer's (-want +got):\n%s", diff)
	}
}

// TestFalseRewritesAreSpaced: while a group stays unready, a new message
// (a member recovering) is written at most every FalseRewriteInterval, the
// last one once it has passed; turning True is written at once.
func TestFalseRewritesAreSpaced(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	fc := newFakeCluster(t, lwsGroup("vllm", 0, 3, map[int][]podOption{1: {notReady}, 2: {notReady}})...)
	ctrl := fc.start(Options{Clock: clk, FalseRewriteInterval: 100 * time.Millisecond})
	message := func() string {
		if c := CurrentCondition(fc.pod("vllm-0")); c != nil {
			return string(c.Status) + " " + c.Message
		}
		return ""
	}
	fc.waitFor("the first write", func() bool { return ctrl.rec.count("vllm-0", syncWritten) == 1 })
	if got, want := message(), "False vllm-0-1 not ready, vllm-0-2 not ready; 1/3 members healthy"; got != want {
		t.Errorf("condition %q, want %q", got, want)
	}
	fc.update("vllm-0-1", ready)
	fc.waitFor("the new message deferred", func() bool { return ctrl.rec.count("vllm-0", syncDeferred) > 0 })
	if n := fc.statusPatches(); n != 1 {
		t.Errorf("%d patches before the interval passed, want 1", n)
	}
	clk.Step(100 * time.Millisecond)
	fc.waitFor("the new message written", func() bool { return ctrl.rec.count("vllm-0", syncWritten) == 2 })
	if got, want := message(), "False vllm-0-2 not ready; 2/3 members healthy"; got != want {
		t.Errorf("condition %q, want %q", got, want)
	}
	fc.update("vllm-0-2", ready)
	fc.waitFor("True written", func() bool { return ctrl.rec.count("vllm-0", syncWritten) == 3 })
	if got, want := message(), "True 3/3 members healthy"; got != want {
		t.Errorf("condition %q, want %q (at once, without the clock moving)", got, want)
	}
}
