package upgrade

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// onEvent is the Drainer's OnEvent: it finds the request by the event's
// rollout ID, records Kubernetes Events on the pods and nodes concerned
// (related to the request) and updates the request's status. Package
// eviction serialises the calls; the recorder and the status writer work
// asynchronously, so it never holds a drain up.
func (r *Reconciler) onEvent(_ context.Context, e eviction.Event) {
	r.mu.Lock()
	rn := r.active[e.ID]
	r.mu.Unlock()
	if rn == nil {
		return // not a rollout of this reconciler's (cannot happen: one Drainer per Reconciler)
	}
	related := rn.request
	switch e.Type {
	case eviction.EventEvicted:
		r.recorder.Eventf(podRef(e.Pod), related, corev1.EventTypeNormal, "Evicted", "Evict",
			"evicted from node %s in phase %d for upgrade %s of domain %s", e.Pod.Node, e.Stage.Phase(), e.ID, e.Domain)
	case eviction.EventBlocked:
		r.recorder.Eventf(podRef(e.Pod), related, corev1.EventTypeWarning, "EvictionBlocked", "Evict", "upgrade %s of domain %s: %s", e.ID, e.Domain, e.Block)
	case eviction.EventCordoned, eviction.EventUncordoned:
		r.recorder.Eventf(nodeRef(e.Node), related, corev1.EventTypeNormal, string(e.Type), string(e.Type),
			"upgrade %s of domain %s", e.ID, e.Domain)
	case eviction.EventDomainDone:
		r.recorder.Eventf(related, nil, corev1.EventTypeNormal, "DomainUpgraded", "Upgrade", "domain %s: %s", e.Domain, e.Message)
	}
	if reason, message, ok := progress(e); ok {
		rn.update(func(s *Status) {
			s.set(ConditionProgressing, metav1.ConditionTrue, reason, message)
			switch e.Type {
			case eviction.EventDomainStarted:
				s.setDomain(e.Domain, DomainRunning)
			case eviction.EventDomainDone:
				s.setDomain(e.Domain, eviction.StateDone)
			case eviction.EventDomainSkipped:
				s.setDomain(e.Domain, eviction.StateSkipped)
			}
			if e.Health != nil {
				status, reason, msg := healthCondition(e.Health)
				s.set(ConditionGroupsHealthy, status, reason, msg)
			}
		})
	}
}

// progress is the Progressing condition's reason and message for the
// events that change what the rollout is doing; false for the others
// (per-pod and per-node events).
func progress(e eviction.Event) (reason, message string, ok bool) {
	switch e.Type {
	case eviction.EventDomainStarted, eviction.EventDomainSkipped, eviction.EventPhaseStarted, eviction.EventUpgradeDone, eviction.EventDomainDone:
		reason = string(e.Type)
	case eviction.EventBlocked:
		reason = "EvictionBlocked"
	case eviction.EventUnblocked:
		reason = "Evicting"
	case eviction.EventUpgradeStarted:
		reason = "Upgrading"
	case eviction.EventWaitingRecovery, eviction.EventRecovered:
		reason = string(e.Type)
	default:
		return "", "", false
	}
	message = "domain " + e.Domain
	if n := e.Stage.Phase(); n != 0 {
		message += fmt.Sprintf(", phase %d", n)
	}
	if e.Message != "" {
		message += ": " + e.Message
	}
	if e.Block != nil {
		message = fmt.Sprintf("domain %s: %s", e.Domain, e.Block)
	}
	return reason, message, true
}

// podRef refers to the pod udrain saw, by UID: the Event is never taken
// for its replacement of the same name.
func podRef(p *topology.PodRef) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// nodeRef refers to a node as the kubelet does for node events (its name
// stands for its UID).
func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: name, UID: types.UID(name)}
}
