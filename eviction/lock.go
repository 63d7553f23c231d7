package eviction

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// Defaults of RolloutLock.
const (
	// DefaultLockNamespace is where rollouts keep their Leases: a
	// namespace of udrain's own (deploy/namespace creates it), so that the
	// permission to write Leases there reaches no other component's lock.
	DefaultLockNamespace = "udrain-system"
	// DefaultLockDuration is how long a rollout's Lease holds without a
	// renewal; it is renewed every third of it.
	DefaultLockDuration = 30 * time.Second
)

// RolloutLock is the lock a rollout holds while it runs: a
// coordination.k8s.io Lease named after the rollout's ID, renewed while it
// runs, released when it returns, and taken over only once it has expired.
// A second rollout with the same ID (another process, a second replica of
// a controller) fails at once with a *LockedError naming the holder. Dry
// runs take no lock.
type RolloutLock struct {
	// Disabled runs without a lock.
	Disabled bool
	// Namespace holds the Lease; empty means DefaultLockNamespace. It
	// must exist, unless CreateNamespace.
	Namespace string
	// CreateNamespace creates Namespace (labelled as udrain's, Pod
	// Security "restricted") when it does not exist, so that a first
	// rollout on a new cluster needs no preparation; it needs the right
	// to create namespaces.
	CreateNamespace bool
	// Identity names this holder in the Lease; empty means the host name,
	// the process ID and a random suffix.
	Identity string
	// Duration is how long the Lease holds without a renewal; zero means
	// DefaultLockDuration.
	Duration time.Duration
}

// LockedError reports a rollout whose Lease another holder has renewed
// within its duration: that rollout runs now. Nothing was changed.
type LockedError struct {
	ID        string
	Namespace string
	Lease     string
	Holder    string
	// RenewedAt is when the holder last renewed the Lease; it is free once
	// Duration has passed since then.
	RenewedAt time.Time
	Duration  time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("rollout %s is running elsewhere: Lease %s/%s is held by %q, renewed at %s (it expires %s after its last renewal); wait for that rollout to end, or stop it; nothing was changed",
		e.ID, e.Namespace, e.Lease, e.Holder, e.RenewedAt.UTC().Format(time.RFC3339), e.Duration)
}

// LockNamespaceError reports that the namespace of the rollout's Lease
// does not exist (and RolloutLock.CreateNamespace is off, or could not
// create it). Nothing was changed: create the namespace, or choose
// another (RolloutOptions.Lock.Namespace).
type LockNamespaceError struct {
	Namespace, Lease string
	Err              error
}

func (e *LockNamespaceError) Error() string {
	return fmt.Sprintf("taking the rollout's Lease %s/%s: the namespace does not exist: %v", e.Namespace, e.Lease, e.Err)
}

func (e *LockNamespaceError) Unwrap() error { return e.Err }

// LockLostError reports a rollout that lost its Lease while it ran (it
// could not renew it in time and another holder took it over); the
// rollout stopped.
type LockLostError struct {
	ID, Namespace, Lease string
	Err                  error
}

func (e *LockLostError) Error() string {
	return fmt.Sprintf("rollout %s lost its Lease %s/%s and stopped: %v", e.ID, e.Namespace, e.Lease, e.Err)
}

func (e *LockLostError) Unwrap() error { return e.Err }

// lockName is the Lease name of a rollout: "udrain-rollout-<id>" when that
// is a valid name, else with the ID lowered and a hash of it.
func lockName(id string) string {
	name := "udrain-rollout-" + id
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, id)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	return strings.Trim("udrain-rollout-"+clean, "-") + "-" + hex.EncodeToString(sum[:])[:8]
}

func (l RolloutLock) settle() (RolloutLock, error) {
	if l.Namespace == "" {
		l.Namespace = DefaultLockNamespace
	}
	if l.Duration == 0 {
		l.Duration = DefaultLockDuration
	}
	if l.Duration < 3*time.Second {
		return l, configError("RolloutOptions.Lock.Duration", "%v is too short; use at least 3s, or 0 for the default (%v)", l.Duration, DefaultLockDuration)
	}
	if errs := validation.IsDNS1123Label(l.Namespace); len(errs) > 0 {
		return l, configError("RolloutOptions.Lock.Namespace", "%q is not a namespace name: %v", l.Namespace, errs)
	}
	if l.Identity == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		l.Identity = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return l, nil
}

