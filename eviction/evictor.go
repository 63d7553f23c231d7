package eviction

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/drain"
)

// Evictor removes one pod from its node. It is the seam between planning
// and the API: the Eviction API is the default, pod deletion is kubectl's
// --disable-eviction, and an EvictionRequest backend (lifecycle.k8s.io,
// alpha in Kubernetes 1.37) can be added without touching planning.
//
// It must honour opts (the grace period, the dry-run flag and the UID
// precondition, so that a replacement pod with the same name is never
// removed in the old pod's place) and return the API's error unchanged, so
// that udrain can tell a spent budget (429) from a pod that is gone (404,
// or 409 for a UID mismatch).
type Evictor func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error

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
	return Evictor(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
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
	return Evictor(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
		return client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	})
}

// evictionV1beta1 evicts through policy/v1beta1, for an API server that
// serves no policy/v1 Eviction (before Kubernetes 1.22), as kubectl drain
// does.
func evictionV1beta1(client kubernetes.Interface) Evictor {
	return Evictor(func(ctx context.Context, pod PlannedPod, opts metav1.DeleteOptions) error {
		return client.PolicyV1beta1().Evictions(pod.Namespace).Evict(ctx, &policyv1beta1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			DeleteOptions: &opts,
		})
	})
}

// evictionVersion is the version of the Eviction API the server serves
// for pods, or the zero GroupVersion when it serves none: kubectl's
// drain.CheckEvictionSupport (the same rule, over discovery of v1), with
// ctx.
func evictionVersion(ctx context.Context, client kubernetes.Interface) (schema.GroupVersion, error) {
	list, err := discovery.ToDiscoveryInterfaceWithContext(client.Discovery()).ServerResourcesForGroupVersionWithContext(ctx, "v1")
	if err != nil {
		return schema.GroupVersion{}, err
	}
	for _, r := range list.APIResources {
		if r.Name == drain.EvictionSubresource && r.Kind == drain.EvictionKind && r.Group != "" && r.Version != "" {
			return schema.GroupVersion{Group: r.Group, Version: r.Version}, nil
		}
	}
	return schema.GroupVersion{}, nil
}

// chooseEvictor settles how the drain removes pods, before anything
// changes: Options.Evictor; pod deletion with Helper.DisableEviction; else
// the Eviction API of the version the API server serves, or, as kubectl
// drain does, pod deletion when it serves none (budgets are then not
// consulted; the phases keep their order). A server that cannot say
// stops the drain here, with nothing changed. It sets up the kubectl
// callbacks with the answer.
func (ex *execution) chooseEvictor(ctx context.Context) error {
	s, client := ex.d.s, ex.d.client
	switch {
	case s.Evictor != nil:
		ex.evict, ex.usingEviction = s.Evictor, true
	case s.helper.DisableEviction:
		ex.evict, ex.usingEviction = PodDeletion(client), false
	default:
		var gv schema.GroupVersion
		err := ex.d.bounded(ctx, func(ctx context.Context) error {
			var err error
			gv, err = evictionVersion(ctx, client)
			return err
		})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return &PermissionError{Reason: ReasonForbidden, Err: err}
		case err != nil:
			return fmt.Errorf("asking the API server whether it serves pods/eviction (discovery of v1): %w", err)
		}
		switch gv {
		case policyv1.SchemeGroupVersion:
			ex.evict, ex.usingEviction = EvictionAPI(client), true
		case schema.GroupVersion{}:
			ex.log.Info("The API server serves no pods/eviction; deleting pods instead, as kubectl drain does (budgets are not consulted)")
			ex.evict, ex.usingEviction = PodDeletion(client), false
		default:
			ex.evict, ex.usingEviction = evictionV1beta1(client), true
		}
	}
	ex.callbacks = newKubectlCallbacks(&s.helper, ex.usingEviction)
	return nil
}
