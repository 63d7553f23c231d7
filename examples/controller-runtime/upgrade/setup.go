package upgrade

import (
	"context"

	"github.com/udrain/udrain/clusterinformers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ControllerName names the controller, its Events' reporting controller
// and its log lines.
const ControllerName = "udrain-upgrade"

// CacheOptions are the manager's cache settings this controller needs:
// the cache holds the ConfigMaps that are upgrade requests, not every
// ConfigMap of the cluster. (Nodes, pods, PodDisruptionBudgets and
// DaemonSets are cached whole: udrain reads them through the cache.)
func CacheOptions() cache.Options {
	has, err := labels.NewRequirement(RequestLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(*has)},
	}}
}

// SetupWithManager builds the Reconciler over the manager: udrain reads
// the cluster through the manager's cache (clusterinformers.FromCache,
// no list or watch of its own), evicts and patches nodes with a clientset
// of the manager's config, records events.k8s.io Events as
// ControllerName; and registers the controller of upgrade requests. Build
// the manager with CacheOptions.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	kube, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	informers, err := clusterinformers.FromCache(ctx, mgr.GetCache())
	if err != nil {
		return nil, err
	}
	r, err := NewReconciler(mgr.GetClient(), kube, informers, mgr.GetEventRecorder(ControllerName), opts)
	if err != nil {
		return nil, err
	}
	isRequest := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[RequestLabel]
		return ok
	})
	// The controller's own status writes do not ask for a reconcile.
	changed := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.ConfigMap)
		cur, ok2 := e.ObjectNew.(*corev1.ConfigMap)
		return !ok1 || !ok2 || requestChanged(old, cur)
	}}
	err = ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.ConfigMap{}, builder.WithPredicates(isRequest, changed)).
		Complete(r)
	return r, err
}
