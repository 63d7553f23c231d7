package clusterview

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// PodIndexName names the pod index udrain adds to the pod informers it
// starts, and to clusterinformers.FromFactory's, so that a recovery evaluation
// reads the pods of the groups and budgets it judges instead of whole
// namespaces. A pod is indexed under its group (groupIndexKey, the first
// of the default groupers that claims it, as topology.FindGroups sorts
// it) and under its values of the labels that name a workload
// (labelIndexKey, for the budgets that select by them), and under its node
// (nodeIndexKey, for a plan's pods of one domain).
const PodIndexName = "udrain.dev/group-and-workload-label"

// indexedLabel reports whether pods are indexed by their value of label
// key: the labels that name a LeaderWorkerSet or a Ray cluster, which the
// budgets over a workload's pods select.
func indexedLabel(key string) bool {
	return key == topology.LWSNameLabel || key == topology.RayClusterLabel
}

// groupIndexKey is the index value of the pods of group id.
func groupIndexKey(id topology.GroupID) string {
	return "group:" + string(id.Kind) + "/" + id.Namespace + "/" + id.Name
}

// nodeIndexKey is the index value of the pods bound to node name.
func nodeIndexKey(name string) string {
	return "node:" + name
}

// labelIndexKey is the index value of the pods of namespace ns with label
// key=value.
func labelIndexKey(ns, key, value string) string {
	return "label:" + ns + "/" + key + "=" + value
}

// NewPodIndexFunc returns the index function of PodIndexName. The group
// is the one the default groupers give (topology.Groupers): a native
// PodGroup's identity is the pod's podGroupName whatever the PodGroups
// say, so the PodGroups are not needed for it.
func NewPodIndexFunc() cache.IndexFunc {
	groupers := topology.Groupers(nil)
	// A slimPod is read through a scratch pod of its labels, annotations,
	// node and scheduling group, what the index reads, without the cost
	// of materializing it on each event.
	scratch := sync.Pool{New: func() any { return &corev1.Pod{} }}
	return func(obj interface{}) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if sp, slim := obj.(*podcache.Pod); slim {
			pod, ok = scratch.Get().(*corev1.Pod), true
			*pod = corev1.Pod{}
			sp.IndexFields(pod)
			defer scratch.Put(pod)
		}
		if !ok {
			return nil, nil
		}
		var keys []string
		for _, g := range groupers {
			if m, ok := g(pod); ok {
				keys = append(keys, groupIndexKey(topology.GroupID{Kind: m.Kind, Namespace: pod.Namespace, Name: m.Group}))
				break
			}
		}
		for _, k := range [...]string{topology.LWSNameLabel, topology.RayClusterLabel} {
			if v, ok := pod.Labels[k]; ok {
				keys = append(keys, labelIndexKey(pod.Namespace, k, v))
			}
		}
		if pod.Spec.NodeName != "" {
			keys = append(keys, nodeIndexKey(pod.Spec.NodeName))
		}
		return keys, nil
	}
}

// AddPodIndex adds PodIndexName to a pod informer. It is best effort: an
// informer that has the index already refuses it as a conflict, and
// without the index (a stopped informer refuses it too) a recovery
// evaluation reads whole namespaces, as it did before the index.
func AddPodIndex(inf cache.SharedIndexInformer) {
	_ = inf.AddIndexers(cache.Indexers{PodIndexName: NewPodIndexFunc()})
}

// HasPodIndex reports whether ix has udrain's pod index.
func HasPodIndex(ix cache.Indexer) bool {
	_, ok := ix.GetIndexers()[PodIndexName]
	return ok
}

// objectsByPodIndex returns the cached objects of the pods indexed under
// value.
func (v *View) objectsByPodIndex(value string) []interface{} {
	objs, _ := v.groupIndex.ByIndex(PodIndexName, value)
	return objs
}

// GroupsIn returns the groups of namespace ns that ids name, by ID.
// With the pod index and the default groupers it groups only the pods
// indexed under those groups: the same members, so the same groups, as
// grouping the whole namespace.
func (v *View) GroupsIn(ns string, ids []topology.GroupID, groupers []topology.Grouper, memo *podcache.Memo) map[topology.GroupID]*topology.Group {
	memo = readMemo(memo)
	byID := make(map[topology.GroupID]*topology.Group, len(ids))
	if v.groupIndex == nil || v.cfg.CustomGroupers || !v.inScope(ns) {
		groups := topology.FindGroups(memo.Pods(v.PodObjectsIn(ns)), groupers...)
		for i := range groups {
			byID[groups[i].ID] = &groups[i]
		}
		return byID
	}
	for _, id := range ids {
		if _, done := byID[id]; done {
			continue
		}
		groups := topology.FindGroups(memo.Pods(v.objectsByPodIndex(groupIndexKey(id))), groupers...)
		for i := range groups {
			if groups[i].ID == id {
				byID[id] = &groups[i]
			}
		}
	}
	return byID
}

// BudgetPods returns the cached pods of pdb's namespace it selects: with
// the pod index, among those with the value of an indexed label its
// selector requires; else among the whole namespace. Pods are matched
// before they are read (a slim cache materializes only the selected
// ones: a workload's leaders, not all its members).
func (v *View) BudgetPods(pdb *policyv1.PodDisruptionBudget, memo *podcache.Memo) []*corev1.Pod {
	memo = readMemo(memo)
	var objs []interface{}
	indexed := false
	if v.groupIndex != nil && v.inScope(pdb.Namespace) {
		if key, value, ok := indexedRequirement(pdb.Spec.Selector); ok {
			objs, indexed = v.objectsByPodIndex(labelIndexKey(pdb.Namespace, key, value)), true
		}
	}
	if !indexed {
		objs = v.PodObjectsIn(pdb.Namespace)
	}
	// The selector is parsed for slimPods only (whole pods go as they are:
	// health.Budget matches them itself).
	var sel labels.Selector
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, whole := o.(*corev1.Pod); whole {
			pods = append(pods, p)
			continue
		}
		if sel == nil {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil {
				return memo.Pods(objs) // health.Budget says what is wrong
			}
		}
		if sel.Matches(podcache.LabelsOf(o)) {
			pods = append(pods, memo.Pod(o))
		}
	}
	return pods
}

