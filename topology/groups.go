package topology

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// Labels and annotations of the LeaderWorkerSet API
// (leaderworkerset.x-k8s.io). udrain reads them from pods, so a workload
// that carries them is grouped the same way with or without the LWS
// controller installed.
const (
	LWSNameLabel        = "leaderworkerset.sigs.k8s.io/name"
	LWSGroupIndexLabel  = "leaderworkerset.sigs.k8s.io/group-index"
	LWSWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	LWSSizeAnnotation   = "leaderworkerset.sigs.k8s.io/size"
)

// Kind says where a group's identity comes from.
type Kind string

// The kinds of groups udrain recognises.
const (
	KindLeaderWorkerSet Kind = "LeaderWorkerSet"
	KindRay             Kind = "Ray"
	KindLabel           Kind = "Label"
	KindPodGroup        Kind = "PodGroup"
)

// Membership is what a Grouper says about one pod.
type Membership struct {
	// Kind is where the identity comes from.
	Kind Kind
	// Workload names the set of groups that should spread over domains (an
	// LWS, a Ray cluster, a Workload object). Empty means the group is its
	// own workload.
	Workload string
	// Group names the group; unique within a namespace and kind.
	Group string
	// Leader marks the pod whose readiness stands for the group.
	Leader bool
	// Size is the expected number of members; 0 when unknown.
	Size int
	// DisruptAll marks a gang that may only be disrupted as a whole (a
	// PodGroup whose disruptionMode is all).
	DisruptAll bool
}

// A Grouper tells which group a pod belongs to, or false when the pod belongs
// to none it knows. Groupers are plain functions so that a caller can add its
// own convention next to the built-in ones.
type Grouper func(pod *corev1.Pod) (Membership, bool)

// DefaultGroupers returns the groupers used when a caller names none:
// LeaderWorkerSet, then Ray.
func DefaultGroupers() []Grouper {
	return []Grouper{LeaderWorkerSet(), Ray()}
}

// Groupers returns the groupers udrain uses when a caller names none:
// DefaultGroupers, then the native PodGroups (ByPodGroup) of podGroups,
// which may be empty on clusters that do not serve them.
func Groupers(podGroups []schedulingv1beta1.PodGroup) []Grouper {
	return append(DefaultGroupers(), ByPodGroup(podGroups))
}

// LeaderWorkerSet groups pods by the LeaderWorkerSet labels: one group per
// (LWS name, group index), named "<lws>-<group-index>" like its leader pod;
// the leader has worker index "0"; the size comes from the size annotation.
func LeaderWorkerSet() Grouper {
	return func(pod *corev1.Pod) (Membership, bool) {
		name, ok := pod.Labels[LWSNameLabel]
		if !ok || name == "" {
			return Membership{}, false
		}
		idx, ok := pod.Labels[LWSGroupIndexLabel]
		if !ok || idx == "" {
			return Membership{}, false
		}
		size, _ := strconv.Atoi(pod.Annotations[LWSSizeAnnotation])
		if size < 0 {
			size = 0
		}
		return Membership{
			Kind:     KindLeaderWorkerSet,
			Workload: name,
			Group:    name + "-" + idx,
			Leader:   pod.Labels[LWSWorkerIndexLabel] == "0",
			Size:     size,
		}, true
	}
}

// LabelGrouping describes a caller's own grouping convention.
type LabelGrouping struct {
	// GroupLabel is the pod label whose value names the group. Required.
	GroupLabel string
	// WorkloadLabel, if set, is the pod label whose value names the
	// workload the group belongs to.
	WorkloadLabel string
	// LeaderLabel and LeaderValue mark the leader: a pod whose LeaderLabel
	// has the value LeaderValue (any value when LeaderValue is empty).
	LeaderLabel string
	LeaderValue string
	// SizeAnnotation, if set, is the pod annotation holding the group size.
	SizeAnnotation string
}

// ByLabel groups pods by the caller's label convention.
func ByLabel(g LabelGrouping) Grouper {
	return func(pod *corev1.Pod) (Membership, bool) {
		if g.GroupLabel == "" {
			return Membership{}, false
		}
		group, ok := pod.Labels[g.GroupLabel]
		if !ok || group == "" {
			return Membership{}, false
		}
		m := Membership{Kind: KindLabel, Group: group, Workload: group}
		if g.WorkloadLabel != "" && pod.Labels[g.WorkloadLabel] != "" {
			m.Workload = pod.Labels[g.WorkloadLabel]
		}
		if g.LeaderLabel != "" {
			v, ok := pod.Labels[g.LeaderLabel]
			m.Leader = ok && (g.LeaderValue == "" || v == g.LeaderValue)
		}
		if g.SizeAnnotation != "" {
			if n, err := strconv.Atoi(pod.Annotations[g.SizeAnnotation]); err == nil && n > 0 {
				m.Size = n
			}
		}
		return m, true
	}
}