// heldLock is a Lease this process holds.
type heldLock struct {
	d     *Drainer
	sink  *callSink // the rollout's OnEvent
	cfg   RolloutLock
	id    string
	name  string
	lease *coordinationv1.Lease
}

// acquireLock takes the rollout's Lease, or returns a *LockedError when
// another holder has it. It reports a LockAcquired event.
func (d *Drainer) acquireLock(ctx context.Context, id string, cfg RolloutLock) (*heldLock, error) {
	h, err := d.takeLease(ctx, id, cfg)
	if err == nil {
		h.report(EventLockAcquired, nil, fmt.Sprintf("holding Lease %s/%s as %s", cfg.Namespace, h.name, cfg.Identity))
	}
	return h, err
}

// report sends an event about the Lease.
func (h *heldLock) report(t EventType, err error, msg string) {
	h.d.events.emit(h.sink, Event{Time: h.d.s.Clock.Now(), Type: t, ID: h.id, Err: err, Message: msg})
}

func (d *Drainer) takeLease(ctx context.Context, id string, cfg RolloutLock) (*heldLock, error) {
	leases := d.client.CoordinationV1().Leases(cfg.Namespace)
	name := lockName(id)
	for attempt := 0; ; attempt++ {
		now := metav1.NewMicroTime(d.s.Clock.Now())
		secs := int32(cfg.Duration / time.Second)
		var cur *coordinationv1.Lease
		err := d.bounded(ctx, func(ctx context.Context) (err error) {
			cur, err = leases.Get(ctx, name, metav1.GetOptions{})
			return err
		})
		switch {
		case apierrors.IsNotFound(err):
			l := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "udrain"},
					Annotations: map[string]string{"udrain.dev/rollout-id": id}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &cfg.Identity, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
			}
			var created *coordinationv1.Lease
			_, err := d.s.write(ctx, func(ctx context.Context) (err error) {
				created, err = leases.Create(ctx, l, metav1.CreateOptions{})
				return err
			})
			if apierrors.IsAlreadyExists(err) && attempt < 3 {
				continue
			}
			if cfg.CreateNamespace && namespaceMissing(err) && attempt < 3 {
				if err := d.createLockNamespace(ctx, cfg.Namespace); err != nil {
					return nil, lockError(cfg, name, err)
				}
				continue
			}
			if err != nil {
				return nil, lockError(cfg, name, err)
			}
			return &heldLock{d: d, sink: callSinkFrom(ctx), cfg: cfg, id: id, name: name, lease: created}, nil
		case err != nil:
			return nil, lockError(cfg, name, err)
		}
		if holder := ptrValue(cur.Spec.HolderIdentity); holder != "" && holder != cfg.Identity {
			renewed := renewedAt(cur)
			dur := time.Duration(ptrValue(cur.Spec.LeaseDurationSeconds)) * time.Second
			if d.s.Clock.Since(renewed) < dur {
				return nil, &LockedError{ID: id, Namespace: cfg.Namespace, Lease: name, Holder: holder, RenewedAt: renewed, Duration: dur}
			}
			klog.FromContext(ctx).Info("Taking over an expired rollout Lease", "lease", cfg.Namespace+"/"+name, "previousHolder", holder, "renewedAt", renewed)
		}
		cur.Spec.HolderIdentity, cur.Spec.LeaseDurationSeconds, cur.Spec.AcquireTime, cur.Spec.RenewTime = &cfg.Identity, &secs, &now, &now
		var updated *coordinationv1.Lease
		_, err = d.s.write(ctx, func(ctx context.Context) (err error) {
			updated, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if apierrors.IsConflict(err) && attempt < 3 {
			continue // someone else moved first: look again
		}
		if err != nil {
			return nil, lockError(cfg, name, err)
		}
		return &heldLock{d: d, sink: callSinkFrom(ctx), cfg: cfg, id: id, name: name, lease: updated}, nil
	}
}

// namespaceMissing reports whether err says the namespace of the object
// does not exist.
func namespaceMissing(err error) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// createLockNamespace creates the namespace of the rollout Leases.
func (d *Drainer) createLockNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"app.kubernetes.io/managed-by":       "udrain",
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	_, err := d.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).Info("Created the namespace of the rollout Leases", "namespace", name)
	}
	return err
}

