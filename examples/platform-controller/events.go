package main

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// eventReporter turns the rollout's progress events into Kubernetes Events
// on the objects they concern, and log lines.
type eventReporter struct {
	recorder record.EventRecorder
	sink     *countingSink
	logger   klog.Logger

	mu       sync.Mutex
	recorded int
}

func (r *eventReporter) eventf(obj *corev1.ObjectReference, eventtype, reason, format string, args ...any) {
	r.mu.Lock()
	r.recorded++
	r.mu.Unlock()
	r.recorder.Eventf(obj, eventtype, reason, format, args...)
}

// flush waits, up to timeout, until the recorder has written every event
// it was given: it sends asynchronously, and a program that exits right
// after the rollout would lose the last ones. (The recorder may also drop
// or merge events of a noisy object; flush then gives up at timeout.)
func (r *eventReporter) flush(ctx context.Context, timeout time.Duration) {
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.sink.count() >= r.recorded, nil
	})
}

// countingSink counts the writes of the recorder.
type countingSink struct {
	record.EventSink
	mu      sync.Mutex
	written int
}

func (s *countingSink) done() {
	s.mu.Lock()
	s.written++
	s.mu.Unlock()
}

func (s *countingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// Create writes a new event and counts it.
func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	defer s.done()
	return s.EventSink.Create(e)
}

// Update writes an event again and counts it.
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	defer s.done()
	return s.EventSink.Update(e)
}

// Patch updates a repeated event and counts it.
func (s *countingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	defer s.done()
	return s.EventSink.Patch(e, data)
}

// report is the eviction.Options.OnEvent callback. Calls are serialised by
// package eviction; the recorder sends asynchronously, so it never holds a
// drain up. Pod events carry the pod's UID and node: the Kubernetes Event
// names that pod, not a replacement of the same name.
func (r *eventReporter) report(_ context.Context, e eviction.Event) {
	kv := []any{"event", e.Type, "domain", e.Domain}
	if n := e.Stage.Phase(); n != 0 {
		kv = append(kv, "phase", n)
	}
	if e.Pod != nil {
		kv = append(kv, "pod", klog.KRef(e.Pod.Namespace, e.Pod.Name), "podUID", e.Pod.UID)
	}
	if e.Node != "" {
		kv = append(kv, "node", e.Node)
	}
	if e.Message != "" {
		kv = append(kv, "message", e.Message)
	}
	switch e.Type {
	case eviction.EventCordoned, eviction.EventUncordoned, eviction.EventLeftCordoned:
		r.eventf(nodeRef(e.Node), corev1.EventTypeNormal, "Udrain"+string(e.Type), "upgrade domain %s (%s): %s", e.Domain, e.ID, strings.ToLower(string(e.Type)))
		r.logger.V(2).Info("Node", kv...)
	case eviction.EventNodeGone:
		r.eventf(nodeRef(e.Node), corev1.EventTypeWarning, "UdrainNodeGone", "upgrade domain %s (%s): %s", e.Domain, e.ID, e.Message)
		r.logger.Info("Node gone during the drain", kv...)
	case eviction.EventEvicted:
		r.eventf(podRef(e.Pod), corev1.EventTypeNormal, "UdrainEvicted", "evicted from node %s in phase %d for the upgrade of domain %s (%s)", e.Pod.Node, e.Stage.Phase(), e.Domain, e.ID)
		r.logger.V(3).Info("Pod", kv...)
	case eviction.EventBlocked:
		b := e.Block
		r.eventf(podRef(e.Pod), corev1.EventTypeWarning, "UdrainEvictionBlocked", "upgrade domain %s (%s): %s", e.Domain, e.ID, b)
		r.logger.Info("Eviction blocked by a PodDisruptionBudget", append(kv, "pdb", klog.KRef(b.Namespace, b.PDB),
			"disruptionsAllowed", b.DisruptionsAllowed, "currentHealthy", b.CurrentHealthy, "desiredHealthy", b.DesiredHealthy)...)
	case eviction.EventWaitingRecovery, eviction.EventRecovered:
		// The message is a sentence; the health is the structure behind it
		// (package health's judgment of each group and budget).
		if h := e.Health; h != nil {
			r.logger.Info(string(e.Type), "event", e.Type, "domain", e.Domain, "healthy", h.Healthy, "groups", len(h.Groups), "notRecovered", unhealthy(h))
		}
	case eviction.EventEvicting, eviction.EventGone, eviction.EventDryRun:
		r.logger.V(3).Info("Pod", kv...)
	case eviction.EventRetrying:
		r.logger.V(2).Info("Retrying", append(kv, "err", e.Err)...)
	default:
		r.logger.Info(string(e.Type), kv...)
	}
}

// nodeRef refers to a node as kubectl does for node events (the node's
// name stands in for its UID), so that "kubectl describe node" shows them.
func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// podRef refers to the pod udrain saw, by UID.
func podRef(p *topology.PodRef) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}
