package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// deployRay brings up the testbed's KubeRay operator and, on a pool of 3
// upgrade domains of two 8-GPU nodes, three RayClusters of a head and one
// two-host replica of 8-GPU workers: each cluster fills one domain, so
// KubeRay's replacements can only land back in the domain they left. The
// heads are gated by the readiness-gate controller. It returns once every
// pod runs, without the PDB over the heads (see [fixture.RayClusters]).
func deployRay(t *testing.T) *scenario {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	if _, err := bed.KubeRay(ctx); err != nil {
		t.Fatal(err)
	}
	tt := bed.ForTest(t)
	gpu := fixture.H100()
	s := &scenario{tt: tt}
	s.nodes = fixture.Nodes{Pool: tt.Name, UDs: 3, PerUD: 2, GPU: &gpu}
	if _, err := s.nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	s.ray = &fixture.RayClusters{Namespace: tt.Name, Name: "rc", Clusters: 3, Hosts: 2, GPUsPerHost: 8, Pool: tt.Name,
		ReadyDelay: 2 * time.Second, TerminateDelay: time.Second, GracePeriodSeconds: 5}
	startGateController(t, tt.Client, gate.Options{Namespace: tt.Name})
	s.record(t, s.ray.Selector())
	dyn, err := dynamic.NewForConfig(tt.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ray.Create(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, s.ray.Selector(), fixture.PodsRunning(s.ray.Clusters*s.ray.Size())); err != nil {
		t.Fatal(err)
	}
	nl, err := tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	s.nodeList = nl.Items
	t.Logf("KubeRay made and kwok runs %d pods of %d RayClusters in %s", s.ray.Clusters*s.ray.Size(), s.ray.Clusters, time.Since(start).Round(100*time.Millisecond))
	return s
}

// rayDrainHelper is kubectl drain's defaults plus --delete-emptydir-data:
// every KubeRay pod mounts an emptyDir (/dev/shm), which kubectl refuses to
// lose without it.
func rayDrainHelper() eviction.Options {
	h := eviction.KubectlDefaults()
	h.DeleteEmptyDirData = true
	return eviction.Options{Helper: h}
}

// TestKubeRayAuditPlanAndRollout runs udrain over real KubeRay clusters:
// three RayClusters, each a head and a two-host GPU replica packed into
// one domain, spread over three. The audit reports each head while no PDB
// selects it and nothing once a PDB over the heads does; a plan groups each
// cluster (head in phase 1, hosts in phase 2) and, with kubectl's defaults,
// refuses KubeRay's emptyDir pods as kubectl does. A rollout then disrupts
// each cluster exactly once, never leaves fewer healthy clusters than the
// PDB's minAvailable, evicts heads before workers in each domain, and moves
// to the next domain only once KubeRay's recreated pods (new head, new
// replica) have made the previous cluster healthy again: all as the
// independent pod recording shows it.
func TestKubeRayAuditPlanAndRollout(t *testing.T) {
	t.Parallel()
	s := deployRay(t)
	ctx := t.Context()
	c := s.tt.Client

	// The labels KubeRay really writes, which udrain groups by.
	pods, err := c.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: s.ray.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	original := replicaOf(t, s, pods.Items)
	checkKubeRayPodsRun(t, s, pods.Items)

	audit := func() []topology.Finding {
		t.Helper()
		pods, err := c.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdbs, err := c.PolicyV1().PodDisruptionBudgets(s.tt.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		layout, err := topology.BuildLayout(s.nodeList, topology.LayoutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ptrs := topology.PodPointers(pods.Items)
		return topology.Audit(topology.AuditInput{Layout: layout, Groups: topology.FindGroups(ptrs), PDBs: pdbs.Items, Pods: ptrs}).Findings
	}
	type finding struct {
		Code  topology.FindingCode
		Group string
		Pods  []string
	}
	var got []finding
	for _, f := range audit() {
		got = append(got, finding{f.Code, f.Group, f.Pods})
	}
	var want []finding
	for i := range s.ray.Clusters {
		want = append(want, finding{topology.FindingUnprotectedLeader, s.ray.ClusterName(i), []string{original[i].head}})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit without a PDB over the heads (-want +got):\n%s", diff)
	}

	if _, err := c.PolicyV1().PodDisruptionBudgets(s.tt.Name).Create(ctx, s.ray.PodDisruptionBudget(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitHealthy(t, 3*time.Minute)
	if f := audit(); len(f) != 0 {
		t.Errorf("audit of well placed clusters under a PDB over the heads: %+v, want no finding", f)
	}

	// The plan of the first cluster's domain: one group, its head first.
	first := original[0]
	d0, err := eviction.New(c, rayDrainHelper())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d0.Plan(ctx, first.domain)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Err(); err != nil {
		t.Errorf("plan of %s: %v", first.domain, err)
	}
	names := func(pp []eviction.PlannedPod) []string {
		var out []string
		for _, p := range pp {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff([]string{first.head}, names(plan.Phase1)); diff != "" {
		t.Errorf("phase 1 of %s (-want +got):\n%s", first.domain, diff)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(first.hosts)), names(plan.Phase2)); diff != "" {
		t.Errorf("phase 2 of %s (-want +got):\n%s", first.domain, diff)
	}
	wantGroups := []plannedGroup{{ID: topology.GroupID{Kind: topology.KindRay, Namespace: s.tt.Name, Name: s.ray.ClusterName(0)},
		Workload: s.ray.ClusterName(0), Leader: first.head, Size: s.ray.Size(), Evicted: s.ray.Size(), Healthy: true}}
	if diff := cmp.Diff(wantGroups, plannedGroups(plan)); diff != "" {
		t.Errorf("groups of the plan of %s (-want +got):\n%s", first.domain, diff)
	}
	dk, err := eviction.New(c, eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kplan, err := dk.Plan(ctx, first.domain)
	if err != nil {
		t.Fatal(err)
	}
	var refused *eviction.ClusterError
	if err := kplan.Err(); !errors.As(err, &refused) || refused.Reason != eviction.ReasonRefusedPods || len(refused.Pods) != s.ray.Size() {
		t.Errorf("plan with kubectl's defaults: %v, want the %d pods refused for their emptyDir", err, s.ray.Size())
	}

	// The rollout.
	events := &eventLog{}
	d := s.drainer(t, events, rayDrainHelper())
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{
		ID: "e2e-ray", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, dom topology.Domain) error {
			time.Sleep(upgradeStep)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	t.Logf("rollout over KubeRay took %s", time.Since(start).Round(time.Millisecond))
	s.waitHealthy(t, time.Minute)

	o := s.observe(t, start)
	t.Logf("udrain rollout over KubeRay: %s; PDB minAvailable %d", o, s.ray.Clusters-1)
	checkEachGroupOnce(t, s, o)
	if got, want := len(o.Evicted), s.ray.Clusters*s.ray.Size(); got != want {
		t.Errorf("%d pods evicted, want %d (each original pod once)", got, want)
	}
	if tot := report.SummarizeRollout(res); tot.DomainsDone != 3 || tot.Phase1Evicted != 3 || tot.Phase2Evicted != 6 || tot.GroupsDisrupted != 3 {
		t.Errorf("totals %+v, want 3 domains, 3 heads in phase 1, 6 hosts in phase 2, 3 groups disrupted", tot)
	}
	for _, p := range waitedForKubeRay(t, s, original, start) {
		t.Error(p)
	}
	for _, p := range headReadyOnlyWhenWhole(t, s) {
		t.Error(p)
	}

	// KubeRay made a new head and a whole new replica for each cluster.
	pods, err = c.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: s.ray.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	after := replicaOf(t, s, pods.Items)
	for i := range s.ray.Clusters {
		if after[i].head == original[i].head || after[i].replica == original[i].replica || after[i].domain != original[i].domain {
			t.Errorf("cluster %d: before %+v, after %+v; want a new head and a new replica in the same domain", i, original[i], after[i])
		}
	}
}

// rayCluster is one RayCluster as its pods show it.
type rayCluster struct {
	head    string
	hosts   []string // by ray.io/replica-host-index
	replica string   // the hosts' ray.io/worker-group-replica-name
	domain  string
}

// replicaOf reads each cluster's pods, checking the labels KubeRay's
// multi-host indexing writes: the hosts of the replica share one replica
// name and are numbered 0..Hosts-1.
func replicaOf(t *testing.T, s *scenario, pods []corev1.Pod) []rayCluster {
	t.Helper()
	udOf := s.domainOf()
	out := make([]rayCluster, s.ray.Clusters)
	for _, g := range s.ray.Groups(pods, s.nodeList) {
		out[g.Index].head = g.Leader
		if len(g.UDs) == 1 {
			out[g.Index].domain = g.UDs[0]
		}
	}
	for i := range out {
		out[i].hosts = make([]string, s.ray.Hosts)
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		i, ok := s.ray.ClusterIndex(&p)
		if !ok {
			t.Fatalf("pod %s of no cluster of the set: %v", p.Name, p.Labels)
		}
		if udOf[p.Spec.NodeName] != out[i].domain {
			t.Errorf("pod %s of cluster %d in domain %q, its cluster in %q", p.Name, i, udOf[p.Spec.NodeName], out[i].domain)
		}
		if s.ray.IsHead(&p) {
			continue
		}
		replica, host := p.Labels[fixture.RayWorkerReplicaNameLabel], p.Labels[fixture.RayReplicaHostIndexLabel]
		var h int
		if _, err := fmt.Sscanf(host, "%d", &h); err != nil || h < 0 || h >= s.ray.Hosts || out[i].hosts[h] != "" {
			t.Fatalf("worker %s: host index %q (KubeRay's RayMultiHostIndexing labels missing or wrong)", p.Name, host)
		}
		if out[i].replica != "" && out[i].replica != replica || replica == "" {
			t.Errorf("worker %s: replica %q, its cluster's other hosts %q", p.Name, replica, out[i].replica)
		}
		out[i].replica = replica
		out[i].hosts[h] = p.Name
	}
	for i, c := range out {
		if c.head == "" || c.domain == "" || slices.Contains(c.hosts, "") {
			t.Fatalf("cluster %d incomplete or not packed: %+v", i, c)
		}
	}
	return out
}

// waitedForKubeRay checks, on the recording from start on, that the
// rollout started evicting in each domain only after the cluster of the
// domain before had recovered on pods KubeRay recreated (none of its
// original pods left).
func waitedForKubeRay(t *testing.T, s *scenario, original []rayCluster, start time.Time) []string {
	t.Helper()
	status := func(pods []corev1.Pod) []fixture.GroupStatus { return s.ray.Groups(pods, s.nodeList) }
	tl, err := fixture.NewTimeline(s.rec.Events(), start, status, s.ray.ClusterIndex)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Groups) != len(original) {
		t.Fatalf("the recording follows %d clusters, want %d", len(tl.Groups), len(original))
	}
	// The clusters in the rollout's order of domains.
	var order []int
	for _, d := range s.domains() {
		for i, c := range original {
			if c.domain == d {
				order = append(order, i)
			}
		}
	}
	var problems []string
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		prev, next := tl.Groups[a], tl.Groups[b]
		switch {
		case prev.Recovered.IsZero():
			problems = append(problems, fmt.Sprintf("cluster %d (domain %s) never recovered on recreated pods", a, original[a].domain))
		case next.FirstEvicted.IsZero():
			problems = append(problems, fmt.Sprintf("nothing of cluster %d (domain %s) evicted", b, original[b].domain))
		case !prev.Recovered.Before(next.FirstEvicted):
			problems = append(problems, fmt.Sprintf("domain %s: first eviction at %s, before cluster %d of domain %s recovered at %s",
				original[b].domain, next.FirstEvicted.Format("15:04:05.000"), a, original[a].domain, prev.Recovered.Format("15:04:05.000")))
		default:
			t.Logf("cluster %d recovered on KubeRay's new pods %s before the first eviction in %s (cluster %d)",
				a, next.FirstEvicted.Sub(prev.Recovered).Round(time.Millisecond), original[b].domain, b)
		}
	}
	return problems
}

// headReadyOnlyWhenWhole checks, on the recording, that no head was Ready
// while its cluster had fewer pods than its size. Ray pods state no size, so
// the readiness-gate controller judges a head by the members that exist; it
// is right only because KubeRay recreates deleted workers (as Pending pods)
// before the new head is Ready, as the topology package's documentation
// says. This is where that claim is checked.
func headReadyOnlyWhenWhole(t *testing.T, s *scenario) []string {
	t.Helper()
	var problems []string
	seen := map[int]bool{}
	err := s.rec.Replay(func(at time.Time, pods map[types.UID]*corev1.Pod) error {
		list := make([]corev1.Pod, 0, len(pods))
		for _, p := range pods {
			list = append(list, *p)
		}
		for _, g := range s.ray.Groups(list, s.nodeList) {
			if g.LeaderReady && g.Members < g.Size && !seen[g.Index] {
				seen[g.Index] = true
				problems = append(problems, fmt.Sprintf("at %s head %s of cluster %d was Ready with %d of its %d pods",
					at.Format("15:04:05.000"), g.Leader, g.Index, g.Members, g.Size))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// checkKubeRayPodsRun checks that the pods are KubeRay's own, with what the
// operator adds to them, and that kwok runs them as a kubelet would: the
// workers' init container (waiting for the head's GCS) completed, the
// probes KubeRay adds are there, and every worker holds its GPUs on a node
// that has them.
func checkKubeRayPodsRun(t *testing.T, s *scenario, pods []corev1.Pod) {
	t.Helper()
	gpusOn := map[string]int64{}
	for _, n := range s.nodeList {
		q := n.Status.Allocatable[fixture.GPUResource]
		gpusOn[n.Name] = q.Value()
	}
	used := map[string]int64{}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.Kind != "RayCluster" {
			t.Errorf("pod %s is not controlled by a RayCluster: %v", p.Name, p.OwnerReferences)
		}
		c := p.Spec.Containers[0]
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("pod %s: KubeRay's readiness and liveness probes missing", p.Name)
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		if s.ray.IsHead(&p) {
			continue
		}
		if len(p.Spec.InitContainers) == 0 {
			t.Errorf("worker %s has no init container (KubeRay injects one that waits for the head)", p.Name)
		}
		for _, st := range p.Status.InitContainerStatuses {
			if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
				t.Errorf("worker %s: init container %s did not complete: %+v", p.Name, st.Name, st.State)
			}
		}
		if len(p.Status.InitContainerStatuses) != len(p.Spec.InitContainers) {
			t.Errorf("worker %s: %d init container statuses for %d init containers", p.Name, len(p.Status.InitContainerStatuses), len(p.Spec.InitContainers))
		}
		q := c.Resources.Requests[fixture.GPUResource]
		used[p.Spec.NodeName] += q.Value()
		if q.Value() != int64(s.ray.GPUsPerHost) {
			t.Errorf("worker %s requests %s GPUs, want %d", p.Name, q.String(), s.ray.GPUsPerHost)
		}
	}
	for node, n := range used {
		if n > gpusOn[node] {
			t.Errorf("node %s: %d GPUs requested by its workers, %d allocatable", node, n, gpusOn[node])
		}
	}
}

// plannedGroup is what the tests check of a plan's group.
type plannedGroup struct {
	ID               topology.GroupID
	Workload, Leader string
	Size, Evicted    int
	Healthy          bool
}

func plannedGroups(p *eviction.Plan) []plannedGroup {
	var out []plannedGroup
	for _, g := range p.Groups {
		out = append(out, plannedGroup{ID: g.ID, Workload: g.Workload, Leader: g.Leader, Size: g.Size, Evicted: g.Evicted, Healthy: g.Healthy})
	}
	return out
}
