// Package lease takes, keeps and gives up a coordination.k8s.io Lease: the
// lock that a udrain rollout holds while it runs, so that the same rollout
// never runs twice at once (package eviction's rollout lock, its one user,
// which its log lines name).
//
// A Lock takes its Lease when the Lease does not exist, is its own, is
// free or has expired (Acquire), and otherwise reports who holds it
// (*HeldError). The Held it returns renews the Lease every third of its
// duration until its context ends, and reports a Lease it cannot keep
// (Keep, *LostError); Release gives the Lease up. The times a Lock writes
// and compares come from its clock; it logs with the logger of the context
// (klog.FromContext).
package lease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// managedBy is the app.kubernetes.io/managed-by label of the Leases a Lock
// creates and of the namespace it creates for them.
const managedBy = "udrain"

// Config says which Lease a Lock takes, as whom and for how long.
type Config struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity names this holder in the Lease (its HolderIdentity).
	Identity string
	// Duration is how long the Lease holds without a renewal, in whole
	// seconds (a Lease counts seconds) and at least one; Keep renews it
	// every third of it.
	Duration time.Duration
	// Annotations are put on a Lease that Acquire creates.
	Annotations map[string]string
	// CreateNamespace creates Namespace (labelled as udrain's, Pod
	// Security "restricted") when it does not exist.
	CreateNamespace bool
	// RequestTimeout bounds each write Acquire makes and each renewal
	// (which a third of Duration bounds too); zero or negative, no bound
	// of its own.
	RequestTimeout time.Duration
	// Read runs the request with which Acquire reads the Lease, within the
	// caller's bounds (a timeout, its diagnosis of a server that does not
	// answer); nil runs it as it is.
	Read func(ctx context.Context, request func(context.Context) error) error
}

// Lock takes one Lease.
type Lock struct {
	client kubernetes.Interface
	clock  clock.WithTicker
	cfg    Config
}

// New returns a Lock on the Lease cfg names, read and written with client
// (its coordination.k8s.io Leases and, with Config.CreateNamespace, its
// namespaces) and timed by clk; nil means the real clock.
func New(client kubernetes.Interface, clk clock.WithTicker, cfg Config) *Lock {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Lock{client: client, clock: clk, cfg: cfg}
}

// HeldError reports a Lease that another holder renewed within its
// duration: it is not free.
type HeldError struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Holder is the holder's identity.
	Holder string
	// RenewedAt is when the holder last renewed the Lease; it is free once
	// Duration has passed since then.
	RenewedAt time.Time
	// Duration is the Lease's duration.
	Duration time.Duration
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("Lease %s/%s is held by %q, renewed at %s (it expires %s after its last renewal)",
		e.Namespace, e.Name, e.Holder, e.RenewedAt.UTC().Format(time.RFC3339), e.Duration)
}

// LostError reports a Lease that Keep could not keep: another holder took
// it over, or no renewal succeeded before it would expire.
type LostError struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Err says why: the error of the last renewal, or one naming the
	// holder that took the Lease over.
	Err error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("Lease %s/%s is lost: %v", e.Namespace, e.Name, e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

// Name is the name of the Lease of key, under prefix: prefix+key when that
// is a valid name, else the key lowered, its other characters made dashes,
// cut to 40 and followed by a hash of it, so that two keys that read alike
// keep two Leases.
func Name(prefix, key string) string {
	name := prefix + key
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, key)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	return strings.Trim(prefix+clean, "-") + "-" + hex.EncodeToString(sum[:])[:8]
}

// renewedAt is when the Lease was last renewed (made, if never).
func renewedAt(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return l.CreationTimestamp.Time
	}
	return l.Spec.RenewTime.Time
}

// State is what a Lease says of its holder.
type State struct {
	// Holder is the holder's identity; empty when none holds it.
	Holder string
	// AcquiredAt is when the holder took it; nil when it does not say.
	AcquiredAt *time.Time
	// RenewedAt is its last renewal (its creation, without one).
	RenewedAt time.Time
	// Duration is how long it holds without a renewal.
	Duration time.Duration
}

