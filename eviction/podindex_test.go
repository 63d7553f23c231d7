package eviction

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/drain"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/internal/clusterview"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// indexFixture is a varied cluster for the pod index: LWS groups named
// alike in two namespaces (complete, short of a worker, with an unready
// leader, unscheduled), a pod with both LWS and Ray labels, a Ray cluster,
// a native PodGroup, a pod with an LWS name but no group, plain pods; and
// budgets selecting by an indexed label (matchLabels, a one-value In),
// by other labels, by two values, by nothing, behind and caught up.
func indexFixture(now time.Time) ([]*corev1.Pod, []*policyv1.PodDisruptionBudget, []schedulingv1beta1.PodGroup) {
	var pods []*corev1.Pod
	for _, ns := range []string{"a", "b"} {
		for g := 0; g < 4; g++ {
			for w := 0; w < 4; w++ {
				if g == 1 && w == 3 {
					continue // a worker short
				}
				node := fmt.Sprintf("n-%d", g)
				if g == 3 {
					node = "" // unscheduled
				}
				p := lwsPod(g, w, 4, node, types.UID(fmt.Sprintf("%s-%d-%d", ns, g, w)))
				p.Namespace = ns
				if g == 2 && w == 0 {
					p.Status.Conditions = nil // the leader is not ready
				}
				pods = append(pods, p)
			}
		}
	}
	ray := func(name, nodeType string) *corev1.Pod {
		return readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name,
			Labels: map[string]string{topology.RayClusterLabel: "rc", topology.RayNodeTypeLabel: nodeType}},
			Spec: corev1.PodSpec{NodeName: "n-5"}})
	}
	pods = append(pods, ray("rc-head", "head"), ray("rc-worker-1", "worker"), ray("rc-worker-2", "worker"))
	pods[len(pods)-1].Status.Conditions = nil
	both := lwsPod(5, 0, 1, "n-5", "both")
	both.Namespace, both.Labels[topology.RayClusterLabel], both.Labels[topology.RayNodeTypeLabel] = "a", "rc", "worker"
	pods = append(pods, both)
	noGroup := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "llm-tool",
		Labels: map[string]string{topology.LWSNameLabel: "llm", topology.LWSWorkerIndexLabel: "0"}}, Spec: corev1.PodSpec{NodeName: "n-6"}})
	other := lwsPod(0, 0, 1, "n-6", "other")
	other.Namespace, other.Name, other.Labels[topology.LWSNameLabel] = "a", "other-0", "other"
	pods = append(pods, noGroup, other)
	for i := 0; i < 3; i++ {
		pods = append(pods, readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: fmt.Sprintf("gang-%d", i)},
			Spec: corev1.PodSpec{NodeName: "n-7", SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptrTo("gang")}}}))
	}
	for _, ns := range []string{"a", "b"} {
		for i := 0; i < 3; i++ {
			pods = append(pods, readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i),
				Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: "n-8"}}))
		}
	}
	pdb := func(ns, name string, healthy int32, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}, Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: healthy}}
	}
	labels := func(kv ...string) *metav1.LabelSelector {
		s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.MatchLabels[kv[i]] = kv[i+1]
		}
		return s
	}
	in := func(key string, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}}}
	}
	leaders := pdb("a", "llm-leaders", 2, labels(topology.LWSNameLabel, "llm", topology.LWSWorkerIndexLabel, "0"))
	leaders.Status.DisruptedPods = map[string]metav1.Time{"llm-0": metav1.NewTime(now.Add(-30 * time.Second))}
	pdbs := []*policyv1.PodDisruptionBudget{
		leaders,
		pdb("a", "llm-all", 13, in(topology.LWSNameLabel, "llm")),
		pdb("a", "llm-or-other", 15, in(topology.LWSNameLabel, "llm", "other")),
		pdb("a", "rc", 3, labels(topology.RayClusterLabel, "rc")),
		pdb("a", "web", 3, labels("app", "web")),
		pdb("a", "nothing", 0, nil),
		pdb("b", "llm-leaders", 4, labels(topology.LWSNameLabel, "llm", topology.LWSWorkerIndexLabel, "0")),
		pdb("b", "web", 1, labels("app", "web")),
	}
	pgs := []schedulingv1beta1.PodGroup{{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "gang"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}}}}
	return pods, pdbs, pgs
}

