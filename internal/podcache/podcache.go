// Package podcache is udrain's own compact pod cache: pods kept as
// immutable slim values whose shared parts (a template's shape, owners,
// label keys) are interned, and read back as *corev1.Pod.
package podcache

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unique"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/internal/intern"
)

// udrain's own pod cache (a Drainer without Options.Informers: the CLI's
// case) keeps a Pod per pod instead of a *corev1.Pod, whose struct
// alone is 1.2 kB before any of its strings, maps and slices: a fleet of
// 450,000 pods would hold gigabytes. A Pod keeps what udrain and
// kubectl drain's filters read of a pod, and shares what pods of one
// template in one state have in common:
//
//   - per pod: name, namespace, UID, node, labels and annotations (but the
//     last-applied configuration), deletion timestamp and grace period;
//     its affinity, interned apart (a DaemonSet's pods each name their node);
//   - per shape, stored once for all pods that have it: owner references;
//     the containers' and init containers' names and resource requests
//     (with the init containers' restart policy), the pod's overhead and
//     resources, its emptyDir volumes, readiness gates and scheduling
//     group; where it may run (node selector, tolerations,
//     topology spread constraints); the phase; the conditions' types and statuses (and the
//     scheduler's reason and message while it cannot place the pod); the
//     container statuses' names, readiness and waiting reasons.
//
// Strings that many pods repeat (namespaces, nodes, label keys and values)
// are interned with package unique, so a pod holds an 8-byte handle of
// each. Plans, health evaluations and callbacks read *corev1.Pod values
// materialized from slim pods (AsPod), holding exactly those fields; the
// pods, their maps and slices may be shared (a pod materialized while
// another reader holds one is that one) and must not be modified, as an
// informer's objects.
//
// Helper.AdditionalFilters and Options.Groupers may read any field of a
// pod, so with either the cache keeps whole pods (the transform's other).

// Pod is a pod as udrain's own cache holds it. It is immutable: an
// update of the pod replaces it. It is a metav1.Object so that client-go's
// stores key and index it; its setters do nothing.
type Pod struct {
	name      string
	uuid      [16]byte // the UID, when it is a canonical UUID (else in extra)
	namespace unique.Handle[string]
	node      unique.Handle[string]
	// keys are the label keys then the annotation keys, shared by the pods
	// of a template; values are their values, in that order.
	keys   *podKeys
	values []unique.Handle[string]
	// shape is a pod holding the shared part (see above) but the owners,
	// never modified; owners are shared by the pods of a controller.
	shape  *corev1.Pod
	owners *[]metav1.OwnerReference
	// affinity is the pod's, interned apart from its shape: a DaemonSet
	// names each pod's node in it, and with it in the shape every
	// DaemonSet pod would hold a shape of its own (TestDaemonSetPodsShareShapes).
	affinity *corev1.Affinity
	// extra is nil but for a pod being deleted or with a UID that is not a
	// canonical UUID.
	extra *podExtra
	// made is the pod last materialized from this one, held weakly: looks
	// at the cluster that overlap or follow each other before the garbage
	// collector runs (a rollout's admission, status and recoveries at a
	// domain's end) read the same *corev1.Pod instead of one each; the
	// slim pod keeps it no longer than a reader does.
	made atomic.Pointer[weak.Pointer[corev1.Pod]]
}

// podKeys are a pod's label keys, sorted, then its annotation keys,
// sorted.
type podKeys struct {
	keys   []string
	labels int // keys[:labels] are the label keys
}

// podExtra is what few pods have.
type podExtra struct {
	deletedAt *metav1.Time
	grace     *int64
	otherUID  bool // the UID is not a canonical UUID: it is uid
	uid       types.UID
}

// shapeTable interns pod shapes, owner references, label keys and
// affinities by content. An entry lives as long as a Pod holds it: the
// tables hold weak pointers and forget an entry once it is collected, so
// a long rollout does not accumulate the shapes of pods long gone.
type shapeTable struct {
	shapes     intern.Table[corev1.Pod]
	owners     intern.Table[[]metav1.OwnerReference]
	keys       intern.Table[podKeys]
	affinities intern.Table[corev1.Affinity]
}

func newShapes() *shapeTable { return &shapeTable{} }