// StateOf reads l's State.
func StateOf(l *coordinationv1.Lease) State {
	s := State{Holder: ptr.Deref(l.Spec.HolderIdentity, ""), RenewedAt: renewedAt(l),
		Duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
	if t := l.Spec.AcquireTime; t != nil {
		at := t.Time
		s.AcquiredAt = &at
	}
	return s
}

// HeldAt reports whether a holder holds the Lease at now: it has one,
// renewed within Duration.
func (s State) HeldAt(now time.Time) bool {
	return s.Holder != "" && now.Sub(s.RenewedAt) < s.Duration
}

// Held is a Lease this process holds, from Acquire.
type Held struct {
	l *Lock
	// lease is the Lease as last written; Keep's own.
	lease *coordinationv1.Lease
}

// Acquire takes the Lease: it creates it (and, with
// Config.CreateNamespace, its namespace) when it does not exist, and takes
// it over when it is free, this holder's own, or expired (which it logs).
// It returns a *HeldError when another holder renewed it within its
// duration, and otherwise the error of the request that failed, as the
// client (or Config.Read) returned it: a namespace that does not exist is
// a NotFound of the Lease's creation. A write that races another is
// retried, three times at most. A Config without a namespace, name or
// identity, or with a Duration under a second, is refused before any
// request.
func (l *Lock) Acquire(ctx context.Context) (*Held, error) {
	if err := l.cfg.check(); err != nil {
		return nil, err
	}
	leases := l.client.CoordinationV1().Leases(l.cfg.Namespace)
	for attempt := 0; ; attempt++ {
		var cur *coordinationv1.Lease
		err := l.read(ctx, func(ctx context.Context) (err error) {
			cur, err = leases.Get(ctx, l.cfg.Name, metav1.GetOptions{})
			return err
		})
		if apierrors.IsNotFound(err) {
			created, err := l.create(ctx)
			if apierrors.IsAlreadyExists(err) && attempt < 3 {
				continue
			}
			if l.cfg.CreateNamespace && namespaceMissing(err) && attempt < 3 {
				if err := l.createNamespace(ctx); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			return &Held{l: l, lease: created}, nil
		}
		if err != nil {
			return nil, err
		}
		if st := StateOf(cur); st.Holder != "" && st.Holder != l.cfg.Identity {
			if st.HeldAt(l.clock.Now()) {
				return nil, &HeldError{Namespace: l.cfg.Namespace, Name: l.cfg.Name, Holder: st.Holder, RenewedAt: st.RenewedAt, Duration: st.Duration}
			}
			klog.FromContext(ctx).Info("Taking over an expired rollout Lease", "lease", l.cfg.Namespace+"/"+l.cfg.Name, "previousHolder", st.Holder, "renewedAt", st.RenewedAt)
		}
		l.hold(cur)
		var updated *coordinationv1.Lease
		err = l.write(ctx, func(ctx context.Context) (err error) {
			updated, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if apierrors.IsConflict(err) && attempt < 3 {
			continue // someone else moved first: look again
		}
		if err != nil {
			return nil, err
		}
		return &Held{l: l, lease: updated}, nil
	}
}

// check refuses a Config that names no Lease or holder, or whose Duration
// a Lease cannot count.
func (c Config) check() error {
	if c.Namespace == "" || c.Name == "" || c.Identity == "" {
		return fmt.Errorf("lease: namespace %q, name %q and identity %q may not be empty", c.Namespace, c.Name, c.Identity)
	}
	if c.Duration < time.Second {
		return fmt.Errorf("lease: duration %v is shorter than a second", c.Duration)
	}
	return nil
}

// hold makes l this holder's, acquired and renewed now, for Duration.
func (l *Lock) hold(lease *coordinationv1.Lease) {
	now := metav1.NewMicroTime(l.clock.Now())
	secs := int32(l.cfg.Duration / time.Second)
	identity := l.cfg.Identity
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.AcquireTime, lease.Spec.RenewTime = &identity, &secs, &now, &now
}

// create creates the Lease, held by this holder.
func (l *Lock) create(ctx context.Context) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.cfg.Namespace, Name: l.cfg.Name,
		Labels: map[string]string{"app.kubernetes.io/managed-by": managedBy}, Annotations: l.cfg.Annotations}}
	l.hold(lease)
	var created *coordinationv1.Lease
	err := l.write(ctx, func(ctx context.Context) (err error) {
		created, err = l.client.CoordinationV1().Leases(l.cfg.Namespace).Create(ctx, lease, metav1.CreateOptions{})
		return err
	})
	return created, err
}

// read runs a read request through Config.Read.
func (l *Lock) read(ctx context.Context, request func(context.Context) error) error {
	if l.cfg.Read == nil {
		return request(ctx)
	}
	return l.cfg.Read(ctx, request)
}

// write runs a write request within Config.RequestTimeout.
func (l *Lock) write(ctx context.Context, request func(context.Context) error) error {
	if l.cfg.RequestTimeout <= 0 {
		return request(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	return request(rctx)
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

// createNamespace creates the namespace of the Lease; one that exists
// already is no error.
func (l *Lock) createNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.cfg.Namespace, Labels: map[string]string{
		"app.kubernetes.io/managed-by":       managedBy,
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	_, err := l.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).Info("Created the namespace of the rollout Leases", "namespace", l.cfg.Namespace)
	}
	return err
}

// Keep renews the Lease every third of its duration until ctx ends. When
// another holder has taken it over, or no renewal could be made before
// the Lease would expire (more than two thirds of its duration since the
// last one), it calls lost and returns. A renewal gets a third of the
// duration (and Config.RequestTimeout) to answer, so that a server that
// leaves it unanswered cannot hide the loss.
func (h *Held) Keep(ctx context.Context, lost func(*LostError)) {
	cfg, clk := h.l.cfg, h.l.clock
	leases := h.l.client.CoordinationV1().Leases(cfg.Namespace)
	every := cfg.Duration / 3
	limit := every
	if rt := cfg.RequestTimeout; rt > 0 && rt < limit {
		limit = rt
	}
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
			cur, gerr := leases.Get(ctx, cfg.Name, metav1.GetOptions{})
			switch {
			case gerr == nil && ptr.Deref(cur.Spec.HolderIdentity, "") == cfg.Identity:
				h.lease = cur // our own write raced a read: renew this one at the next tick
				continue
			case gerr == nil:
				lost(&LostError{Namespace: cfg.Namespace, Name: cfg.Name,
					Err: fmt.Errorf("another holder took it over (held by %q, renewed at %s): %w", ptr.Deref(cur.Spec.HolderIdentity, ""), renewedAt(cur).UTC().Format(time.RFC3339), err)})
				return
			}
			err = gerr // who holds it is not known: retried as a failed renewal
		}
		klog.FromContext(ctx).V(2).Info("Renewing the rollout's Lease failed; retrying", "lease", cfg.Namespace+"/"+cfg.Name, "err", err)
		if clk.Since(lastRenew) > cfg.Duration-every {
			lost(&LostError{Namespace: cfg.Namespace, Name: cfg.Name, Err: err})
			return
		}
	}
}

// Release gives the Lease up (an empty holder), so that the next holder
// need not wait for it to expire; a Lease that another holder has taken
// over is left alone. A Lease it cannot clear (which it logs) expires by
// itself. Call it once the context of Keep has ended: it reads the Lease
// afresh, so Keep need not have returned.
func (h *Held) Release(ctx context.Context) {
	cfg := h.l.cfg
	leases := h.l.client.CoordinationV1().Leases(cfg.Namespace)
	for range 3 {
		cur, err := leases.Get(ctx, cfg.Name, metav1.GetOptions{})
		if err != nil || ptr.Deref(cur.Spec.HolderIdentity, "") != cfg.Identity {
			return
		}
		cur.Spec.HolderIdentity = nil
		if _, err = leases.Update(ctx, cur, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			if err != nil {
				klog.FromContext(ctx).Info("Releasing the rollout's Lease failed; it expires by itself", "lease", cfg.Namespace+"/"+cfg.Name, "err", err)
			}
			return
		}
	}
}
