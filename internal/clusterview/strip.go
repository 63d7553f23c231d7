package clusterview

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StripForCache drops what udrain never reads and what weighs most in a
// large cluster's pod cache. It changes a shallow copy, never the object it
// is given: a watch may share that object with others (the fake clientset's
// watch hands out its own stored objects, a data race for anyone testing
// with it and the race detector).
func StripForCache(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if needsStrip(&o.ObjectMeta) {
			c := *o
			stripMeta(&c.ObjectMeta)
			return &c, nil
		}
	case *corev1.Node:
		// A node's images (up to 50 on a real node, often its largest
		// field) and volumes are read by nothing in udrain.
		st := &o.Status
		if needsStrip(&o.ObjectMeta) || len(st.Images) > 0 || len(st.VolumesInUse) > 0 || len(st.VolumesAttached) > 0 {
			c := *o
			stripMeta(&c.ObjectMeta)
			c.Status.Images, c.Status.VolumesInUse, c.Status.VolumesAttached = nil, nil, nil
			return &c, nil
		}
	case *policyv1.PodDisruptionBudget:
		if needsStrip(&o.ObjectMeta) {
			c := *o
			stripMeta(&c.ObjectMeta)
			return &c, nil
		}
	}
	return obj, nil
}

func needsStrip(m *metav1.ObjectMeta) bool {
	_, applied := m.Annotations[corev1.LastAppliedConfigAnnotation]
	return len(m.ManagedFields) > 0 || applied
}

func stripMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	if _, ok := m.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		m.Annotations = maps.Clone(m.Annotations)
		delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
	}
}
