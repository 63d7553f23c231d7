package podcache

// Reading cached pods: as *corev1.Pod (AsPod, Memo), field by field
// without materializing them (HasUID, NamespaceOf, LabelsOf, ...), and the
// metav1.Object methods client-go's stores key and index them by.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// AsPod returns the pod a store object is: a cached *corev1.Pod as it is,
// a Pod materialized. It returns nil for anything else.
func AsPod(obj interface{}) *corev1.Pod {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o
	case *Pod:
		return o.pod(nil)
	}
	return nil
}

// Pods is AsPod of each; the pods it materializes with the same labels and
// annotations share their maps (read-only, as every cached pod).
func Pods(objs []interface{}) []*corev1.Pod {
	return NewRead().Pods(objs)
}

// Memo keeps pods materialized from slim pods from one evaluation of a
// recovery wait to the next: a Pod is immutable, so its pod is the
// same until an update replaces it. Only the pods read by the last
// evaluation are kept. Within an evaluation, the pods it materializes
// with the same labels and annotations share their maps. A nil *Memo
// materializes every time.
type Memo struct {
	last, next map[*Pod]*corev1.Pod
	maps       *sharedMaps
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{last: map[*Pod]*corev1.Pod{}, next: map[*Pod]*corev1.Pod{}, maps: newSharedMaps()}
}

// NewRead returns a Memo for one read that keeps no pod: the pods it
// materializes share only their maps (see Memo).
func NewRead() *Memo {
	return &Memo{maps: newSharedMaps()}
}

// Pod is AsPod through the memo.
func (m *Memo) Pod(obj interface{}) *corev1.Pod {
	sp, ok := obj.(*Pod)
	if !ok || m == nil {
		return AsPod(obj)
	}
	if m.next == nil {
		return sp.pod(m.maps)
	}
	p, ok := m.next[sp]
	if !ok {
		if p, ok = m.last[sp]; !ok {
			p = sp.pod(m.maps)
		}
		m.next[sp] = p
	}
	return p
}

// Pods is AsPod of each, through the memo.
func (m *Memo) Pods(objs []interface{}) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		pods[i] = m.Pod(o)
	}
	return pods
}

// Turn starts the next evaluation: it keeps what the last one read.
func (m *Memo) Turn() {
	if m.next != nil {
		m.last, m.next = m.next, make(map[*Pod]*corev1.Pod, len(m.next))
	}
	m.maps = newSharedMaps()
}

// HasUID reports whether a cached pod has uid, without materializing it.
func HasUID(obj interface{}, uid types.UID) bool {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.UID == uid
	case *Pod:
		return o.hasUID(uid)
	}
	return false
}

// NamespaceOf returns the namespace of a cached pod without materializing
// it.
func NamespaceOf(obj interface{}) string {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.Namespace
	case *Pod:
		return o.namespace.Value()
	}
	return ""
}

// GroupNameOf returns the native PodGroup a cached pod names, if any.
func GroupNameOf(obj interface{}) string {
	var sg *corev1.PodSchedulingGroup
	switch o := obj.(type) {
	case *corev1.Pod:
		sg = o.Spec.SchedulingGroup
	case *Pod:
		sg = o.shape.Spec.SchedulingGroup
	}
	if sg == nil || sg.PodGroupName == nil {
		return ""
	}
	return *sg.PodGroupName
}

// NewTransform returns the transform of informers that keep a slim pod
// cache: pods become *Pod values, sharing what pods of one template have in
// common with every pod this transform made; other objects go through
// other. A *Pod given again is returned as it is.
func NewTransform(other func(interface{}) (interface{}, error)) func(interface{}) (interface{}, error) {
	shapes := newShapes()
	return func(obj interface{}) (interface{}, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return shapes.slim(p), nil
		}
		return other(obj)
	}
}

// The metav1.Object methods client-go's key and index functions read.
func (sp *Pod) GetNamespace() string               { return sp.namespace.Value() }
func (sp *Pod) GetName() string                    { return sp.name }
func (sp *Pod) GetUID() types.UID                  { return sp.uid() }
func (sp *Pod) GetLabels() map[string]string       { return sp.labels() }
func (sp *Pod) GetAnnotations() map[string]string  { return sp.annotations() }
func (sp *Pod) GetDeletionTimestamp() *metav1.Time { return AsPod(sp).DeletionTimestamp }

