package eviction

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/health"
)

// stuckWatch follows, across a recovery's evaluations, the members whose
// containers wait for a reason that does not clear by itself, and the
// members that stay ContainerCreating: once one has for the watch's time,
// its warning events say whether its volume or sandbox cannot be made.
type stuckWatch struct {
	after time.Duration // negative: never stop
	since map[types.UID]time.Time
	first time.Time
	// starting are the members scheduled but not running, with no
	// container waiting for a reason of its own (ContainerCreating).
	starting map[types.UID]*startingMember
	// warning returns the reason and message of the pod's latest warning
	// event that says it cannot start (empty when none does).
	warning func(ctx context.Context, namespace, name string, uid types.UID) (reason, message string, err error)
}

// startingMember is a member seen ContainerCreating since since; its
// events were read last at checked.
type startingMember struct {
	since, checked  time.Time
	reason, message string
}

// check records the stuck members of h and returns a *ClusterError (ReasonStuck), naming
// every stuck member, once one of them has been stuck for the watch's time.
// A member ContainerCreating for that long has its warning events read
// (once per the watch's time): a volume or sandbox failure makes it stuck.
func (w *stuckWatch) check(ctx context.Context, domain string, h *health.DomainStatus, now time.Time) error {
	if w.after < 0 {
		return nil
	}
	seen := map[types.UID]bool{}
	var stuck []health.GroupStatus
	due := false
	w.first = time.Time{}
	record := func(g health.GroupStatus, m health.MemberStatus, since time.Time) {
		if n := len(stuck); n == 0 || stuck[n-1].ID != g.ID {
			g.Problems = nil
			stuck = append(stuck, g)
		}
		last := &stuck[len(stuck)-1]
		last.Problems = append(last.Problems, m)
		if now.Sub(since) >= w.after {
			due = true
		} else if w.first.IsZero() || since.Before(w.first) {
			w.first = since
		}
	}
	for _, g := range h.Groups {
		for _, m := range g.Problems {
			if m.UID == "" {
				continue
			}
			if health.Stuck(m.Waiting) {
				seen[m.UID] = true
				since, ok := w.since[m.UID]
				if !ok {
					since, w.since[m.UID] = now, now
				}
				record(g, m, since)
				continue
			}
			if m.Reason != health.ReasonMemberNotRunning || m.Node == "" || m.Waiting != "" || w.starting == nil {
				continue
			}
			seen[m.UID] = true
			if s := w.startingFor(ctx, g.ID.Namespace, m, now); s.reason != "" {
				// Due at once: it has been starting for the watch's time.
				m.Waiting, m.Detail = s.reason, s.message
				record(g, m, s.since)
			}
		}
	}
	w.forget(seen)
	if !due {
		return nil
	}
	// Once one is due, every stuck member is named: they share a cause.
	return &ClusterError{Reason: ReasonStuck, Domain: domain, Groups: stuck, Waited: w.after}
}

// startingFor returns what the watch knows of a member starting (not
// Running, not waiting with a reason), and reads its warning events once
// it has been starting for the watch's time, then once per that time.
func (w *stuckWatch) startingFor(ctx context.Context, namespace string, m health.MemberStatus, now time.Time) *startingMember {
	s := w.starting[m.UID]
	if s == nil {
		s = &startingMember{since: now}
		w.starting[m.UID] = s
	}
	if now.Sub(s.since) >= w.after && (s.checked.IsZero() || now.Sub(s.checked) >= w.after) && w.warning != nil {
		s.checked = now
		reason, message, err := w.warning(ctx, namespace, m.Name, m.UID)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Reading a starting member's events failed", "pod", klog.KRef(namespace, m.Name), "err", err)
		}
		s.reason, s.message = reason, message
	}
	return s
}

// forget drops the members not seen in the last check, and sets first to
// the next read of a starting member's events, if earlier.
func (w *stuckWatch) forget(seen map[types.UID]bool) {
	for uid := range w.since {
		if !seen[uid] {
			delete(w.since, uid)
		}
	}
	for uid, s := range w.starting {
		if !seen[uid] {
			delete(w.starting, uid)
			continue
		}
		if s.reason != "" {
			continue
		}
		at := s.since
		if !s.checked.IsZero() {
			at = s.checked
		}
		// next adds the watch's time: the next read of its events.
		if w.first.IsZero() || at.Before(w.first) {
			w.first = at
		}
	}
}

// next is when the earliest stuck member is due, or a starting member's
// events are read next (zero: none).
func (w *stuckWatch) next() time.Time {
	if w.first.IsZero() {
		return time.Time{}
	}
	return w.first.Add(w.after)
}

// podWarning returns the reason and message of the latest warning event of
// pod uid that says it cannot start (cannotStart), if that is its latest
// warning. A Multi-Attach error clears by itself (the volume is detached
// from the node the pod left, at the latest after the attach-detach
// controller's wait) and does not count.
func (d *Drainer) podWarning(ctx context.Context, namespace, name string, uid types.UID) (reason, message string, err error) {
	list, err := d.client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Pod", "involvedObject.name": name, "involvedObject.uid": string(uid), "type": corev1.EventTypeWarning,
	}.AsSelector().String()})
	if err != nil {
		return "", "", err
	}
	var latest *corev1.Event
	var at time.Time
	for i := range list.Items {
		e := &list.Items[i]
		if e.InvolvedObject.UID != uid || e.Type != corev1.EventTypeWarning {
			continue
		}
		t := eventTime(e)
		if latest == nil || t.After(at) {
			latest, at = e, t
		}
	}
	if latest == nil || !cannotStart[latest.Reason] || strings.Contains(latest.Message, "Multi-Attach error") {
		return "", "", nil
	}
	msg := latest.Message
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return latest.Reason, msg, nil
}

// eventTime is when an event was last seen.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
