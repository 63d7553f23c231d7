package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/internal/lease"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/topology"
)

func leaseIn(t *testing.T, fc *fakeCluster, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := fc.client.CoordinationV1().Leases(DefaultLockNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Two rollouts with the same ID: the second fails at once, naming the
// holder and when it renewed, and changes nothing; after the first, the
// Lease is released.
func TestRolloutLockRefusesASecondRollout(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	inUpgrade, finish := make(chan struct{}), make(chan struct{})
	first, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(_ context.Context, e Event) {
		if e.Type == EventUncordoned {
			go fc.recreateGroup(ctx, domainIndex(e.Domain)-1, 2, domainIndex(e.Domain), 1, 2)
		}
	}})
	done := make(chan error, 1)
	go func() {
		_, err := first.Rollout(ctx, RolloutOptions{ID: "kubelet-1.37", LockIdentity: "first", Upgrade: func(context.Context, topology.Domain) error {
			select {
			case inUpgrade <- struct{}{}:
			default:
			}
			<-finish
			return nil
		}})
		done <- err
	}()
	<-inUpgrade
	before := len(fc.mutations())
	second, _ := New(fc.client, Options{Backoff: slowBackoff})
	start := time.Now()
	_, err := second.Rollout(ctx, RolloutOptions{ID: "kubelet-1.37", LockIdentity: "second"})
	var le *RetryError
	if !asReason(err, &le, ReasonLocked) || le.Holder != "first" || le.Lease != "udrain-rollout-kubelet-1.37" || le.RenewedAt.IsZero() {
		t.Fatalf("second rollout: %v, want a *RetryError (ReasonLocked) naming holder first", err)
	}
	// At once, not after waiting out the 30 s Lease (10 s for a busy
	// machine).
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the second rollout took %s to fail, want at once", took)
	}
	if got := fc.mutations()[before:]; len(got) != 0 {
		t.Errorf("the refused rollout changed the cluster: %v", got)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatalf("first rollout: %v", err)
	}
	if l := leaseIn(t, fc, "udrain-rollout-kubelet-1.37"); l.Spec.HolderIdentity != nil {
		t.Errorf("Lease still held by %q after the rollout", *l.Spec.HolderIdentity)
	}
}

// A rollout that cannot renew its Lease (another holder took it) stops
// with a *RetryError (ReasonLockLost) in its DomainError, not as an interrupt.
func TestRolloutStopsWhenItLosesItsLease(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
	renewals := 0
	fc.client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if l.Spec.HolderIdentity != nil && l.Spec.AcquireTime != nil && l.Spec.RenewTime.After(l.Spec.AcquireTime.Time) {
			renewals++
			other := "another-replica"
			stolen := l.DeepCopy()
			stolen.Spec.HolderIdentity = &other
			_ = fc.client.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), stolen, l.Namespace)
			return true, nil, conflictErr()
		}
		return false, nil, nil
	})
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	_, err := d.Rollout(ctx, RolloutOptions{ID: "r", LockDuration: 3 * time.Second})
	var lost *RetryError
	var de *DomainError
	if !asReason(err, &lost, ReasonLockLost) || !errors.As(err, &de) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `another holder took it over (held by "another-replica"`) {
		t.Fatalf("err = %v, want a DomainError with a *RetryError (ReasonLockLost) (not context.Canceled) naming the holder", err)
	}
	if renewals == 0 {
		t.Error("the Lease was never renewed")
	}
}

// Dry runs take no lock; the lock can be turned off.
func TestRolloutLockSkipped(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
	h := KubectlDefaults()
	h.DryRunStrategy = dryRunStrategy("client")
	d, _ := New(fc.client, Options{Helper: h})
	if _, err := d.Rollout(ctx, RolloutOptions{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	if l, _ := fc.client.CoordinationV1().Leases(DefaultLockNamespace).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("a dry run took a Lease: %v", l.Items)
	}
}

func conflictErr() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "udrain-rollout-r", errors.New("the object has been modified"))
}