// slim returns the Pod of p; p is not modified, and the Pod shares
// only strings and immutable parts with it.
func (t *shapeTable) slim(p *corev1.Pod) *Pod {
	sp := &Pod{
		name:      p.Name,
		namespace: unique.Make(p.Namespace),
		node:      unique.Make(p.Spec.NodeName),
	}
	if !parseUUID(string(p.UID), &sp.uuid) {
		sp.extra = &podExtra{otherUID: true, uid: p.UID}
	}
	if p.DeletionTimestamp != nil || p.DeletionGracePeriodSeconds != nil {
		if sp.extra == nil {
			sp.extra = &podExtra{}
		}
		sp.extra.deletedAt, sp.extra.grace = p.DeletionTimestamp, p.DeletionGracePeriodSeconds
	}
	sp.keys, sp.values = t.pairs(p)
	shape := shapeOf(p)
	if data, err := shape.Marshal(); err == nil { // it cannot fail for these fields; unshared is still correct
		shape = t.shapes.Intern(string(data), shape)
	}
	sp.shape = shape
	if a := p.Spec.Affinity; a != nil {
		sp.affinity = a
		if data, err := a.Marshal(); err == nil {
			sp.affinity = t.affinities.Intern(string(data), a)
		}
	}
	if len(p.OwnerReferences) > 0 {
		owners := p.OwnerReferences
		sp.owners = &owners
		if key, ok := ownersKey(owners); ok {
			sp.owners = t.owners.Intern(key, sp.owners)
		}
	}
	return sp
}

// pairs returns p's label and annotation keys (interned as a list) and
// values (each interned), without the last-applied configuration. A value
// that is the pod's name (a StatefulSet's statefulset.kubernetes.io/pod-name
// label) is stored as nameValue: interning it would cost a table entry per
// pod.
func (t *shapeTable) pairs(p *corev1.Pod) (*podKeys, []unique.Handle[string]) {
	n := len(p.Labels) + len(p.Annotations)
	if n == 0 {
		return nil, nil
	}
	keys := &podKeys{keys: make([]string, 0, n)}
	for k := range p.Labels {
		keys.keys = append(keys.keys, k)
	}
	slices.Sort(keys.keys)
	keys.labels = len(keys.keys)
	for k := range p.Annotations {
		if k != corev1.LastAppliedConfigAnnotation {
			keys.keys = append(keys.keys, k)
		}
	}
	slices.Sort(keys.keys[keys.labels:])
	self := unique.Make(nameValue)
	values := make([]unique.Handle[string], len(keys.keys))
	for i, k := range keys.keys {
		v := p.Labels[k]
		if i >= keys.labels {
			v = p.Annotations[k]
		}
		if v == p.Name {
			values[i] = self
		} else {
			values[i] = unique.Make(v)
		}
	}
	key := strconv.Itoa(keys.labels) + "\x00" + strings.Join(keys.keys, "\x00")
	return t.keys.Intern(key, keys), values
}

// ownersKey is the key of owner references by content.
func ownersKey(refs []metav1.OwnerReference) (string, bool) {
	var b []byte
	for i := range refs {
		data, err := refs[i].Marshal()
		if err != nil {
			return "", false
		}
		b = append(b, byte(len(data)), byte(len(data)>>8))
		b = append(b, data...)
	}
	return string(b), true
}

// shapeOf returns the part of p that slim pods share (see above).
func shapeOf(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{}
	s.Spec.SchedulingGroup = p.Spec.SchedulingGroup
	s.Spec.ReadinessGates = p.Spec.ReadinessGates
	s.Spec.Overhead = p.Spec.Overhead
	s.Spec.Resources = p.Spec.Resources
	// Where the pod may run: the rollout's destination plan and the
	// recovery of a resumed domain ask which nodes a group can go to.
	// A workload's pods share them, so they cost nothing per pod.
	s.Spec.NodeSelector = p.Spec.NodeSelector
	s.Spec.Tolerations = p.Spec.Tolerations
	s.Spec.TopologySpreadConstraints = p.Spec.TopologySpreadConstraints
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			s.Spec.Volumes = append(s.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: v.EmptyDir}})
		}
	}
	s.Spec.Containers = containerRequests(p.Spec.Containers)
	s.Spec.InitContainers = containerRequests(p.Spec.InitContainers)
	s.Status.Phase = p.Status.Phase
	if n := len(p.Status.Conditions); n > 0 {
		s.Status.Conditions = make([]corev1.PodCondition, n)
		for i, c := range p.Status.Conditions {
			s.Status.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: c.Status}
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				s.Status.Conditions[i].Reason, s.Status.Conditions[i].Message = c.Reason, c.Message
			}
		}
	}
	s.Status.ContainerStatuses = containerStates(p.Status.ContainerStatuses)
	s.Status.InitContainerStatuses = containerStates(p.Status.InitContainerStatuses)
	return s
}

// containerRequests keeps of each container its name, restart policy (an
// init container's says whether it is a sidecar) and resource requests.
func containerRequests(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
	}
	return out
}

// containerStates keeps of each container status its name, readiness and
// waiting reason.
func containerStates(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i] = corev1.ContainerStatus{Name: c.Name, Ready: c.Ready}
		if w := c.State.Waiting; w != nil {
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
		}
	}
	return out
}

// nameValue stands for the pod's name among a Pod's label and
// annotation values; no label value can be it (it has a NUL byte).
const nameValue = "\x00name"

