package clusterview

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain/internal/podcache"
)

// nodeShare keeps one copy of what the nodes of a fleet repeat: their
// capacity and allocatable (a pool's nodes are alike), their annotations
// and taints (udrain's marks and steering taint are the same over a
// domain), and the strings of their labels, conditions and system info.
// A node in udrain's own cache holds about 2 kB instead of 5 kB
// (TestNodeShareBytes); it is the same node, value for value.
type nodeShare struct {
	lists  sharing[corev1.ResourceList]
	pairs  sharing[map[string]string]
	taints sharing[[]corev1.Taint]
}

// maxShared bounds a sharing table: past it, the table starts afresh
// (the nodes keep what they hold). A fleet's nodes repeat a few values
// each (a pool's capacity, a domain's marks); taints stamped with their
// time and marks of past rollouts are new values, which the bound keeps
// from piling up in a long-lived view.
const maxShared = 1024

// sharing holds one value per key of its content. Maps and slices are
// shared by value (the node holds the map, not a pointer to it), so a
// weak table (package intern) would forget them at once: this one is
// strong, and bounded.
type sharing[T any] struct {
	mu     sync.Mutex
	values map[string]T
}

// share returns the value shared under key, or the one made by make
// (called only then), which it shares.
func (t *sharing[T]) share(key string, make func() T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if have, ok := t.values[key]; ok {
		return have
	}
	if t.values == nil || len(t.values) >= maxShared {
		t.values = map[string]T{}
	}
	v := make()
	t.values[key] = v
	return v
}

// newTransform is the transform of udrain's own informers: StripForCache,
// nodes sharing what they repeat, and pods in the slim cache when slim.
func newTransform(slim bool) cache.TransformFunc {
	share := &nodeShare{}
	strip := func(obj interface{}) (interface{}, error) {
		out, err := StripForCache(obj)
		if n, ok := out.(*corev1.Node); ok && err == nil {
			return share.node(n, n == obj), nil
		}
		return out, err
	}
	if slim {
		return podcache.NewTransform(strip)
	}
	return strip
}

// node returns n with its repeated parts shared; n itself is changed only
// when owned (a copy StripForCache made), else it is copied first.
func (s *nodeShare) node(n *corev1.Node, given bool) *corev1.Node {
	if given {
		c := *n
		n = &c
	}
	n.Labels = sharedKeys(n.Labels)
	n.Annotations = s.sharedPairs(n.Annotations)
	n.Spec.Taints = s.sharedTaints(n.Spec.Taints)
	st := &n.Status
	st.Capacity, st.Allocatable = s.sharedList(st.Capacity), s.sharedList(st.Allocatable)
	if len(st.Conditions) > 0 {
		conds := make([]corev1.NodeCondition, len(st.Conditions))
		for i, c := range st.Conditions {
			c.Type, c.Status = corev1.NodeConditionType(str(string(c.Type))), corev1.ConditionStatus(str(string(c.Status)))
			c.Reason, c.Message = str(c.Reason), str(c.Message)
			conds[i] = c
		}
		st.Conditions = conds
	}
	if len(st.Addresses) > 0 {
		addrs := slices.Clone(st.Addresses)
		for i := range addrs {
			addrs[i].Type = corev1.NodeAddressType(str(string(addrs[i].Type)))
		}
		st.Addresses = addrs
	}
	ni := &st.NodeInfo
	for _, f := range []*string{&ni.KernelVersion, &ni.OSImage, &ni.ContainerRuntimeVersion, &ni.KubeletVersion,
		&ni.KubeProxyVersion, &ni.OperatingSystem, &ni.Architecture} {
		*f = str(*f)
	}
	return n
}

// str is the one copy of v that package unique keeps.
func str(v string) string {
	if v == "" {
		return ""
	}
	return unique.Make(v).Value()
}

// sharedKeys is m with each key the one copy of it; its values (a
// node's name, its domain) are left as they are: a value that only one
// node has costs more in package unique's table than it saves.
func sharedKeys(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[str(k)] = v
	}
	return out
}

// sharedStrings is m with each key and value the one copy of it.
func sharedStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[str(k)] = str(v)
	}
	return out
}

// sharedPairs is the one map equal to m (annotations).
func (s *nodeShare) sharedPairs(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return s.pairs.share(b.String(), func() map[string]string { return sharedStrings(m) })
}

// sharedList is the one resource list equal to l.
func (s *nodeShare) sharedList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		b.WriteString(string(name))
		b.WriteByte(0)
		b.WriteString(q.String())
		b.WriteByte(0)
	}
	return s.lists.share(b.String(), func() corev1.ResourceList { return l })
}

// sharedTaints is the one list of taints equal to ts.
func (s *nodeShare) sharedTaints(ts []corev1.Taint) []corev1.Taint {
	if len(ts) == 0 {
		return ts
	}
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.ToString())
		if t.TimeAdded != nil {
			b.WriteString(t.TimeAdded.UTC().String())
		}
		b.WriteByte(0)
	}
	return s.taints.share(b.String(), func() []corev1.Taint { return ts })
}