// A Lease the identity may not read or write stops the rollout before it
// changes anything, with a *PermissionError that names the Role to bind:
// the lock's, not the drainer's ClusterRole.
func TestRolloutLockForbidden(t *testing.T) {
	for _, tc := range []struct {
		namespace, wantRole string
	}{
		{"", "the Role udrain-rollout-lock (namespace udrain-system)"},
		{"platform", "a copy of the Role udrain-rollout-lock in namespace platform"},
	} {
		t.Run(tc.wantRole, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
			fc.client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "udrain-rollout-r", errors.New("RBAC: access denied"))
			})
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r", LockNamespace: tc.namespace})
			var pe *PermissionError
			if !errors.As(err, &pe) || !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want a *PermissionError for Forbidden", err)
			}
			if pe.Role != tc.wantRole || !strings.Contains(err.Error(), "bind "+tc.wantRole) {
				t.Errorf("PermissionError names role %q (%v), want %q", pe.Role, err, tc.wantRole)
			}
			if got := fc.mutations(); len(got) != 0 {
				t.Errorf("the refused rollout changed the cluster: %v", got)
			}
		})
	}
}

// By default (LockNamespaceMustExist unset), a rollout on a cluster without the Lease's
// namespace creates it (labelled as udrain's) and runs; without it, it
// stops at once with a *ClusterError (ReasonNoLockNamespace) naming the namespace.
func TestRolloutCreatesTheLockNamespace(t *testing.T) {
	for _, create := range []bool{false, true} {
		t.Run(fmt.Sprint(create), func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(1, 1, 1)...)
			fc.client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if _, err := fc.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", a.GetNamespace()); err != nil {
					return true, nil, apierrors.NewNotFound(corev1.Resource("namespaces"), a.GetNamespace())
				}
				return false, nil, nil
			})
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r", Domains: []string{"ud-1"}, LockNamespaceMustExist: !create,
				Upgrade: func(ctx context.Context, dom topology.Domain) error { fc.recreateGroup(ctx, 0, 1, 1, 1, 1); return nil }})
			ns, nsErr := fc.client.CoreV1().Namespaces().Get(ctx, DefaultLockNamespace, metav1.GetOptions{})
			switch {
			case create && (err != nil || nsErr != nil || ns.Labels["app.kubernetes.io/managed-by"] != "udrain"):
				t.Errorf("err = %v, namespace %v (%v); want the rollout done in a namespace it made", err, ns, nsErr)
			case !create && (!errors.Is(err, &ClusterError{Reason: ReasonNoLockNamespace}) || nsErr == nil):
				t.Errorf("err = %v, namespace error %v; want a *ClusterError, ReasonNoLockNamespace, and no namespace made", err, nsErr)
			}
			if lne := (*ClusterError)(nil); !create && asReason(err, &lne, ReasonNoLockNamespace) && (lne.Namespace != DefaultLockNamespace || !strings.Contains(err.Error(), "the namespace does not exist")) {
				t.Errorf("err = %v: want it to name the namespace %s, which does not exist", err, DefaultLockNamespace)
			}
		})
	}
}

