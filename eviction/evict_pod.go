package eviction

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// evictOne evicts one pod, waiting out budgets and retrying transient
// errors, and says how it ended: accepted, gone, or waited (terminating).
// Helper.OnPodDeletionOrEvictionStarted is called before its first
// request; OnPodDeletionOrEvictionFinished when it is gone (waitGone), or
// here when it was gone already or its eviction failed for good.
func (ex *execution) evictOne(ctx context.Context, phase Stage, p PlannedPod) (outcomeKind, error) {
	if p.Terminating {
		return outcomeWaited, nil
	}
	if ex.v.gone(p.PodRef) {
		return outcomeGone, nil
	}
	ex.callbacks.started(ex, p)
	ex.emit(podEvent(EventEvicting, phase, p.PodRef))
	pe := &podEviction{ex: ex, phase: phase, p: p, backoff: ex.d.s.Backoff}
	kind, err := pe.run(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		ex.callbacks.finished(p.PodRef, err)
	case err == nil && kind == outcomeGone:
		ex.callbacks.finished(p.PodRef, nil)
	}
	return kind, err
}

// podEviction is the eviction of one pod, tried until the API accepts it,
// the pod is gone, or a refusal that waiting does not end stops it.
type podEviction struct {
	ex      *execution
	phase   Stage
	p       PlannedPod
	backoff wait.Backoff
	// blocked is the budget refusing the eviction, while one does.
	blocked *BlockInfo
	// admissionRefusals and unanswered count the refusals by an
	// admission webhook, and the evictions the server left unanswered in a
	// row.
	admissionRefusals, unanswered int
}

func (pe *podEviction) run(ctx context.Context) (outcomeKind, error) {
	ex, p, phase := pe.ex, pe.p, pe.phase
	for {
		// Never start an eviction after a cancel: a stopped drain must
		// stop evicting, whatever the transport does with the context.
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		err, stop := pe.attempt(ctx)
		if stop != nil {
			return 0, stop
		}
		kind := classifyEvictionError(err)
		if kind == outcomeConflict {
			kind = ex.resolveConflict(ctx, p)
		}
		switch kind {
		case outcomeAccepted, outcomeGone:
			pe.done(kind, nil)
			return kind, nil
		case outcomeMultiPDB:
			return 0, pe.fail(RequestError, &ClusterError{Reason: ReasonMultiplePDBs, Pod: p.PodRef, PDBs: p.PDBs})
		case outcomeFatal:
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				return 0, pe.fail(RequestError, &PermissionError{Reason: ReasonForbidden, Pod: p.PodRef, Err: err})
			}
			return 0, pe.fail(RequestError, fmt.Errorf("evicting pod %s: %w", p.PodRef, err))
		case outcomeAdmission:
			if err := pe.refusedByAdmission(ctx, err); err != nil {
				return 0, err
			}
		case outcomeNamespaceTerminating:
			going, err := pe.namespaceTerminating(ctx, err)
			if err != nil {
				return 0, err
			}
			if going {
				pe.done(outcomeWaited, err)
				return outcomeWaited, nil
			}
		case outcomeBlocked:
			pe.blocked = ex.block(p, phase, err)
			if !ex.waitForBudget(ctx, p, phase, pe.blocked, &pe.backoff) {
				return 0, ctx.Err()
			}
		default: // transient
			delay := pe.backoff.Step()
			ex.log.V(2).Info("Eviction failed; retrying", "pod", p.PodRef, "err", err, "delay", delay)
			ev := podEvent(EventRetrying, phase, p.PodRef)
			ev.Err, ev.Request, ev.Message = err, RequestError, fmt.Sprintf("evicting: %v; retrying in %s", err, delay.Round(time.Millisecond))
			ex.emit(ev)
			if !sleep(ctx, ex.d.s, delay) {
				return 0, ctx.Err()
			}
		}
	}
}

// attempt sends the eviction once and returns the API's answer, or the
// error that stops the pod's eviction: a cancel, or the server leaving
// unansweredWrites evictions in a row unanswered.
func (pe *podEviction) attempt(ctx context.Context) (answer, stop error) {
	ex, p := pe.ex, pe.p
	timedOut, err := ex.d.s.write(ctx, func(ctx context.Context) error { return ex.evict(ctx, p, ex.deleteOptions(p, false)) })
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case !timedOut:
		pe.unanswered = 0
	case pe.unanswered+1 >= unansweredWrites:
		return nil, pe.fail(RequestError, ex.d.unanswered("the eviction of "+p.PodRef.String(), pe.unanswered+1, err))
	default:
		pe.unanswered++
	}
	return err, nil
}

