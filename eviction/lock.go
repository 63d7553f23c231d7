package eviction

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/udrain/udrain/internal/lease"
)

// Defaults of the rollout's lock (RolloutOptions.NoLock).
const (
	// DefaultLockNamespace is where rollouts keep their Leases: a
	// namespace of udrain's own (deploy/namespace creates it), so that the
	// permission to write Leases there reaches no other component's lock.
	DefaultLockNamespace = "udrain-system"
	// DefaultLockDuration is how long a rollout's Lease holds without a
	// renewal; it is renewed every third of it.
	DefaultLockDuration = 30 * time.Second
)

// rolloutLock is the lock a rollout holds while it runs (see
// RolloutOptions.NoLock), settled from RolloutOptions' Lock fields.
type rolloutLock struct {
	Disabled        bool
	Namespace       string
	CreateNamespace bool
	Identity        string
	Duration        time.Duration
}

// lockName is the Lease name of a rollout: "udrain-rollout-<id>" when that
// is a valid name, else with the ID lowered and a hash of it.
func lockName(id string) string { return lease.Name("udrain-rollout-", id) }

// settle fills in the lock's defaults (an identity of this process among
// them) and checks its settings.
func (l rolloutLock) settle() (rolloutLock, error) {
	if l.Namespace == "" {
		l.Namespace = DefaultLockNamespace
	}
	if l.Duration == 0 {
		l.Duration = DefaultLockDuration
	}
	if l.Duration < 3*time.Second {
		return l, configError("RolloutOptions.LockDuration", "%v is too short; use at least 3s, or 0 for the default (%v)", l.Duration, DefaultLockDuration)
	}
	if errs := validation.IsDNS1123Label(l.Namespace); len(errs) > 0 {
		return l, configError("RolloutOptions.LockNamespace", "%q is not a namespace name: %v", l.Namespace, errs)
	}
	if l.Identity == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		l.Identity = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return l, nil
}

// heldLock is the rollout's Lease, held by this process.
type heldLock struct {
	d    *Drainer
	sink *callSink // the rollout's OnEvent
	cfg  rolloutLock
	id   string
	name string
	held *lease.Held
}

// acquireLock takes the rollout's Lease, or returns a *RetryError (ReasonLocked) when
// another holder has it. It reports a LockAcquired event.
func (d *Drainer) acquireLock(ctx context.Context, id string, cfg rolloutLock) (*heldLock, error) {
	name := lockName(id)
	held, err := lease.New(d.client, d.s.Clock, lease.Config{
		Namespace: cfg.Namespace, Name: name, Identity: cfg.Identity, Duration: cfg.Duration,
		Annotations:     map[string]string{"udrain.dev/rollout-id": id},
		CreateNamespace: cfg.CreateNamespace,
		RequestTimeout:  d.s.RequestTimeout,
		Read:            d.bounded,
	}).Acquire(ctx)
	if err != nil {
		return nil, lockError(id, cfg, name, err, d.s.Clock.Now())
	}
	h := &heldLock{d: d, sink: callSinkFrom(ctx), cfg: cfg, id: id, name: name, held: held}
	h.report(EventLockAcquired, nil, fmt.Sprintf("holding Lease %s/%s as %s", cfg.Namespace, h.name, cfg.Identity))
	return h, nil
}

// report sends an event about the Lease.
func (h *heldLock) report(t EventType, err error, msg string) {
	h.d.events.emit(h.sink, Event{Time: h.d.s.Clock.Now(), Type: t, ID: h.id, Err: err, Message: msg})
}

// lockError is the error of a rollout that could not take its Lease: a
// *RetryError (ReasonLocked) naming the holder, a *ClusterError
// (ReasonNoLockNamespace), a *PermissionError naming the lock's Role, or
// the request's error.
func lockError(id string, cfg rolloutLock, name string, err error, now time.Time) error {
	if he := (*lease.HeldError)(nil); errors.As(err, &he) {
		return &RetryError{Reason: ReasonLocked, ID: id, Namespace: he.Namespace, Lease: he.Name, Holder: he.Holder, RenewedAt: he.RenewedAt, LockDuration: he.Duration,
			RetryAfter: max(0, he.RenewedAt.Add(he.Duration).Sub(now))}
	}
	if apierrors.IsNotFound(err) {
		return &ClusterError{Reason: ReasonNoLockNamespace, Namespace: cfg.Namespace, Lease: name, Err: err}
	}
	if apierrors.IsForbidden(err) && forbiddenResource(err) == "namespaces" {
		return &PermissionError{Reason: ReasonForbidden, Err: err, Role: lockRole(cfg.Namespace) + ", and a ClusterRole that may create namespaces (or create namespace " +
			cfg.Namespace + " beforehand, as deploy/namespace does, or set RolloutOptions.LockNamespaceMustExist and another LockNamespace)"}
	}
	if apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "being terminated") {
		return &PermissionError{Reason: ReasonForbidden, Err: err, Role: lockRole(cfg.Namespace)}
	}
	return fmt.Errorf("taking the rollout's Lease %s/%s: %w", cfg.Namespace, name, err)
}

// forbiddenResource is the resource a Forbidden error of the API server
// names ("namespaces", "leases"); "" when it names none.
func forbiddenResource(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		return status.Status().Details.Kind
	}
	return ""
}

// lockRole names the Role that lets udrain read and write the rollout
// Leases of namespace: deploy/rbac's, or a copy of it in another one.
func lockRole(namespace string) string {
	if namespace == DefaultLockNamespace {
		return "the Role udrain-rollout-lock (namespace " + DefaultLockNamespace + ")"
	}
	return "a copy of the Role udrain-rollout-lock in namespace " + namespace
}

// keep renews the Lease until ctx ends; when it is lost, it reports a
// LockLost event and calls lost with a *RetryError (ReasonLockLost).
func (h *heldLock) keep(ctx context.Context, lost func(error)) {
	h.held.Keep(ctx, func(le *lease.LostError) {
		err := &RetryError{Reason: ReasonLockLost, ID: h.id, Namespace: h.cfg.Namespace, Lease: h.name, Err: le.Err}
		h.report(EventLockLost, err, "the rollout's Lease is lost; the rollout stops")
		lost(err)
	})
}

// release gives the Lease up (empty holder), so that a next rollout with
// the same ID need not wait for it to expire. It reports a LockReleased
// event whatever happens: this process no longer holds the Lease (a Lease
// it could not clear expires by itself).
func (h *heldLock) release(ctx context.Context) {
	h.held.Release(ctx)
	h.report(EventLockReleased, nil, "Lease "+h.cfg.Namespace+"/"+h.name+" released")
}