// ByPodGroup groups pods by the native Kubernetes group API (1.37, beta
// behind the GenericWorkload feature gate): a pod's
// spec.schedulingGroup.podGroupName names a scheduling.k8s.io/v1beta1
// PodGroup in its namespace. The PodGroups, when given, supply the workload
// (spec.workloadRef), the expected size (the gang's minCount) and whether
// the gang may only be disrupted as a whole (spec.disruptionMode.all).
// Native groups name no leader.
func ByPodGroup(podGroups []schedulingv1beta1.PodGroup) Grouper {
	byKey := make(map[string]*schedulingv1beta1.PodGroup, len(podGroups))
	for i := range podGroups {
		pg := &podGroups[i]
		byKey[pg.Namespace+"/"+pg.Name] = pg
	}
	return func(pod *corev1.Pod) (Membership, bool) {
		sg := pod.Spec.SchedulingGroup
		if sg == nil || sg.PodGroupName == nil || *sg.PodGroupName == "" {
			return Membership{}, false
		}
		name := *sg.PodGroupName
		m := Membership{Kind: KindPodGroup, Group: name, Workload: name}
		if pg := byKey[pod.Namespace+"/"+name]; pg != nil {
			if ref := pg.Spec.WorkloadRef; ref != nil && ref.WorkloadName != "" {
				m.Workload = ref.WorkloadName + "/" + ref.TemplateName
			}
			if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinCount > 0 {
				m.Size = int(gang.MinCount)
			}
			if dm := pg.Spec.DisruptionMode; dm != nil && dm.All != nil {
				m.DisruptAll = true
			}
		}
		return m, true
	}
}

// GroupID identifies a group.
type GroupID struct {
	Kind      Kind   `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String returns "namespace/name".
func (id GroupID) String() string { return id.Namespace + "/" + id.Name }

// Group is a set of pods that live or die together.
type Group struct {
	ID GroupID
	// Workload names the set of groups that should spread over domains.
	Workload string
	// Leader is the pod whose readiness stands for the group; nil when the
	// group names no leader or the leader pod does not exist right now.
	Leader *corev1.Pod
	// Members are the group's pods, leader included, sorted by name.
	Members []*corev1.Pod
	// Size is the expected number of members; 0 when unknown.
	Size int
	// DisruptAll marks a gang that may only be disrupted as a whole.
	DisruptAll bool
}

// ExpectedSize is the number of members the group should have: Size when
// known, else the number of members seen.
func (g *Group) ExpectedSize() int {
	if g.Size > 0 {
		return g.Size
	}
	return len(g.Members)
}

// MemberNames returns the names of the members, in the order of Members.
func (g *Group) MemberNames() []string {
	names := make([]string, len(g.Members))
	for i, p := range g.Members {
		names[i] = p.Name
	}
	return names
}

// FindGroups sorts pods into groups. Each pod goes to the first grouper that
// claims it; pods no grouper claims belong to no group. The groups hold the
// pointers given, so pods (from an informer cache, or PodPointers over a
// list) must not change while the groups are in use. With no groupers,
// DefaultGroupers are used. Groups are ordered by namespace, then name in
// natural order.
func FindGroups(pods []*corev1.Pod, groupers ...Grouper) []Group {
	if len(groupers) == 0 {
		groupers = DefaultGroupers()
	}
	var groups []Group
	index := map[GroupID]int{}
	for _, pod := range pods {
		for _, grouper := range groupers {
			m, ok := grouper(pod)
			if !ok {
				continue
			}
			id := GroupID{Kind: m.Kind, Namespace: pod.Namespace, Name: m.Group}
			gi, seen := index[id]
			if !seen {
				gi = len(groups)
				index[id] = gi
				groups = append(groups, Group{ID: id, Workload: m.Workload})
			}
			g := &groups[gi]
			g.Members = append(g.Members, pod)
			if m.Leader && (g.Leader == nil || pod.Name < g.Leader.Name) {
				g.Leader = pod
			}
			if m.Size > g.Size {
				g.Size = m.Size
			}
			g.DisruptAll = g.DisruptAll || m.DisruptAll
			break
		}
	}
	for i := range groups {
		m := groups[i].Members
		sort.Slice(m, func(a, b int) bool { return NaturalLess(m[a].Name, m[b].Name) })
	}
	sort.Slice(groups, func(a, b int) bool { return CompareGroupIDs(groups[a].ID, groups[b].ID) < 0 })
	return groups
}

// CompareGroupIDs orders groups as FindGroups does: by namespace, then
// name in natural order (llm-2 before llm-10), then kind. It returns -1,
// 0 or +1, for slices.SortFunc.
func CompareGroupIDs(a, b GroupID) int {
	switch {
	case a.Namespace != b.Namespace:
		return strings.Compare(a.Namespace, b.Namespace)
	case NaturalLess(a.Name, b.Name):
		return -1
	case NaturalLess(b.Name, a.Name):
		return 1
	}
	return strings.Compare(string(a.Kind), string(b.Kind))
}

// PodPointers returns pointers to the items of a pod list, the form
// FindGroups and Audit take.
func PodPointers(items []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// GroupIndex maps pods to their group.
type GroupIndex struct {
	groups []Group
	byPod  map[podKey]int
}

type podKey struct{ namespace, name string }

// NewGroupIndex indexes groups by their members.
func NewGroupIndex(groups []Group) *GroupIndex {
	gi := &GroupIndex{groups: groups, byPod: map[podKey]int{}}
	for i := range groups {
		for _, p := range groups[i].Members {
			gi.byPod[podKey{p.Namespace, p.Name}] = i
		}
	}
	return gi
}

// GroupOf returns the group of the pod with the given namespace and name.
func (gi *GroupIndex) GroupOf(namespace, name string) (*Group, bool) {
	i, ok := gi.byPod[podKey{namespace, name}]
	if !ok {
		return nil, false
	}
	return &gi.groups[i], true
}

// Groups returns the indexed groups.
func (gi *GroupIndex) Groups() []Group { return gi.groups }
