package eviction

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/topology"
)

// kubectlCallbacks calls drain.Helper's callbacks when kubectl drain
// does: OnPodDeletionOrEvictionStarted before a pod's first eviction (or
// deletion) request; OnPodDeletionOrEvictionFinished once the pod (that
// UID) is gone, with a nil error, or, when it is unset, the deprecated
// OnPodDeletedOrEvicted. Where kubectl's helper says nothing, udrain
// calls Finished with the error that stopped a pod's eviction for good,
// so that each Started of a drain that ends gets its Finished. A pod
// still waited for when the drain stops, or no longer waited for
// (SkipWaitForDeleteTimeoutSeconds), gets none, as in kubectl.
type kubectlCallbacks struct {
	h             *drain.Helper
	usingEviction bool

	mu sync.Mutex
	// pods are the pods started and not finished, as they were handed
	// to Started.
	pods map[topology.PodRef]*corev1.Pod
}

func newKubectlCallbacks(h *drain.Helper, usingEviction bool) *kubectlCallbacks {
	return &kubectlCallbacks{h: h, usingEviction: usingEviction, pods: map[topology.PodRef]*corev1.Pod{}}
}

// any reports whether a callback is set: without, nothing is kept.
func (c *kubectlCallbacks) any() bool {
	return c != nil && (c.h.OnPodDeletionOrEvictionStarted != nil || c.h.OnPodDeletionOrEvictionFinished != nil || c.h.OnPodDeletedOrEvicted != nil)
}

// started calls Started for p and remembers it for Finished.
func (c *kubectlCallbacks) started(ex *execution, p PlannedPod) {
	if !c.any() {
		return
	}
	pod := ex.kubectlPod(p)
	c.mu.Lock()
	c.pods[p.PodRef] = pod
	c.mu.Unlock()
	if c.h.OnPodDeletionOrEvictionStarted != nil {
		c.h.OnPodDeletionOrEvictionStarted(pod.DeepCopy(), c.usingEviction)
	}
}

// finished calls Finished (or the deprecated OnPodDeletedOrEvicted, for a
// pod gone) for a pod Started was called for, once.
func (c *kubectlCallbacks) finished(ref topology.PodRef, err error) {
	pod, ok := c.forget(ref)
	if !ok {
		return
	}
	switch {
	case c.h.OnPodDeletionOrEvictionFinished != nil:
		c.h.OnPodDeletionOrEvictionFinished(pod, c.usingEviction, err)
	case c.h.OnPodDeletedOrEvicted != nil && err == nil:
		c.h.OnPodDeletedOrEvicted(pod, c.usingEviction)
	}
}

// forget drops a pod no callback is due for any more, and returns it.
func (c *kubectlCallbacks) forget(ref topology.PodRef) (*corev1.Pod, bool) {
	if !c.any() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pod, ok := c.pods[ref]
	delete(c.pods, ref)
	return pod, ok
}

// kubectlPod builds the pod handed to drain.Helper's callbacks: the
// watch's copy, or its name and UID when the watch has it no more.
func (ex *execution) kubectlPod(p PlannedPod) *corev1.Pod {
	if cur, ok := ex.v.Pod(p.Namespace, p.Name); ok && cur.UID == p.UID {
		return cur.DeepCopy()
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
}