// The Lease is kept on the Drainer's clock: renewals come every third of
// its duration, and renewals that keep failing make it lost once the Lease
// would expire before the next one (more than two thirds since the last
// success), not before.
func TestLeaseKeptOnTheClock(t *testing.T) {
	ctx := testContext(t)
	clk := testkit.NewJudgedClock(statusNow)
	fc := newFakeCluster(t)
	attempts := make(chan bool, 10) // true: the renewal succeeded
	var fail atomic.Bool
	fc.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			attempts <- false
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		}
		return false, nil, nil
	})
	events := make(chan Event, 10)
	d, err := New(fc.client, Options{Clock: clk, OnEvent: func(_ context.Context, e Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rolloutLock{Identity: "me", Duration: 30 * time.Second}.settle()
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.acquireLock(ctx, "r", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := leaseIn(t, fc, "udrain-rollout-r").Spec.RenewTime.Time; !got.Equal(statusNow) {
		t.Fatalf("taken at %s, want the clock's %s", got, statusNow)
	}
	lost := make(chan error, 1)
	go h.keep(ctx, func(err error) { lost <- err })
	tick := func() {
		t.Helper()
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(10 * time.Second)
	}

	// A renewal that succeeds writes the clock's time.
	tick()
	for !leaseIn(t, fc, "udrain-rollout-r").Spec.RenewTime.Time.Equal(statusNow.Add(10 * time.Second)) {
		if ctx.Err() != nil {
			t.Fatal("the renewal never wrote the clock's time")
		}
		time.Sleep(time.Millisecond)
	}

	// Then two failures: 10 s and 20 s since the last renewal, within
	// the 30 s Lease; a third, 30 s since, is too late.
	fail.Store(true)
	for i, at := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second} {
		tick()
		<-attempts
		// The clock steps again only once the failure is judged, at
		// this tick's time.
		select {
		case <-clk.Judged:
		case <-time.After(time.Minute):
			t.Fatalf("the failed renewal %s after the last one was not judged within a minute", at)
		}
		wait := 100 * time.Millisecond // that it is kept: not lost meanwhile
		if i == 2 {
			wait = time.Minute // that it is lost
		}
		select {
		case err := <-lost:
			if i < 2 {
				t.Fatalf("lost %s after the last renewal (%v), want kept until 30 s", at, err)
			}
			var le *RetryError
			if !asReason(err, &le, ReasonLockLost) || le.Lease != "udrain-rollout-r" || !apierrors.IsServiceUnavailable(err) {
				t.Fatalf("lost: %v, want a *RetryError (ReasonLockLost) naming the Lease, with the renewal's error", err)
			}
			// Both events are timed by the clock.
			checkLockEvents(t, events, []Event{
				{Time: statusNow, Type: EventLockAcquired, ID: "r", Message: "holding Lease udrain-system/udrain-rollout-r as me"},
				{Time: statusNow.Add(40 * time.Second), Type: EventLockLost, ID: "r", Error: err.Error(), Message: "the rollout's Lease is lost; the rollout stops"},
			})
			return
		case <-time.After(wait):
			if i == 2 {
				t.Fatalf("still kept %s after the last renewal, want lost", at)
			}
		}
	}
}

// A rollout reports taking its Lease and giving it up, and leaves it
// released (no holder) but in place.
func TestRolloutLockEvents(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 1)...)
	clk := clocktesting.NewFakeClock(statusNow)
	events := make(chan Event, 100)
	d, _ := New(fc.client, Options{Backoff: slowBackoff, Clock: clk, OnEvent: func(_ context.Context, e Event) { events <- e }})
	_, err := d.Rollout(ctx, RolloutOptions{ID: "r", Domains: []string{"ud-1"}, LockIdentity: "me",
		Upgrade: func(ctx context.Context, dom topology.Domain) error { fc.recreateGroup(ctx, 0, 1, 1, 1, 1); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	checkLockEvents(t, events, []Event{
		{Time: statusNow, Type: EventLockAcquired, ID: "r", Message: "holding Lease udrain-system/udrain-rollout-r as me"},
		{Time: statusNow, Type: EventLockReleased, ID: "r", Message: "Lease udrain-system/udrain-rollout-r released"},
	})
	l := leaseIn(t, fc, "udrain-rollout-r")
	if l.Spec.HolderIdentity != nil || l.Annotations["udrain.dev/rollout-id"] != "r" || l.Labels["app.kubernetes.io/managed-by"] != "udrain" {
		t.Errorf("Lease after the rollout: holder %v, annotations %v, labels %v; want released, annotated with the rollout's ID, labelled as udrain's",
			l.Spec.HolderIdentity, l.Annotations, l.Labels)
	}
}

// checkLockEvents checks the Lease's events of those sent on events,
// which it closes: their time, type, ID, error and message.
func checkLockEvents(t *testing.T, events chan Event, want []Event) {
	t.Helper()
	close(events)
	var got []Event
	for e := range events {
		if e.Type == EventLockAcquired || e.Type == EventLockLost || e.Type == EventLockReleased {
			got = append(got, Event{Time: e.Time, Type: e.Type, ID: e.ID, Error: e.Error, Message: e.Message})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Lease's events (-want +got):\n%s", diff)
	}
}

// lockError turns what the Lease's Acquire returns into the rollout's
// errors: the holder's Lease into a *RetryError (ReasonLocked) with the
// rollout's ID and the time until it expires, a namespace that does not
// exist into a *ClusterError (ReasonNoLockNamespace), Forbidden into a
// *PermissionError naming the lock's Role.
func TestLockError(t *testing.T) {
	renewed := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	notFound := apierrors.NewNotFound(corev1.Resource("namespaces"), "platform")
	forbidden := apierrors.NewForbidden(leases, "udrain-rollout-r", errors.New("RBAC: access denied"))
	terminating := apierrors.NewForbidden(leases, "udrain-rollout-r", errors.New("namespace platform is being terminated"))
	other := apierrors.NewServiceUnavailable("etcd is down")
	for _, tc := range []struct {
		name    string
		err     error
		want    error
		message string
	}{
		{"held", &lease.HeldError{Namespace: "platform", Name: "udrain-rollout-r", Holder: "other", RenewedAt: renewed, Duration: 30 * time.Second},
			&RetryError{Reason: ReasonLocked, ID: "r", Namespace: "platform", Lease: "udrain-rollout-r", Holder: "other", RenewedAt: renewed, LockDuration: 30 * time.Second, RetryAfter: 20 * time.Second},
			`rollout r is running elsewhere: Lease platform/udrain-rollout-r is held by "other", renewed at 2026-12-01T08:00:00Z (it expires 30s after its last renewal); wait for that rollout to end, or stop it; nothing was changed`},
		{"no namespace", notFound, &ClusterError{Reason: ReasonNoLockNamespace, Namespace: "platform", Lease: "udrain-rollout-r", Err: notFound},
			`taking the rollout's Lease platform/udrain-rollout-r: the namespace does not exist: namespaces "platform" not found`},
		{"forbidden", forbidden, &PermissionError{Reason: ReasonForbidden, Err: forbidden, Role: "a copy of the Role udrain-rollout-lock in namespace platform"}, ""},
		{"namespace terminating", terminating, nil, "taking the rollout's Lease platform/udrain-rollout-r: " + terminating.Error()},
		{"other", other, nil, "taking the rollout's Lease platform/udrain-rollout-r: etcd is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lockError("r", rolloutLock{Namespace: "platform"}, "udrain-rollout-r", tc.err, renewed.Add(10*time.Second))
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("lockError (-want +got):\n%s", diff)
				}
			} else if !errors.Is(got, tc.err) {
				t.Errorf("lockError = %v, want it to wrap %v", got, tc.err)
			}
			if tc.message != "" && got.Error() != tc.message {
				t.Errorf("message:\n%s\nwant\n%s", got, tc.message)
			}
		})
	}
}

// By default a rollout creates the namespace of its Lease; a client that
// may not create namespaces gets, before any change, a *PermissionError
// that names the lock's Role and the right to create the namespace (or to
// create it beforehand).
func TestRolloutWithoutTheRightToCreateTheLockNamespace(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 1)...)
	fc.client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(corev1.Resource("namespaces"), a.GetNamespace())
	})
	fc.client.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), DefaultLockNamespace, errors.New(`User "ci" cannot create resource "namespaces"`))
	})
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	_, err := d.Rollout(ctx, RolloutOptions{ID: "r", Domains: []string{"ud-1"}})
	var pe *PermissionError
	if !errors.As(err, &pe) {
		t.Fatalf("Rollout = %v, want a *PermissionError", err)
	}
	for _, s := range []string{"udrain-rollout-lock", "create namespaces", "deploy/namespace", DefaultLockNamespace} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	nodes, _ := fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			t.Errorf("node %s cordoned: want nothing changed", n.Name)
		}
	}
}
