package evictiontest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/health"
)

var (
	podsResource = corev1.SchemeGroupVersion.WithResource("pods")
	pdbsResource = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	pdbKind      = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
)

// evict answers an eviction (policy/v1 or v1beta1) as the API server's
// eviction subresource does.
func (s *server) evict(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	create, ok := action.(k8stesting.CreateAction)
	if !ok {
		return false, nil, nil
	}
	var name string
	var opts *metav1.DeleteOptions
	switch e := create.GetObject().(type) {
	case *policyv1.Eviction:
		name, opts = e.Name, e.DeleteOptions
	case *policyv1beta1.Eviction:
		name, opts = e.Name, e.DeleteOptions
	default:
		return true, nil, apierrors.NewBadRequest(fmt.Sprintf("not an Eviction: %T", create.GetObject()))
	}
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	dryRun := len(opts.DryRun) > 0
	if impl, ok := action.(k8stesting.CreateActionImpl); ok && len(impl.CreateOptions.DryRun) > 0 {
		dryRun = true
	}
	obj, err := s.tracker.Get(podsResource, action.GetNamespace(), name)
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*corev1.Pod)
	if err := preconditionsMet(podsResource.GroupResource(), pod, opts.Preconditions); err != nil {
		return true, nil, err
	}
	if !canIgnoreBudget(pod) {
		if err := s.spendBudget(pod, dryRun); err != nil {
			return true, nil, err
		}
	}
	if !dryRun {
		if err := s.remove(pod); err != nil {
			return true, nil, err
		}
	}
	return true, &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// canIgnoreBudget: a pod that terminated, is Pending or is being deleted
// is evicted without asking its budget (it disrupts nothing more).
func canIgnoreBudget(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// spendBudget checks the budget over pod and spends one disruption of
// it, unless dryRun.
func (s *server) spendBudget(pod *corev1.Pod, dryRun bool) error {
	budgets, err := s.budgetsOf(pod)
	if err != nil {
		return err
	}
	switch len(budgets) {
	case 0:
		return nil
	case 1:
	default:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
	}
	b := budgets[0]
	// A pod the budget does not count healthy (package health's rule, the
	// disruption controller's) spends nothing while the budget has its
	// healthy pods.
	if !health.CountsForBudget(pod) && b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0 {
		return nil
	}
	switch {
	case b.Status.ObservedGeneration < b.Generation:
		return tooManyRequests(fmt.Sprintf("The disruption budget %s is still being processed by the server.", b.Name))
	case b.Status.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), b.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	case b.Status.DisruptionsAllowed == 0:
		return tooManyRequests(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy))
	}
	if dryRun {
		return nil
	}
	b.Status.DisruptionsAllowed--
	if b.Status.DisruptedPods == nil {
		b.Status.DisruptedPods = map[string]metav1.Time{}
	}
	b.Status.DisruptedPods[pod.Name] = metav1.NewTime(time.Now())
	return s.tracker.Update(pdbsResource, b, b.Namespace)
}

// budgetsOf returns copies of the budgets whose selector selects pod; a
// budget with an empty or invalid selector selects nothing.
func (s *server) budgetsOf(pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	list, err := s.tracker.List(pdbsResource, pdbKind, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, b := range list.(*policyv1.PodDisruptionBudgetList).Items {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, b.DeepCopy())
	}
	return out, nil
}

func tooManyRequests(cause string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// remove deletes pod and tells Options.OnEvicted.
func (s *server) remove(pod *corev1.Pod) error {
	if err := s.tracker.Delete(podsResource, pod.Namespace, pod.Name); err != nil {
		return err
	}
	if s.opts.OnEvicted != nil {
		return s.opts.OnEvicted(s.tracker, pod.DeepCopy())
	}
	return nil
}

// delete answers a delete with preconditions or a dry run, and any delete
// of a pod (for Options.OnEvicted); others fall through to the tracker.
func (s *server) delete(action k8stesting.Action) (bool, runtime.Object, error) {
	del, ok := action.(k8stesting.DeleteAction)
	if !ok {
		return false, nil, nil
	}
	opts := del.GetDeleteOptions()
	isPod := action.GetResource() == podsResource && action.GetSubresource() == ""
	if !isPod && opts.Preconditions == nil && len(opts.DryRun) == 0 {
		return false, nil, nil
	}
	obj, err := s.tracker.Get(action.GetResource(), action.GetNamespace(), del.GetName())
	if err != nil {
		return true, nil, err
	}
	if err := preconditionsMet(action.GetResource().GroupResource(), obj, opts.Preconditions); err != nil {
		return true, nil, err
	}
	switch {
	case len(opts.DryRun) > 0:
		return true, nil, nil
	case isPod:
		return true, nil, s.remove(obj.(*corev1.Pod))
	}
	return true, nil, s.tracker.Delete(action.GetResource(), action.GetNamespace(), del.GetName())
}

// preconditionsMet checks a request's UID and resourceVersion
// preconditions against obj, as the API server's store does.
func preconditionsMet(resource schema.GroupResource, obj runtime.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(resource, m.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(resource, m.GetName(), fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// dryRun answers a create, update or patch with dryRun=All: the result of
// the request, worked out on a copy of the object in a tracker of its
// own, and nothing stored.
func (s *server) dryRun(action k8stesting.Action) (bool, runtime.Object, error) {
	var dry []string
	var name string
	switch a := action.(type) {
	case k8stesting.PatchActionImpl:
		dry, name = a.PatchOptions.DryRun, a.Name
	case k8stesting.UpdateActionImpl:
		dry = a.UpdateOptions.DryRun
		if m, err := meta.Accessor(a.Object); err == nil {
			name = m.GetName()
		}
	case k8stesting.CreateActionImpl:
		if len(a.CreateOptions.DryRun) == 0 || a.Subresource != "" {
			return false, nil, nil
		}
		if m, err := meta.Accessor(a.Object); err == nil {
			if _, err := s.tracker.Get(a.Resource, a.Namespace, m.GetName()); err == nil {
				return true, nil, apierrors.NewAlreadyExists(a.Resource.GroupResource(), m.GetName())
			}
		}
		return true, a.Object, nil
	}
	if len(dry) == 0 {
		return false, nil, nil
	}
	cur, err := s.tracker.Get(action.GetResource(), action.GetNamespace(), name)
	if err != nil {
		return true, nil, err
	}
	scratch := k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())
	if err := scratch.Add(cur.DeepCopyObject()); err != nil {
		return true, nil, err
	}
	return k8stesting.ObjectReaction(scratch)(action)
}