func (sp *Pod) GetDeletionGracePeriodSeconds() *int64 {
	return AsPod(sp).DeletionGracePeriodSeconds
}

func (sp *Pod) GetOwnerReferences() []metav1.OwnerReference { return AsPod(sp).OwnerReferences }

// The rest of metav1.Object: a Pod keeps none of it, and is never
// changed in place.
func (sp *Pod) SetNamespace(string)                           {}
func (sp *Pod) SetName(string)                                {}
func (sp *Pod) GetGenerateName() string                       { return "" }
func (sp *Pod) SetGenerateName(string)                        {}
func (sp *Pod) SetUID(types.UID)                              {}
func (sp *Pod) GetResourceVersion() string                    { return "" }
func (sp *Pod) SetResourceVersion(string)                     {}
func (sp *Pod) GetGeneration() int64                          { return 0 }
func (sp *Pod) SetGeneration(int64)                           {}
func (sp *Pod) GetSelfLink() string                           { return "" }
func (sp *Pod) SetSelfLink(string)                            {}
func (sp *Pod) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (sp *Pod) SetCreationTimestamp(metav1.Time)              {}
func (sp *Pod) SetDeletionTimestamp(*metav1.Time)             {}
func (sp *Pod) SetDeletionGracePeriodSeconds(*int64)          {}
func (sp *Pod) SetLabels(map[string]string)                   {}
func (sp *Pod) SetAnnotations(map[string]string)              {}
func (sp *Pod) GetFinalizers() []string                       { return nil }
func (sp *Pod) SetFinalizers([]string)                        {}
func (sp *Pod) SetOwnerReferences([]metav1.OwnerReference)    {}
func (sp *Pod) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (sp *Pod) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// slimLabels are a Pod's labels as a labels.Labels, for selectors to
// match without materializing the pod.
type slimLabels struct{ sp *Pod }

func (l slimLabels) Lookup(key string) (string, bool) {
	k := l.sp.keys
	if k == nil {
		return "", false
	}
	if i, ok := slices.BinarySearch(k.keys[:k.labels], key); ok {
		v := l.sp.values[i].Value()
		if v == nameValue {
			v = l.sp.name
		}
		return v, true
	}
	return "", false
}

func (l slimLabels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

func (l slimLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// LabelsOf returns a cached pod's labels without materializing it.
func LabelsOf(obj interface{}) labels.Labels {
	switch o := obj.(type) {
	case *corev1.Pod:
		return labels.Set(o.Labels)
	case *Pod:
		return slimLabels{o}
	}
	return labels.Set(nil)
}

// uid returns the pod's UID.
func (sp *Pod) uid() types.UID {
	if sp.extra != nil && sp.extra.otherUID {
		return sp.extra.uid
	}
	return types.UID(formatUUID(&sp.uuid))
}

// hasUID reports whether the pod has uid, without formatting its own.
func (sp *Pod) hasUID(uid types.UID) bool {
	if sp.extra != nil && sp.extra.otherUID {
		return sp.extra.uid == uid
	}
	var u [16]byte
	return parseUUID(string(uid), &u) && u == sp.uuid
}

// parseUUID parses a UUID in its canonical form (lower-case hex, 8-4-4-4-12)
// into u; false for anything else, so that formatUUID gives back s.
func parseUUID(s string, u *[16]byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := hexDigit(s[i])
		lo, ok2 := hexDigit(s[i+1])
		if !ok1 || !ok2 {
			return false
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

var _ metav1.Object = (*Pod)(nil)

// IndexFields sets on p what the index functions of udrain's pod caches
// read of a pod: its name, namespace, labels, annotations, node and
// scheduling group, without materializing the rest. p's other fields are
// left as they are.
func (sp *Pod) IndexFields(p *corev1.Pod) {
	p.Name, p.Namespace, p.Labels, p.Annotations = sp.name, sp.namespace.Value(), sp.labels(), sp.annotations()
	p.Spec.NodeName, p.Spec.SchedulingGroup = sp.node.Value(), sp.shape.Spec.SchedulingGroup
}