// pairsMap is the map of keys[from:to] and their values, for the pod
// called name.
func pairsMap(name string, keys *podKeys, values []unique.Handle[string], from, to int) map[string]string {
	if to <= from {
		return nil
	}
	m := make(map[string]string, to-from)
	for i := from; i < to; i++ {
		v := values[i].Value()
		if v == nameValue {
			v = name
		}
		m[keys.keys[i]] = v
	}
	return m
}

// sharedMaps are the label and annotation maps of the pods materialized in
// one read (Pods, Memo), by their content: pods with the same labels and
// annotations (those of a template, mostly) get the same maps, read-only
// as every cached pod. Only the read holds them: the slim pods keep
// nothing more.
type sharedMaps struct {
	seed   maphash.Seed
	self   unique.Handle[string] // nameValue
	byHash map[uint64][]sharedPairs
}

type sharedPairs struct {
	keys                *podKeys
	values              []unique.Handle[string]
	labels, annotations map[string]string
}

func newSharedMaps() *sharedMaps {
	return &sharedMaps{seed: maphash.MakeSeed(), self: unique.Make(nameValue), byHash: map[uint64][]sharedPairs{}}
}

// maps returns the Pod's labels and annotations: with shared, those of a
// pod read before with the same ones, unless a value is the pod's name;
// else maps of its own.
func (sp *Pod) maps(shared *sharedMaps) (labels, annotations map[string]string) {
	if sp.keys == nil || shared == nil {
		return sp.labels(), sp.annotations()
	}
	h, ok := shared.hash(sp)
	if !ok {
		return sp.labels(), sp.annotations()
	}
	for _, e := range shared.byHash[h] {
		if e.keys == sp.keys && slices.Equal(e.values, sp.values) {
			return e.labels, e.annotations
		}
	}
	labels, annotations = sp.labels(), sp.annotations()
	shared.byHash[h] = append(shared.byHash[h], sharedPairs{keys: sp.keys, values: sp.values, labels: labels, annotations: annotations})
	return labels, annotations
}

// hash is the hash of sp's keys and values; ok is false when a value is
// the pod's name. The keys are interned and the values are handles: the
// same keys and values are the same pointers.
func (s *sharedMaps) hash(sp *Pod) (h uint64, ok bool) {
	h = maphash.Comparable(s.seed, sp.keys)
	for _, v := range sp.values {
		if v == s.self {
			return 0, false
		}
		h = (h ^ maphash.Comparable(s.seed, v)) * 1099511628211
	}
	return h, true
}

// labels and annotations are the Pod's, in maps of their own.
func (sp *Pod) labels() map[string]string {
	if sp.keys == nil {
		return nil
	}
	return pairsMap(sp.name, sp.keys, sp.values, 0, sp.keys.labels)
}

func (sp *Pod) annotations() map[string]string {
	if sp.keys == nil {
		return nil
	}
	return pairsMap(sp.name, sp.keys, sp.values, sp.keys.labels, len(sp.keys.keys))
}

// formatUUID is u in the canonical form.
func formatUUID(u *[16]byte) string {
	const digits = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b[i] = '-'
			i++
			continue
		}
		b[i], b[i+1] = digits[u[j]>>4], digits[u[j]&0xf]
		j++
		i += 2
	}
	return string(b[:])
}

// pod is the pod materialized: the one materialized before if a reader
// still holds it (or the garbage collector has not run since), else a new
// one (see build). Two readers that materialize it at once may each keep
// their own; either is the pod.
func (sp *Pod) pod(shared *sharedMaps) *corev1.Pod {
	made := sp.made.Load()
	if made != nil {
		if p := made.Value(); p != nil {
			return p
		}
	}
	p := sp.build(shared)
	w := weak.Make(p)
	if !sp.made.CompareAndSwap(made, &w) {
		if other := sp.made.Load(); other != nil {
			if q := other.Value(); q != nil {
				return q
			}
		}
	}
	return p
}

// build materializes the pod: a new *corev1.Pod whose slices are shared with
// every pod of its shape, and whose labels and annotations are in maps of
// its own, or, with shared, in those of a pod read before with the same
// ones (see maps).
func (sp *Pod) build(shared *sharedMaps) *corev1.Pod {
	p := new(corev1.Pod)
	*p = *sp.shape
	p.Name, p.Namespace, p.UID = sp.name, sp.namespace.Value(), sp.uid()
	p.Labels, p.Annotations = sp.maps(shared)
	if sp.extra != nil {
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = sp.extra.deletedAt, sp.extra.grace
	}
	if sp.owners != nil {
		p.OwnerReferences = *sp.owners
	}
	p.Spec.NodeName, p.Spec.SchedulingGroup = sp.node.Value(), sp.shape.Spec.SchedulingGroup
	p.Spec.Affinity = sp.affinity
	return p
}
