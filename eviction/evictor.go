package eviction

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
//
// A dry run is sent as the request's dryRun parameter as well as in the
// Eviction's DeleteOptions: the API server honours either, but admission
// webhooks learn of a dry run only from the parameter. With the
// DeleteOptions alone (client-go's Evict, and so kubectl drain
// --dry-run=server), a webhook is told the eviction is real, and one that
// acts on evictions (sideEffects NoneOnDryRun) would act on a dry run.
func EvictionAPI(client kubernetes.Interface) Evictor {
	return EvictorFunc(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
		eviction := &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			DeleteOptions: &opts,
		}
		// Fake clientsets have no REST client (and no admission).
		if rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil && len(opts.DryRun) > 0 {
			return rc.Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
				VersionedParams(&metav1.CreateOptions{DryRun: opts.DryRun}, scheme.ParameterCodec).
				Body(eviction).Do(ctx).Error()
		}
		return client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, eviction)
	})
}

// PodDeletion deletes pods directly, bypassing PodDisruptionBudgets, like
// kubectl drain --disable-eviction. udrain keeps its phase order either way.
func PodDeletion(client kubernetes.Interface) Evictor {
	return EvictorFunc(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
		return client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	})
}