func lockError(cfg RolloutLock, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return &LockNamespaceError{Namespace: cfg.Namespace, Lease: name, Err: err}
	}
	if apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "being terminated") {
		role := "the Role udrain-rollout-lock (namespace " + DefaultLockNamespace + ")"
		if cfg.Namespace != DefaultLockNamespace {
			role = fmt.Sprintf("a copy of the Role udrain-rollout-lock in namespace %s", cfg.Namespace)
		}
		return &PermissionError{Err: err, Role: role}
	}
	return fmt.Errorf("taking the rollout's Lease %s/%s: %w", cfg.Namespace, name, err)
}

// keep renews the Lease every third of its duration until ctx ends; when
// a renewal cannot be made before the Lease would expire, or another
// holder has it, it calls lost and returns.
func (h *heldLock) keep(ctx context.Context, lost func(error)) {
	leases := h.d.client.CoordinationV1().Leases(h.cfg.Namespace)
	every := h.cfg.Duration / 3
	clk := h.d.s.Clock
	lastRenew := clk.Now()
	t := clk.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		now := metav1.NewMicroTime(clk.Now())
		l := h.lease.DeepCopy()
		l.Spec.RenewTime = &now
		// A renewal the server leaves unanswered must end before the
		// Lease expires, so that the loss is noticed: within a third of
		// its duration (and RequestTimeout).
		limit := every
		if rt := h.d.s.RequestTimeout; rt > 0 && rt < limit {
			limit = rt
		}
		rctx, cancel := context.WithTimeout(ctx, limit)
		updated, err := leases.Update(rctx, l, metav1.UpdateOptions{})
		cancel()
		switch {
		case err == nil:
			h.lease, lastRenew = updated, now.Time
			continue
		case ctx.Err() != nil:
			return
		case apierrors.IsConflict(err):
			cur, gerr := leases.Get(ctx, h.name, metav1.GetOptions{})
			switch {
			case gerr == nil && ptrValue(cur.Spec.HolderIdentity) == h.cfg.Identity:
				h.lease = cur // our own write raced a read: try again at once
				continue
			case gerr == nil:
				h.lost(lost, &LockLostError{ID: h.id, Namespace: h.cfg.Namespace, Lease: h.name,
					Err: fmt.Errorf("another holder took it over (held by %q, renewed at %s): %w", ptrValue(cur.Spec.HolderIdentity), renewedAt(cur).UTC().Format(time.RFC3339), err)})
				return
			}
			err = gerr // who holds it is not known: retried as a failed renewal
		}
		klog.FromContext(ctx).V(2).Info("Renewing the rollout's Lease failed; retrying", "lease", h.cfg.Namespace+"/"+h.name, "err", err)
		if clk.Since(lastRenew) > h.cfg.Duration-every {
			h.lost(lost, &LockLostError{ID: h.id, Namespace: h.cfg.Namespace, Lease: h.name, Err: err})
			return
		}
	}
}

// lost reports the loss of the Lease and calls lost.
func (h *heldLock) lost(lost func(error), err *LockLostError) {
	h.report(EventLockLost, err, "the rollout's Lease is lost; the rollout stops")
	lost(err)
}

// release gives the Lease up (empty holder), so that a next rollout with
// the same ID need not wait for it to expire. It reports a LockReleased
// event whatever happens: this process no longer holds the Lease (a Lease
// it could not clear expires by itself).
func (h *heldLock) release(ctx context.Context) {
	defer h.report(EventLockReleased, nil, "Lease "+h.cfg.Namespace+"/"+h.name+" released")
	leases := h.d.client.CoordinationV1().Leases(h.cfg.Namespace)
	for range 3 {
		cur, err := leases.Get(ctx, h.name, metav1.GetOptions{})
		if err != nil || ptrValue(cur.Spec.HolderIdentity) != h.cfg.Identity {
			return
		}
		cur.Spec.HolderIdentity = nil
		if _, err = leases.Update(ctx, cur, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			if err != nil {
				klog.FromContext(ctx).Info("Releasing the rollout's Lease failed; it expires by itself", "lease", h.cfg.Namespace+"/"+h.name, "err", err)
			}
			return
		}
	}
}

// renewedAt is when the Lease was last renewed (made, if never).
func renewedAt(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return l.CreationTimestamp.Time
	}
	return l.Spec.RenewTime.Time
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
