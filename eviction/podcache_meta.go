package eviction

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// The metav1.Object methods client-go's key and index functions read.
func (sp *slimPod) GetNamespace() string               { return sp.namespace.Value() }
func (sp *slimPod) GetName() string                    { return sp.name }
func (sp *slimPod) GetUID() types.UID                  { return sp.uid() }
func (sp *slimPod) GetLabels() map[string]string       { return sp.labels() }
func (sp *slimPod) GetAnnotations() map[string]string  { return sp.annotations() }
func (sp *slimPod) GetDeletionTimestamp() *metav1.Time { return asPod(sp).DeletionTimestamp }

func (sp *slimPod) GetDeletionGracePeriodSeconds() *int64 {
	return asPod(sp).DeletionGracePeriodSeconds
}

func (sp *slimPod) GetOwnerReferences() []metav1.OwnerReference { return asPod(sp).OwnerReferences }

// The rest of metav1.Object: a slimPod keeps none of it, and is never
// changed in place.
func (sp *slimPod) SetNamespace(string)                           {}
func (sp *slimPod) SetName(string)                                {}
func (sp *slimPod) GetGenerateName() string                       { return "" }
func (sp *slimPod) SetGenerateName(string)                        {}
func (sp *slimPod) SetUID(types.UID)                              {}
func (sp *slimPod) GetResourceVersion() string                    { return "" }
func (sp *slimPod) SetResourceVersion(string)                     {}
func (sp *slimPod) GetGeneration() int64                          { return 0 }
func (sp *slimPod) SetGeneration(int64)                           {}
func (sp *slimPod) GetSelfLink() string                           { return "" }
func (sp *slimPod) SetSelfLink(string)                            {}
func (sp *slimPod) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (sp *slimPod) SetCreationTimestamp(metav1.Time)              {}
func (sp *slimPod) SetDeletionTimestamp(*metav1.Time)             {}
func (sp *slimPod) SetDeletionGracePeriodSeconds(*int64)          {}
func (sp *slimPod) SetLabels(map[string]string)                   {}
func (sp *slimPod) SetAnnotations(map[string]string)              {}
func (sp *slimPod) GetFinalizers() []string                       { return nil }
func (sp *slimPod) SetFinalizers([]string)                        {}
func (sp *slimPod) SetOwnerReferences([]metav1.OwnerReference)    {}
func (sp *slimPod) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (sp *slimPod) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// slimLabels are a slimPod's labels as a labels.Labels, for selectors to
// match without materializing the pod.
type slimLabels struct{ sp *slimPod }

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

// labelsOf returns a cached pod's labels without materializing it.
func labelsOf(obj interface{}) labels.Labels {
	switch o := obj.(type) {
	case *corev1.Pod:
		return labels.Set(o.Labels)
	case *slimPod:
		return slimLabels{o}
	}
	return labels.Set(nil)
}

// uid returns the pod's UID.
func (sp *slimPod) uid() types.UID {
	if sp.extra != nil && sp.extra.otherUID {
		return sp.extra.uid
	}
	return types.UID(formatUUID(&sp.uuid))
}

// hasUID reports whether the pod has uid, without formatting its own.
func (sp *slimPod) hasUID(uid types.UID) bool {
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

var _ metav1.Object = (*slimPod)(nil)