// indexedRequirement returns an indexed label and the one value sel
// requires of it, if it requires one.
func indexedRequirement(sel *metav1.LabelSelector) (key, value string, ok bool) {
	if sel == nil {
		return "", "", false
	}
	for _, k := range [...]string{topology.LWSNameLabel, topology.RayClusterLabel} {
		if v, ok := sel.MatchLabels[k]; ok {
			return k, v, true
		}
	}
	for _, r := range sel.MatchExpressions {
		if indexedLabel(r.Key) && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 {
			return r.Key, r.Values[0], true
		}
	}
	return "", "", false
}

// PlanPods returns the cached pods a plan of the domain of nodes reads,
// through the pod index: the pods on those nodes and every member of their
// groups (pack, the groups' health); and, for a workload with two or more
// groups on the domain (the only case where spread reports on it), every
// pod of that workload (a LeaderWorkerSet or Ray cluster), or of the
// namespace for groups of another kind (a native PodGroup's workload is a
// Workload object, not indexed). A plan made from them is the plan made
// from every pod: the other pods touch none of its groups, budgets or
// findings. ok is false without the index or with groupers of the
// caller's own (the index knows only the default groupers).
func (v *View) PlanPods(nodes []string, memo *podcache.Memo) (pods []*corev1.Pod, ok bool) {
	memo = readMemo(memo)
	if v.groupIndex == nil || v.cfg.CustomGroupers {
		return nil, false
	}
	index := NewPodIndexFunc()
	// Objects, not pods, are deduplicated: a slim cache materializes a new
	// pod each time it is read.
	seen := map[interface{}]bool{}
	add := func(objs []interface{}) []*corev1.Pod {
		var added []*corev1.Pod
		for _, o := range objs {
			if !seen[o] && v.inScope(podcache.NamespaceOf(o)) {
				seen[o] = true
				p := memo.Pod(o)
				pods = append(pods, p)
				added = append(added, p)
			}
		}
		return added
	}
	var local []*corev1.Pod
	for _, n := range nodes {
		local = append(local, add(v.objectsByPodIndex(nodeIndexKey(n)))...)
	}
	groups := map[string]bool{}         // group keys of the domain's pods
	workloads := map[string][]string{}  // workload (label key) -> its groups here
	otherKinds := map[string][]string{} // namespace -> groups of other kinds here
	workloadLabel := map[topology.Kind]string{topology.KindLeaderWorkerSet: topology.LWSNameLabel, topology.KindRay: topology.RayClusterLabel}
	for _, p := range local {
		if !v.inScope(p.Namespace) {
			continue
		}
		ks, _ := index(p)
		for _, k := range ks {
			kind, ok := groupKindOf(k)
			if !ok || groups[k] {
				continue
			}
			groups[k] = true
			if label, ok := workloadLabel[kind]; ok && p.Labels[label] != "" {
				w := labelIndexKey(p.Namespace, label, p.Labels[label])
				workloads[w] = append(workloads[w], k)
			} else {
				otherKinds[p.Namespace] = append(otherKinds[p.Namespace], k)
			}
		}
	}
	for k := range groups {
		add(v.objectsByPodIndex(k))
	}
	for w, gs := range workloads {
		if len(gs) > 1 {
			add(v.objectsByPodIndex(w))
		}
	}
	for ns, gs := range otherKinds {
		if len(gs) > 1 {
			add(v.PodObjectsIn(ns))
		}
	}
	return pods, true
}

// GroupPods returns the cached pods in scope that belong to a group:
// with the pod index, those indexed under a group, in the order of their
// groups' keys. The other pods (a Deployment's, a DaemonSet's) form no
// group, so grouping these gives the groups of every pod. ok is false
// without the index or with groupers of the caller's own (the index knows
// only the default groupers): then the caller reads every pod. Slim pods
// are materialized through memo (nil: each anew).
func (v *View) GroupPods(memo *podcache.Memo) (pods []*corev1.Pod, ok bool) {
	memo = readMemo(memo)
	if v.groupIndex == nil || v.cfg.CustomGroupers {
		return nil, false
	}
	keys := v.groupIndex.ListIndexFuncValues(PodIndexName)
	slices.Sort(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, "group:") {
			continue
		}
		for _, o := range v.objectsByPodIndex(k) {
			if v.inScope(podcache.NamespaceOf(o)) {
				pods = append(pods, memo.Pod(o))
			}
		}
	}
	return pods, true
}

// groupKindOf returns the kind of the group a groupIndexKey names.
func groupKindOf(key string) (topology.Kind, bool) {
	rest, ok := strings.CutPrefix(key, "group:")
	if !ok {
		return "", false
	}
	kind, _, ok := strings.Cut(rest, "/")
	return topology.Kind(kind), ok
}

// readMemo is memo, or for nil a Memo of one read: the pods it
// materializes with the same labels and annotations share their maps.
func readMemo(memo *podcache.Memo) *podcache.Memo {
	if memo == nil {
		return podcache.NewRead()
	}
	return memo
}
