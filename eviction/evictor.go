package eviction

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Evictor removes one pod from its node. It is the seam between planning
// and the API: the Eviction API is the default, pod deletion is kubectl's
// --disable-eviction, and an EvictionRequest backend (lifecycle.k8s.io,
// alpha in Kubernetes 1.37) can be added without touching planning.
//
// Evict must honour opts (the grace period, the dry-run flag and the UID
// precondition, so that a replacement pod with the same name is never
// removed in the old pod's place) and return the API's error unchanged, so
// that udrain can tell a spent budget (429) from a pod that is gone (404,
// or 409 for a UID mismatch).
type Evictor interface {
	Evict(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error
}

// EvictorFunc adapts a function to Evictor.
type EvictorFunc func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error

// Evict calls f.
func (f EvictorFunc) Evict(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
	return f(ctx, pod, opts)
}

// EvictionAPI evicts through the pods/eviction subresource (policy/v1),
// which enforces PodDisruptionBudgets.
func EvictionAPI(client kubernetes.Interface) Evictor {
	return EvictorFunc(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
		return client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			DeleteOptions: &opts,
		})
	})
}

// PodDeletion deletes pods directly, bypassing PodDisruptionBudgets, like
// kubectl drain --disable-eviction. udrain keeps its phase order either way.
func PodDeletion(client kubernetes.Interface) Evictor {
	return EvictorFunc(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
		return client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	})
}