// indexTarget waits for every group of the fixture, one that does not
// exist, and every budget and one deleted.
func indexTarget() recoveryTarget {
	t := recoveryTarget{domain: "ud-1"}
	for _, ns := range []string{"a", "b"} {
		for g := 0; g < 4; g++ {
			t.groups = append(t.groups, wantedGroup{id: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: ns, Name: fmt.Sprintf("llm-%d", g)},
				workload: "llm", leader: fmt.Sprintf("llm-%d", g), size: 4})
		}
		t.addPDB(types.NamespacedName{Namespace: ns, Name: "llm-leaders"})
		t.addPDB(types.NamespacedName{Namespace: ns, Name: "web"})
	}
	t.groups = append(t.groups,
		wantedGroup{id: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "a", Name: "llm-5"}, workload: "llm", leader: "llm-5", size: 1},
		wantedGroup{id: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "a", Name: "llm-9"}, workload: "llm", leader: "llm-9", size: 4},
		wantedGroup{id: topology.GroupID{Kind: topology.KindRay, Namespace: "a", Name: "rc"}, workload: "rc", leader: "rc-head", size: 3},
		wantedGroup{id: topology.GroupID{Kind: topology.KindPodGroup, Namespace: "b", Name: "gang"}, workload: "gang", size: 4},
		wantedGroup{id: topology.GroupID{Kind: topology.KindLabel, Namespace: "a", Name: "web"}, workload: "web", size: 3},
	)
	for _, name := range []string{"llm-all", "llm-or-other", "rc", "nothing", "deleted"} {
		t.addPDB(types.NamespacedName{Namespace: "a", Name: name})
	}
	return t
}