// done reports the pod evicted (accepted), gone, or going with its
// namespace (waited; refused is the refusal that said so).
func (pe *podEviction) done(kind outcomeKind, refused error) {
	ex, p, phase := pe.ex, pe.p, pe.phase
	if pe.blocked != nil {
		ex.unblock(p, pe.blocked, phase)
	}
	switch kind {
	case outcomeAccepted:
		ex.log.V(2).Info("Evicted", "pod", p.PodRef, "phase", phase.Phase())
		ev := podEvent(EventEvicted, phase, p.PodRef)
		ev.Request = RequestEvicted
		ex.emit(ev)
	case outcomeWaited:
		ex.log.V(2).Info("Namespace being deleted; waiting for its pod to go", "pod", p.PodRef)
		ev := podEvent(EventEvicted, phase, p.PodRef)
		ev.Err, ev.Request, ev.Message = refused, RequestNamespaceTerminating, fmt.Sprintf("namespace %s is being deleted, and the pod with it; waiting for it to go", p.Namespace)
		ex.emit(ev)
	default:
		ev := podEvent(EventGone, phase, p.PodRef)
		ev.Request, ev.Message = RequestGone, "gone before eviction"
		ex.emit(ev)
	}
}

// fail reports the pod's eviction failed for err, and returns err.
func (pe *podEviction) fail(req RequestResult, err error) error {
	pe.ex.failed(pe.phase, pe.p, req, err)
	return err
}

// refusedByAdmission waits to try again after an admission webhook
// refused the eviction, or returns the *PermissionError (ReasonDenied,
// ReasonWebhookFailed) that stops it after admissionAttempts refusals (or
// the context's error).
func (pe *podEviction) refusedByAdmission(ctx context.Context, err error) error {
	ex, p, phase := pe.ex, pe.p, pe.phase
	pe.admissionRefusals++
	msg := apiMessage(err)
	_, denied := webhookDenial(msg)
	if pe.admissionRefusals >= admissionAttempts {
		reason := ReasonWebhookFailed
		if denied {
			reason = ReasonDenied
		}
		err := &PermissionError{Reason: reason, Pod: p.PodRef, Webhook: webhookName(msg), Message: msg, Attempts: pe.admissionRefusals, Err: err}
		ex.log.Info("Eviction refused by an admission webhook; stopping the domain", "pod", p.PodRef, "webhook", err.Webhook, "attempts", pe.admissionRefusals, "message", msg)
		return pe.fail(RequestWebhookRefused, err)
	}
	delay := pe.backoff.Step()
	ex.log.V(2).Info("Eviction refused by an admission webhook; retrying", "pod", p.PodRef, "attempt", pe.admissionRefusals, "err", err, "delay", delay)
	ev := podEvent(EventRetrying, phase, p.PodRef)
	ev.Err, ev.Request, ev.Message = err, RequestWebhookRefused, fmt.Sprintf("refused by admission (attempt %d of %d): %s; retrying in %s", pe.admissionRefusals, admissionAttempts, msg, delay.Round(time.Millisecond))
	ex.emit(ev)
	if !sleep(ctx, ex.d.s, delay) {
		return ctx.Err()
	}
	return nil
}

// namespaceTerminating handles an eviction refused because the pod's
// namespace is being deleted (403, cause NamespaceTerminating): the
// namespace controller deletes the pod, and no eviction is accepted in the
// meantime. As kubectl drain does, udrain tries again until the pod is
// terminating, then waits for it to go like a pod that was terminating
// already (true); it reports each refusal (RequestNamespaceTerminating),
// and a drain that stops while such pods wait says so. A retry comes
// after the backoff's next delay, or as soon as the watch sees the pod
// terminating or gone.
func (pe *podEviction) namespaceTerminating(ctx context.Context, err error) (bool, error) {
	ex, p, phase := pe.ex, pe.p, pe.phase
	ex.mu.Lock()
	ex.nsWaiting[p.PodRef] = true
	ex.mu.Unlock()
	going := func() bool {
		cur, ok := ex.v.Pod(p.Namespace, p.Name)
		return !ok || cur.UID != p.UID || cur.DeletionTimestamp != nil
	}
	if going() {
		return true, nil
	}
	delay := pe.backoff.Step()
	ex.log.V(2).Info("Eviction refused: namespace being deleted; retrying", "pod", p.PodRef, "delay", delay)
	ev := podEvent(EventRetrying, phase, p.PodRef)
	ev.Err, ev.Request, ev.Message = err, RequestNamespaceTerminating, fmt.Sprintf("namespace %s is being deleted; the pod goes with it: retrying in %s", p.Namespace, delay.Round(time.Millisecond))
	ex.emit(ev)
	timer := ex.d.s.Clock.NewTimer(delay)
	defer timer.Stop()
	for !going() {
		changed := ex.v.Changed()
		if going() {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-timer.C():
			return false, nil
		case <-changed:
		}
	}
	return false, nil
}

// resolveConflict decides a 409: the UID precondition failed because the
// pod was replaced (gone), or something else conflicted (retry).
func (ex *execution) resolveConflict(ctx context.Context, p PlannedPod) outcomeKind {
	cur, err := ex.d.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && cur.UID != p.UID) {
		return outcomeGone
	}
	return outcomeTransient
}
