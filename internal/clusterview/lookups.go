package clusterview

import (
	"context"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/internal/podcache"
)

// anyPodGroupMember reports whether a pod in scope names a native
// PodGroup (spec.schedulingGroup.podGroupName).
func (v *View) anyPodGroupMember() bool {
	for _, obj := range v.pods.List() {
		if podcache.GroupNameOf(obj) != "" && v.inScope(podcache.NamespaceOf(obj)) {
			return true
		}
	}
	return false
}

// PodGroups returns native PodGroups: from the caller's informer, or
// listed once per View by a View with its own informers; clusters that do
// not serve scheduling.k8s.io/v1beta1 (the GenericWorkload gate is off)
// have none, and neither has a View of Config.CustomGroupers.
func (v *View) PodGroups(ctx context.Context) ([]schedulingv1beta1.PodGroup, error) {
	if v.cfg.CustomGroupers {
		return nil, nil
	}
	if v.pgStore != nil {
		var out []schedulingv1beta1.PodGroup
		for _, o := range v.pgStore.List() {
			if pg := o.(*schedulingv1beta1.PodGroup); v.inScope(pg.Namespace) {
				out = append(out, *pg)
			}
		}
		return out, nil
	}
	if !v.ownLister {
		return nil, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.podGroupsOK {
		return v.podGroups, nil
	}
	// PodGroups only name the groups of pods that reference one: without
	// such a pod (yet), the list is not worth a request.
	if !v.anyPodGroupMember() {
		if !v.noMembersLogged {
			v.noMembersLogged = true
			klog.FromContext(ctx).V(2).Info("No native PodGroups", "reason", "no pod in scope names one (spec.schedulingGroup.podGroupName); grouping by labels")
		}
		return nil, nil
	}
	list, err := v.cfg.Client.SchedulingV1beta1().PodGroups(v.cfg.Namespace).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		v.podGroups = list.Items
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		klog.FromContext(ctx).V(2).Info("No native PodGroups", "reason", err.Error())
	default:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		klog.FromContext(ctx).Info("Listing PodGroups failed; grouping by labels only", "err", err)
	}
	v.podGroupsOK = true
	return v.podGroups, nil
}

// HasDaemonSets reports whether the View reads DaemonSets from an informer
// of the caller's.
func (v *View) HasDaemonSets() bool { return v.dsStore != nil }

// DaemonSetObjects returns the cached DaemonSets (*appsv1.DaemonSet) of
// the caller's informer, nil without one.
func (v *View) DaemonSetObjects() []interface{} {
	if v.dsStore == nil {
		return nil
	}
	return v.dsStore.List()
}

// HasDaemonSet reports whether the caller's DaemonSet informer holds the
// DaemonSet namespace/name (false without one).
func (v *View) HasDaemonSet(namespace, name string) bool {
	if v.dsStore == nil {
		return false
	}
	_, ok, _ := v.dsStore.GetByKey(namespace + "/" + name)
	return ok
}

// GetDaemonSet GETs the DaemonSet namespace/name the first time it is
// asked, and remembers the answer (nil, NotFound or another error) for
// the rest of the View; an error because ctx ended is ctx's, and is not
// remembered.
func (v *View) GetDaemonSet(ctx context.Context, namespace, name string) error {
	key := namespace + "/" + name
	v.mu.Lock()
	err, done := v.daemonSets[key]
	v.mu.Unlock()
	if done {
		return err
	}
	_, err = v.cfg.Client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // not remembered: it says nothing of the DaemonSet
	}
	v.mu.Lock()
	v.daemonSets[key] = err
	v.mu.Unlock()
	return err
}