// TestPodIndexEvaluatesAsNamespaces: a recovery evaluation through the pod
// index judges every group and budget as one that groups whole namespaces.
func TestPodIndexEvaluatesAsNamespaces(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pods, pdbs, pgs := indexFixture(now)
	tests := []struct {
		name string
		opts Options
	}{
		{"default groupers", Options{}},
		{"namespace scope", Options{Namespace: "b"}},
		{"own groupers", Options{Groupers: []topology.Grouper{topology.ByLabel(topology.LabelGrouping{GroupLabel: "app"}), topology.Ray()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(fake.NewClientset(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			view := func(indexed bool) *view {
				indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
				if indexed {
					indexers[clusterview.PodIndexName] = clusterview.NewPodIndexFunc()
				}
				podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
				pdbStore := cache.NewStore(cache.MetaNamespaceKeyFunc)
				for _, p := range pods {
					if err := podStore.Add(p); err != nil {
						t.Fatal(err)
					}
				}
				for _, b := range pdbs {
					if err := pdbStore.Add(b); err != nil {
						t.Fatal(err)
					}
				}
				return d.newView(clusterview.Stores{Pods: podStore, PodIndexer: podStore, PDBs: pdbStore})
			}
			groupers := groupersFor(d.s, &Snapshot{PodGroups: pgs})
			want := view(false).evaluate(indexTarget(), groupers, now)
			got := view(true).evaluate(indexTarget(), groupers, now)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("indexed evaluation differs (-namespaces +index):\n%s", diff)
			}
			// The fixture is worth comparing: groups and budgets both
			// healthy and not.
			var healthy, unhealthy int
			for _, g := range want.Groups {
				if g.Healthy {
					healthy++
				} else {
					unhealthy++
				}
			}
			var budgetsOK, budgetsBehind int
			for _, b := range want.Budgets {
				if b.Healthy {
					budgetsOK++
				} else {
					budgetsBehind++
				}
			}
			if healthy == 0 || unhealthy == 0 || budgetsOK == 0 || budgetsBehind == 0 {
				t.Errorf("fixture too plain: %d healthy and %d unhealthy groups, %d healthy and %d behind budgets", healthy, unhealthy, budgetsOK, budgetsBehind)
			}
		})
	}
}

// TestInformersAddThePodIndex: clusterinformers.FromFactory and
// clusterinformers.FromCache add udrain's pod index, however often they are
// called.
func TestInformersAddThePodIndex(t *testing.T) {
	tests := []struct {
		name string
		get  func(informers.SharedInformerFactory) (*clusterinformers.Set, error)
	}{
		{"InformersFromFactory", func(f informers.SharedInformerFactory) (*clusterinformers.Set, error) {
			return clusterinformers.FromFactory(f), nil
		}},
		{"InformersFromCache", func(f informers.SharedInformerFactory) (*clusterinformers.Set, error) {
			return clusterinformers.FromCache(context.Background(), &fakeCache{f: f})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			if _, err := tt.get(f); err != nil {
				t.Fatal(err)
			}
			in, err := tt.get(f)
			if err != nil {
				t.Fatal(err)
			}
			if ix := in.Pods.(interface{ GetIndexer() cache.Indexer }).GetIndexer(); !clusterview.HasPodIndex(ix) {
				t.Fatalf("pod informer's indexers %v lack %s", ix.GetIndexers(), clusterview.PodIndexName)
			}
		})
	}
}

// A Drainer's plan over informers with the pod index reads only the pods
// (over whole pods and over slimPods)
// of the domain, of their groups and of their workloads (clusterview.View.PlanPods): it must
// be the plan NewPlan makes from every pod, also where the other pods
// matter: a group packed badly (a member in another domain), two groups of
// a workload in one domain while another holds none (spread), a native
// PodGroup's gang, Pending members, DaemonSet and ordinary pods.
func TestPlanOfADomainReadsWhatEveryPodWouldSay(t *testing.T) {
	snap := oddFleet()
	for _, c := range fleetCaches {
		t.Run("cache="+c.name, func(t *testing.T) {
			d := fleetDrainer(t, fleetInformers(t, snap, c.transform()))
			ctx := testContext(t)
			v, err := d.startView(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Stop()
			for dom := 0; dom < 6; dom++ {
				name := fmt.Sprintf("ud-%d", dom)
				small, err := v.planSnapshot(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				if len(small.Pods) >= len(snap.Pods)/2 {
					t.Errorf("%s: the plan's snapshot holds %d of the %d pods, want only the domain's, its groups' and its workloads'", name, len(small.Pods), len(snap.Pods))
				}
				got, err := newPlan(name, small, d.s)
				if err != nil {
					t.Fatal(err)
				}
				full := *snap
				full.Now = small.Now
				want, err := newPlan(name, &full, d.s)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("plan of %s from its pods (-every pod +the domain's):\n%s", name, diff)
				}
				if dom == 1 {
					codes := map[topology.FindingCode]bool{}
					for _, f := range got.Findings {
						codes[f.Code] = true
					}
					if !codes[topology.FindingPack] || !codes[topology.FindingSpread] {
						t.Errorf("plan of ud-1: findings %v, want the pack and spread violations the fixture holds", got.Findings)
					}
				}
			}
		})
	}
}

// A rollout's status over informers with the pod index reads the groups'
// pods and, for each pending domain, the pods its plan reads
// (view.groupSnapshot, view.domainSnapshot): it must be the status read
// from every pod (informers without the index), over whole pods and
// slimPods, with domains upgraded, cordoned and pending, on oddFleet, whose
// groups reach across domains.
func TestRolloutStatusFromGroupPodsIsStatusFromEveryPod(t *testing.T) {
	snap := oddFleet()
	const id = "odd"
	at := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		n.Annotations = map[string]string{}
		switch n.Labels[topology.DefaultDomainLabel] {
		case "ud-0":
			n.Annotations[udrain.UpgradedByAnnotation] = id
			n.Annotations[udrain.UpgradedAtAnnotation] = at.Format(time.RFC3339Nano)
		case "ud-2":
			n.Annotations[udrain.CordonedByAnnotation] = id
			n.Spec.Unschedulable = true
		}
	}
	domains := []string{"ud-0", "ud-1", "ud-2", "ud-3", "ud-4", "ud-5"}
	opts := RolloutOptions{ID: id, Domains: domains, NoLock: true}
	clock := clocktesting.NewFakeClock(at.Add(time.Minute))
	read := func(t *testing.T, in *clusterinformers.Set) *RolloutStatus {
		t.Helper()
		d, err := New(fake.NewClientset(), Options{Informers: in, Clock: clock, Helper: &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.RolloutStatus(testContext(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// Every pod: informers without udrain's pod index.
	every := fleetInformers(t, snap, clusterview.StripForCache)
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range snap.Pods {
		addTransformed(t, pods, clusterview.StripForCache, p)
	}
	every.Pods = storeInformer{pods}
	want := read(t, every)
	states := map[DomainState]int{}
	for _, p := range want.Domains {
		states[p.State]++
	}
	if diff := cmp.Diff(map[DomainState]int{StateDone: 1, StateDraining: 1, StatePending: 4}, states); diff != "" {
		t.Fatalf("domains by state from every pod (-want +got):\n%s", diff)
	}
	members := 0
	for _, g := range topology.FindGroups(snap.Pods, topology.Groupers(nil)...) {
		members += len(g.Members)
	}
	if members == len(snap.Pods) {
		t.Fatalf("every pod of the fixture is in a group: the status would read every pod anyway")
	}
	for _, c := range fleetCaches {
		t.Run("cache="+c.name, func(t *testing.T) {
			in := fleetInformers(t, snap, c.transform())
			v, err := fleetDrainer(t, in).startView(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			groupPods, ok := v.GroupPods(nil)
			v.Stop()
			if !ok || len(groupPods) != members {
				t.Errorf("the groups' pods: %d of %d (ok %v), want the %d members of groups", len(groupPods), len(snap.Pods), ok, members)
			}
			if diff := cmp.Diff(want, read(t, in)); diff != "" {
				t.Errorf("status from the groups' pods (-every pod +the groups'):\n%s", diff)
			}
		})
	}
}

// oddFleet is benchFleet's 6 domains of 10 nodes with what makes a plan
// read beyond its domain: a group packed badly (a member in another
// domain), two groups of a workload in one domain while another holds none
// (spread), a native PodGroup's gang over two domains, Pending members.
func oddFleet() *Snapshot {
	snap := benchFleet(60, 10) // 6 domains of 10 nodes
	var extra []corev1.Pod
	ready := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	lws := func(ns, workload string, group, worker int, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d-%d", workload, group, worker), UID: types.UID(fmt.Sprintf("%s-%s-%d-%d", ns, workload, group, worker)),
			Labels:      map[string]string{topology.LWSNameLabel: workload, topology.LWSGroupIndexLabel: strconv.Itoa(group), topology.LWSWorkerIndexLabel: strconv.Itoa(worker)},
			Annotations: map[string]string{topology.LWSSizeAnnotation: "2"}, OwnerReferences: ownedBy("StatefulSet", workload)},
			Spec: corev1.PodSpec{NodeName: node}, Status: ready}
	}
	// Pack: a group of ud-1 with its worker in ud-2.
	extra = append(extra, lws("odd", "split", 0, 0, "node-10"), lws("odd", "split", 0, 1, "node-20"))
	// Spread: two groups of "crowded" in ud-1, its third in ud-3, none
	// elsewhere; a fourth group Pending.
	extra = append(extra, lws("odd", "crowded", 0, 0, "node-11"), lws("odd", "crowded", 0, 1, "node-11"),
		lws("odd", "crowded", 1, 0, "node-12"), lws("odd", "crowded", 1, 1, "node-12"),
		lws("odd", "crowded", 2, 0, "node-30"), lws("odd", "crowded", 2, 1, "node-30"),
		lws("odd", "crowded", 3, 0, ""), lws("odd", "crowded", 3, 1, ""))
	// A native PodGroup's gang over ud-1 and ud-4.
	gang := "gang"
	for i, node := range []string{"node-13", "node-14", "node-40"} {
		extra = append(extra, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: fmt.Sprintf("gang-%d", i), UID: types.UID(fmt.Sprintf("gang-%d", i)), OwnerReferences: ownedBy("ReplicaSet", "gang")},
			Spec: corev1.PodSpec{NodeName: node, SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: &gang}}, Status: ready})
	}
	for i := range extra {
		snap.Pods = append(snap.Pods, &extra[i])
	}
	return snap
}

// slimOf is pod as udrain's own (slim) cache holds it.
func slimOf(pod *corev1.Pod) interface{} {
	obj, err := podcache.NewTransform(clusterview.StripForCache)(pod)
	if err != nil {
		panic(err)
	}
	return obj
}
