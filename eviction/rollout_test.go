package eviction

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/topology"
)

// groupOfDomain: lwsCluster puts group d-1 in domain ud-d.
func domainIndex(name string) int {
	var d int
	fmt.Sscanf(name, "ud-%d", &d)
	return d
}

func TestRolloutDrainsEachDomainOnceAndRecovers(t *testing.T) {
	ctx := testContext(t)
	const domains, nodesPer, size = 3, 2, 4
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	var upgraded []string
	var own []Event // the rollout's own OnEvent
	res, err := d.Rollout(ctx, RolloutOptions{ID: "kubelet-1.37", OnEvent: func(_ context.Context, e Event) { own = append(own, e) }, Upgrade: func(ctx context.Context, dom topology.Domain) error {
		upgraded = append(upgraded, dom.Name)
		// The nodes come back and the StatefulSets recreate the group.
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, size, idx, nodesPer, domains)
		return nil
	}})
	if err != nil {
		t.Fatalf("Rollout: %v", err)
	}
	if diff := cmp.Diff([]string{"ud-1", "ud-2", "ud-3"}, upgraded); diff != "" {
		t.Errorf("upgrade order (-want +got):\n%s", diff)
	}
	// Every original pod evicted exactly once; leaders first in each domain.
	if len(fc.uids) != domains*size {
		t.Errorf("evicted %d pods, want %d: %v", len(fc.uids), domains*size, fc.evicted())
	}
	seen := map[types.UID]bool{}
	for _, u := range fc.uids {
		if seen[u] {
			t.Errorf("pod %s evicted twice", u)
		}
		seen[u] = true
		if !strings.Contains(string(u), "-w") || strings.Contains(string(u), "uid-") {
			t.Errorf("evicted %s, a pod created during the rollout", u)
		}
	}
	for i := 0; i < domains; i++ {
		if got := fc.uids[i*size]; got != types.UID(fmt.Sprintf("g%d-w0", i)) {
			t.Errorf("domain ud-%d: first eviction %s, want its leader", i+1, got)
		}
	}
	// The totals report.SummarizeRollout makes of the result.
	type totals struct {
		Done, Blocks, Phase1Evicted, Phase2Evicted int
		GroupsDisrupted                            []topology.GroupID
	}
	var tot totals
	for _, d := range res.Domains {
		if len(d.Groups) != 1 || d.Groups[0].Healthy == nil || d.Groups[0].Downtime <= 0 || d.Groups[0].From != d.Domain || d.Groups[0].To != d.Domain {
			t.Errorf("domain %s: group downtimes %+v, want its one group, seen healthy again after its eviction, back in its domain", d.Domain, d.Groups)
		}
		if d.State == StateDone {
			tot.Done++
		}
		if d.Drain != nil {
			tot.Blocks += len(d.Drain.Blocks)
			tot.Phase1Evicted += d.Drain.Pods.Phase1Evicted
			tot.Phase2Evicted += d.Drain.Pods.Phase2Evicted
			tot.GroupsDisrupted = append(tot.GroupsDisrupted, d.Drain.GroupsDisrupted...)
		}
	}
	want := totals{Done: 3, Phase1Evicted: 3, Phase2Evicted: 9, GroupsDisrupted: []topology.GroupID{
		{Kind: topology.KindLeaderWorkerSet, Namespace: testNS, Name: "llm-0"}, {Kind: topology.KindLeaderWorkerSet, Namespace: testNS, Name: "llm-1"},
		{Kind: topology.KindLeaderWorkerSet, Namespace: testNS, Name: "llm-2"}}}
	if len(res.Domains) != 3 {
		t.Errorf("%d domains, want 3", len(res.Domains))
	}
	if diff := cmp.Diff(want, tot); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	nodes, _ := fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable || n.Annotations[udrain.CordonedByAnnotation] != "" || n.Annotations[udrain.UpgradedByAnnotation] != "kubelet-1.37" {
			t.Errorf("node %s after rollout: unschedulable=%v annotations=%v", n.Name, n.Spec.Unschedulable, n.Annotations)
		}
	}
	// The rollout's OnEvent got every event of the rollout: its lock's,
	// its drains', its recoveries'.
	if diff := cmp.Diff(log.all(), own, cmpopts.IgnoreFields(Event{}, "Err")); diff != "" {
		t.Errorf("RolloutOptions.OnEvent's events and Options.OnEvent's (-Drainer +rollout):\n%s", diff)
	}
	if got := len(log.ofType(EventRecovered)); got != 3 {
		t.Errorf("%d Recovered events, want 3", got)
	}
	// The status the rollout carries is the one RolloutStatus reads: each
	// DomainDone one domain further, the result's all done, not running.
	var done []int
	for _, e := range log.ofType(EventDomainDone) {
		if e.Status == nil {
			t.Fatalf("DomainDone of %s without a status", e.Domain)
		}
		done = append(done, e.Status.Done)
		if !e.Status.Running || e.Status.LockName == "" || e.Status.LockHolder == "" {
			t.Errorf("DomainDone of %s: running %v, Lease %q held by %q; want running, holding its Lease", e.Domain, e.Status.Running, e.Status.LockName, e.Status.LockHolder)
		}
	}
	if diff := cmp.Diff([]int{1, 2, 3}, done); diff != "" {
		t.Errorf("domains done in the DomainDone events' statuses (-want +got):\n%s", diff)
	}
	if started := log.ofType(EventRolloutStarted); len(started) != 1 || started[0].Status == nil || started[0].Status.Done != 0 {
		t.Errorf("RolloutStarted %+v, want a status with nothing done", started)
	}
	read, err := d.RolloutStatus(ctx, RolloutOptions{ID: "kubelet-1.37"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == nil {
		t.Fatal("the result has no status")
	}
	for _, st := range []*RolloutStatus{res.Status, read} {
		st.Time, st.LockNamespace, st.LockName, st.LockHolder, st.LockAcquiredAt, st.LockRenewedAt, st.LockDuration = time.Time{}, "", "", "", nil, nil, 0
		st.ETA, st.ETAPerDomain, st.ETADomainsLeft, st.ETASamples = nil, 0, 0, 0
	}
	if diff := cmp.Diff(read, res.Status); diff != "" {
		t.Errorf("the result's status and RolloutStatus's after the rollout (-read +result):\n%s", diff)
	}
	if !res.Status.Completed || res.Status.Running || res.Status.Done != 3 {
		t.Errorf("the result's status: completed %v, running %v, %d done; want completed, not running, 3 done", res.Status.Completed, res.Status.Running, res.Status.Done)
	}
}

func TestRolloutWaitsForRecoveryBeforeNextDomain(t *testing.T) {
	ctx := testContext(t)
	const domains, nodesPer, size = 2, 1, 2
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Rollout(ctx, RolloutOptions{}) // no upgrade step: the group comes back on its own below
		done <- err
	}()
	w := log.waitFor(t, "WaitingRecovery", func(e Event) bool { return e.Type == EventWaitingRecovery && e.Domain == "ud-1" })
	if !strings.Contains(w.Message, "group inference/llm-0") {
		t.Errorf("waiting message %q does not name the group", w.Message)
	}
	if got := fc.evicted(); len(got) != size {
		t.Fatalf("evicted %v before ud-1 recovered; want only ud-1's %d pods", got, size)
	}
	// The group comes back, but the budget's status lags behind.
	for w := 0; w < size; w++ {
		p := lwsPod(0, w, size, "node-1-1", fc.nextUID("back"))
		if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	log.waitFor(t, "WaitingRecovery on the PDB", func(e Event) bool {
		return e.Type == EventWaitingRecovery && strings.Contains(e.Message, "PodDisruptionBudget inference/llm-leaders") && !strings.Contains(e.Message, "group")
	})
	if got := fc.evicted(); len(got) != size {
		t.Fatalf("ud-2 drained before the budget caught up: %v", got)
	}
	fc.setBudget(ctx, 1, 2)
	// ud-2's drain then needs its own group back too.
	log.waitFor(t, "WaitingRecovery of ud-2", func(e Event) bool { return e.Type == EventWaitingRecovery && e.Domain == "ud-2" })
	fc.recreateGroup(ctx, 1, size, 2, nodesPer, domains)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRolloutCancelledInPhase2ResumesWithoutEvictingOutsideItsPlans(t *testing.T) {
	const domains, nodesPer, size = 3, 2, 4
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	// A loaded machine: the node watch delivers ud-2's cordons 1 s late,
	// after the cancel (issue 38: the stopped rollout's informers, ended
	// with its context, never showed them, and its status read ud-2
	// Pending). The status must wait for what the rollout patched.
	fc.client.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := fc.client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		delayed := map[string]bool{}
		return true, watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			if n, ok := ev.Object.(*corev1.Node); ok && strings.HasPrefix(n.Name, "node-2-") && n.Annotations[udrain.CordonedByAnnotation] != "" && !delayed[n.Name] {
				delayed[n.Name] = true
				time.Sleep(time.Second)
			}
			return ev, true
		}), nil
	})
	upgrade := func(ctx context.Context, dom topology.Domain) error {
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, size, idx, nodesPer, domains)
		return nil
	}
	var mu sync.Mutex
	var planned []types.UID
	collect := func(res *RolloutResult) {
		mu.Lock()
		defer mu.Unlock()
		for _, dom := range res.Domains {
			if dom.Plan != nil {
				for _, p := range dom.Plan.Pods() {
					planned = append(planned, p.UID)
				}
			}
		}
	}

	// Run 1: cancelled while phase 2 of ud-2 runs, after its first worker.
	ctx1, cancel := context.WithCancel(testContext(t))
	fc.onEvict = func(ns, name string, dryRun bool) error {
		if name == "llm-1-2" && !dryRun {
			cancel()
		}
		return nil
	}
	d, err := New(fc.client, Options{Backoff: slowBackoff, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	res1, err := d.Rollout(ctx1, RolloutOptions{ID: "r1", Upgrade: upgrade})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run 1: err = %v, want context.Canceled", err)
	}
	collect(res1)
	// The stopped run's status says where it stopped, as RolloutStatus
	// would read it once its Lease is gone.
	if st := res1.Status; st == nil {
		t.Error("run 1: no status in its result")
	} else {
		var states []DomainState
		for _, p := range st.Domains {
			states = append(states, p.State)
		}
		// Phase 1 or 2: the view may not show the last evictions yet.
		if diff := cmp.Diff([]DomainState{StateDone, StateStopped, StatePending}, states); diff != "" || st.Running ||
			st.Domains[1].Stage != StagePhase2 && st.Domains[1].Stage != StagePhase1 {
			t.Errorf("run 1's status: running %v, ud-2 at %q, states (-want +got):\n%s", st.Running, st.Domains[1].Stage, diff)
		}
	}
	fc.onEvict = nil
	before := len(fc.uids)
	n, _ := fc.client.CoreV1().Nodes().Get(context.Background(), "node-2-1", metav1.GetOptions{})
	if !n.Spec.Unschedulable {
		t.Fatalf("ud-2 is not cordoned after the cancel")
	}

	// Run 2, same ID: ud-1 is skipped, ud-2 continues, ud-3 follows.
	log := newEventLog()
	d2, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	res2, err := d2.Rollout(testContext(t), RolloutOptions{ID: "r1", Upgrade: upgrade})
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	collect(res2)
	if res2.Domains[0].State != StateSkipped || res2.Domains[1].State != StateDone {
		t.Errorf("run 2 domains: %+v", res2.Domains)
	}
	inPlan := map[types.UID]bool{}
	for _, u := range planned {
		inPlan[u] = true
	}
	seen := map[types.UID]bool{}
	for _, u := range fc.uids {
		if !inPlan[u] {
			t.Errorf("evicted %s, which no plan named", u)
		}
		if seen[u] {
			t.Errorf("evicted %s twice", u)
		}
		seen[u] = true
	}
	if len(fc.uids) != domains*size {
		t.Errorf("evicted %d pods in all, want %d (run 1: %d)", len(fc.uids), domains*size, before)
	}
	if got := res2.Domains[1].Plan; len(got.Phase1) != 0 || len(got.Phase2) != 2 {
		t.Errorf("resumed ud-2 plan: phase1 %v phase2 %v; want only the two workers left", keys(got.Phase1), keys(got.Phase2))
	}
	nodes, _ := fc.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			t.Errorf("node %s still cordoned", n.Name)
		}
	}
}

func TestRolloutLeavesForeignCordonsAlone(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 2, 2)...)
	n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-2", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	if _, err := fc.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := newEventLog()
	d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	_, err := d.Rollout(ctx, RolloutOptions{Upgrade: func(ctx context.Context, dom topology.Domain) error {
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, 2, idx, 2, 2)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ = fc.client.CoreV1().Nodes().Get(ctx, "node-1-2", metav1.GetOptions{})
	if !n.Spec.Unschedulable {
		t.Errorf("a node cordoned by someone else was uncordoned")
	}
	left := log.ofType(EventLeftCordoned)
	if len(left) != 1 || left[0].Node != "node-1-2" {
		t.Errorf("LeftCordoned events %v", eventTypes(left))
	}
}

// A rollout stopped after draining a domain (here: its upgrade step
// failed) leaves that domain's groups Pending. Resumed, the domain has
// nothing left to evict, but recovery must still wait for those groups
// before the next domain is drained.
func TestResumedDomainWaitsForItsStrandedGroups(t *testing.T) {
	const domains, nodesPer, size = 3, 1, 2
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	ctx := testContext(t)
	strandGroupOfUD2(t, ctx, fc, domains, nodesPer, size)
	before := len(fc.evicted())

	log := newEventLog()
	d2, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	done := resumeStrandedUD2(t, ctx, fc, d2, log, RolloutOptions{ID: "r"})
	if got := fc.evicted()[before:]; len(got) != 0 {
		t.Fatalf("evicted %v while ud-2's group was still Pending", got)
	}
	// The group is scheduled back into ud-2 and becomes Ready.
	for w := 0; w < size; w++ {
		fc.deleteBehindTheAPI(lwsPod(1, w, size, "", "").Name)
	}
	fc.recreateGroup(ctx, 1, size, 2, nodesPer, domains)
	if err := <-done; err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if got := fc.evicted()[before:]; len(got) != size {
		t.Errorf("run 2 evicted %v, want only ud-3's %d pods", got, size)
	}
}

// resumeStrandedUD2 resumes, with opts and an upgrade step that brings
// ud-3's group back, the rollout strandGroupOfUD2 stopped (3 domains of
// one node, groups of 2), and returns once it waits for ud-2's stranded
// group; the rollout's error comes on the channel.
func resumeStrandedUD2(t *testing.T, ctx context.Context, fc *fakeCluster, d *Drainer, log *eventLog, opts RolloutOptions) <-chan error {
	t.Helper()
	opts.Upgrade = func(ctx context.Context, dom topology.Domain) error {
		if dom.Name == "ud-3" {
			fc.recreateGroup(ctx, 2, 2, 3, 1, 3)
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Rollout(ctx, opts)
		done <- err
	}()
	log.waitFor(t, "WaitingRecovery for the stranded group", func(e Event) bool {
		return e.Type == EventWaitingRecovery && e.Domain == "ud-2" && strings.Contains(e.Message, "group inference/llm-1")
	})
	return done
}

// strandGroupOfUD2 runs a rollout that stops in ud-2's upgrade step, after
// its drain, and leaves ud-2's group (1) Pending, as its StatefulSets
// recreate it while ud-2 is cordoned.
func strandGroupOfUD2(t *testing.T, ctx context.Context, fc *fakeCluster, domains, nodesPer, size int) {
	t.Helper()
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	if _, err := d.Rollout(ctx, RolloutOptions{ID: "r", Upgrade: func(ctx context.Context, dom topology.Domain) error {
		if dom.Name == "ud-2" {
			return errors.New("firmware flash failed")
		}
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, size, idx, nodesPer, domains)
		return nil
	}}); err == nil || !strings.Contains(err.Error(), "firmware") {
		t.Fatalf("run 1: err = %v, want the upgrade step's failure", err)
	}
	for w := 0; w < size; w++ {
		p := lwsPod(1, w, size, "", fc.nextUID("pending"))
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// otherPool adds a pool of its own: node node-9-1 (domain ud-9) labelled
// and tainted pool=b, and LWS "other" of namespace pool-b (no budget of
// the rollout's workload selects it) with group 0 running there and group
// 1 Pending, as its node has no room: it may run only on pool b's nodes.
func otherPool(t *testing.T, ctx context.Context, fc *fakeCluster) {
	t.Helper()
	node := testNode("node-9-1", "ud-9")
	node.Labels["pool"] = "b"
	node.Spec.Taints = []corev1.Taint{{Key: "pool", Value: "b", Effect: corev1.TaintEffectNoSchedule}}
	if _, err := fc.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for g, nodeName := range []string{"node-9-1", ""} {
		p := lwsPod(g, 0, 1, nodeName, fc.nextUID("other"))
		p.Namespace, p.Name = "pool-b", fmt.Sprintf("other-%d", g)
		p.Labels[topology.LWSNameLabel] = "other"
		p.OwnerReferences = ownedBy("StatefulSet", p.Name)
		p.Spec.NodeSelector = map[string]string{"pool": "b"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoSchedule}}
		if nodeName == "" {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/4 nodes are available"}}}
		}
		if _, err := fc.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// A Pending group of another pool, which no node of the resumed domain
// takes (node selector, taint), is not the domain's stranded group: the
// resumed rollout and its status wait only for the domain's own. Both
// waited for the other pool's group before (until the recovery timeout).
func TestResumedDomainIgnoresAPendingGroupOfAnotherPool(t *testing.T) {
	const domains, nodesPer, size = 3, 1, 2
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	ctx := testContext(t)
	strandGroupOfUD2(t, ctx, fc, domains, nodesPer, size)
	otherPool(t, ctx, fc)
	ours := []string{"ud-1", "ud-2", "ud-3"}

	log := newEventLog()
	d2, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	st, err := d2.RolloutStatus(ctx, RolloutOptions{ID: "r", Domains: ours})
	if err != nil {
		t.Fatal(err)
	}
	down := map[string][]string{}
	for _, dp := range st.Domains {
		for _, g := range dp.Down {
			down[dp.Domain] = append(down[dp.Domain], g.ID.String())
		}
	}
	if diff := cmp.Diff(map[string][]string{"ud-2": {"inference/llm-1"}}, down); diff != "" {
		t.Errorf("status: groups down per domain (-want +got):\n%s", diff)
	}

	done := resumeStrandedUD2(t, ctx, fc, d2, log, RolloutOptions{ID: "r", Domains: ours, RecoveryTimeout: 20 * time.Second})
	// ud-2's own group comes back; the other pool's stays Pending.
	for w := 0; w < size; w++ {
		fc.deleteBehindTheAPI(lwsPod(1, w, size, "", "").Name)
	}
	fc.recreateGroup(ctx, 1, size, 2, nodesPer, domains)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run 2: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("run 2 still waits, for the other pool's Pending group; events: %v", eventMessages(log.all()))
	}
}

// A stranded group whose workload is deleted meanwhile (here: every pod of
// its namespace, as a namespace deletion does) has nothing to come back:
// the resumed rollout stops waiting for it, where it waited until its
// recovery timeout before.
func TestResumedDomainForgetsADeletedStrandedGroup(t *testing.T) {
	const domains, nodesPer, size = 3, 1, 2
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	ctx := testContext(t)
	strandGroupOfUD2(t, ctx, fc, domains, nodesPer, size)
	log := newEventLog()
	d2, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	done := make(chan error, 1)
	go func() {
		_, err := d2.Rollout(ctx, RolloutOptions{ID: "r", RecoveryTimeout: 20 * time.Second,
			Upgrade: func(context.Context, topology.Domain) error { return nil }})
		done <- err
	}()
	log.waitFor(t, "WaitingRecovery for the stranded group", func(e Event) bool {
		return e.Type == EventWaitingRecovery && e.Domain == "ud-2" && strings.Contains(e.Message, "group inference/llm-1")
	})
	// The workload is deleted: every pod of the namespace goes.
	pods, err := fc.client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		fc.deleteBehindTheAPI(p.Name)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run 2: %v, want done once the stranded group's workload is gone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run 2 still waits for a stranded group whose namespace has no pod left")
	}
}

// passedDeadline is a context whose deadline the test passes by hand
// (pass): from then on it is done, with context.DeadlineExceeded, as a
// context.WithTimeout whose time is up.
type passedDeadline struct {
	context.Context
	done chan struct{}
}

func newPassedDeadline(parent context.Context) *passedDeadline {
	return &passedDeadline{Context: parent, done: make(chan struct{})}
}

func (c *passedDeadline) pass()                 { close(c.done) }
func (c *passedDeadline) Done() <-chan struct{} { return c.done }
func (c *passedDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// deadlineOnceWaiting is ctx with a deadline that passes as soon as the
// call made with it reports waiting (EventWaitingRecovery, to the call's
// own sink): a deadline of the wall clock short enough for a test may pass
// on a busy machine while the call's informers still list, and end the
// call before it waits.
func deadlineOnceWaiting(ctx context.Context) context.Context {
	d := newPassedDeadline(ctx)
	var once sync.Once
	return withCallSink(d, func(_ context.Context, e Event) {
		if e.Type == EventWaitingRecovery {
			once.Do(d.pass)
		}
	})
}

func TestHealthAndWaitHealthy(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	// Waited is read on the Drainer's clock: a fake one, which moves only
	// when the test says.
	clk := clocktesting.NewFakeClock(time.Now())
	log := newEventLog()
	d, _ := New(fc.client, Options{Clock: clk, OnEvent: log.add})
	if got, err := d.Health(ctx); err != nil || !got.Healthy || len(reportWaiting(got)) != 0 || len(got.Domains) != 2 || len(got.Domains[0].Groups) != 1 || len(got.Domains[0].Budgets) != 1 {
		t.Fatalf("Health of a healthy cluster = %+v, %v", got, err)
	}
	// A worker of ud-2's group goes down.
	if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, "llm-1-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := d.Health(ctx, "ud-2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ud-2: group inference/llm-1: llm-1-1 missing; 1/2 members healthy"}, reportWaiting(got)); diff != "" {
		t.Errorf("Health (-want +got):\n%s", diff)
	}
	if g := got.Domains[0].Groups[0]; g.Healthy || g.Reason != health.ReasonMemberMissing || g.ReadyMembers != 1 || g.Size != 2 {
		t.Errorf("group status = %+v, want MemberMissing with 1 of 2 ready", g)
	}
	// The caller's deadline passes 300ms into the wait, once WaitHealthy
	// waits for the group (a real deadline of 300ms raced the wait's own
	// start on a loaded machine: Waited came out at 258ms).
	short := newPassedDeadline(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := d.WaitHealthy(short, "ud-2")
		waited <- err
	}()
	log.waitFor(t, "WaitingRecovery", func(e Event) bool { return e.Type == EventWaitingRecovery })
	clk.Step(300 * time.Millisecond)
	short.pass()
	var nh *RetryError
	if err := <-waited; !asReason(err, &nh, ReasonNotHealthy) || !errors.Is(err, context.DeadlineExceeded) || nh.Report.Healthy || !strings.Contains(nh.Error(), "llm-1") {
		t.Errorf("WaitHealthy = %v, want *RetryError (ReasonNotHealthy) naming llm-1 that unwraps to DeadlineExceeded", err)
	} else {
		// What it waited for and how long, as fields (a command line
		// words its own timeout from them) and in the message.
		if diff := cmp.Diff([]string{"ud-2"}, nh.Domains); diff != "" || nh.Waited != 300*time.Millisecond {
			t.Errorf("NotHealthy RetryError Domains (-want +got):\n%sWaited %v, want 300ms", diff, nh.Waited)
		}
		if !strings.HasPrefix(nh.Error(), "domain ud-2 not healthy after ") {
			t.Errorf("NotHealthy RetryError = %q, want it to start with the domain and the time waited", nh.Error())
		}
	}
	done := make(chan error, 1)
	go func() {
		r, err := d.WaitHealthy(ctx, "ud-2")
		if err == nil && !r.Healthy {
			err = fmt.Errorf("report not healthy: %+v", r)
		}
		done <- err
	}()
	p := lwsPod(1, 1, 2, "node-2-1", "back")
	if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("WaitHealthy after the worker came back: %v", err)
	}
}

// A group that appears unscheduled while WaitHealthy waits (another
// drain's replacements, Pending) is waited for too: the report WaitHealthy
// returns without an error is a healthy one.
func TestWaitHealthyWaitsForGroupsThatAppearWhileWaiting(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, "llm-1-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _ := New(fc.client, Options{})
	type result struct {
		r   *health.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := d.WaitHealthy(ctx, "ud-2")
		done <- result{r, err}
	}()
	// WaitHealthy is waiting for llm-1-1; a new group of the same workload
	// appears Pending, then llm-1-1 comes back.
	time.Sleep(200 * time.Millisecond)
	var pending []*corev1.Pod
	for w := range 2 {
		p := lwsPod(2, w, 2, "", fc.nextUID("pending"))
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		created, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, created)
	}
	if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, lwsPod(1, 1, 2, "node-2-1", "back"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		t.Fatalf("WaitHealthy returned while group llm-2 was Pending: healthy %t, %v, waiting %q", got.r != nil && got.r.Healthy, got.err, reportWaiting(got.r))
	case <-time.After(500 * time.Millisecond):
	}
	// llm-2 lands on ud-1 and is Ready; the budget counts its leader.
	fc.setBudget(ctx, 1, 3)
	for _, p := range pending {
		ready := lwsPod(2, 0, 2, "node-1-1", p.UID)
		ready.Name = p.Name
		ready.Labels = p.Labels
		if _, err := fc.client.CoreV1().Pods(testNS).Update(ctx, ready, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := <-done
	if got.err != nil || !got.r.Healthy || len(got.r.Unscheduled) != 0 {
		t.Fatalf("WaitHealthy = %+v, %v; want a healthy report with no unscheduled group", got.r, got.err)
	}
}

func TestRolloutRefusesADomainAnotherRolloutHolds(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-2-1", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	n.Annotations = map[string]string{udrain.CordonedByAnnotation: "kernel-6.12"}
	if _, err := fc.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := len(fc.mutations())
	d, _ := New(fc.client, Options{})
	_, err := d.Rollout(ctx, RolloutOptions{ID: "kubelet-1.37"})
	var ip *RetryError
	if !asReason(err, &ip, ReasonInProgress) || ip.By != "kernel-6.12" || ip.Node != "node-2-1" {
		t.Fatalf("err = %v, want *RetryError (ReasonInProgress) naming kernel-6.12 on node-2-1", err)
	}
	if got := fc.mutations()[before:]; len(got) != 0 {
		t.Errorf("the refused rollout changed the cluster: %v", got)
	}
}

// A group whose pods all wait unscheduled (a domain was drained and
// uncordoned by hand, the pods are Pending) is not healthy.
func TestHealthCountsUnscheduledGroups(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	for _, name := range []string{"llm-1", "llm-1-1"} {
		if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for w := 0; w < 2; w++ {
		p := lwsPod(1, w, 2, "", fc.nextUID("pending"))
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := New(fc.client, Options{})
	got, err := d.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"unscheduled: group inference/llm-1: llm-1 Pending, llm-1-1 Pending; 0/2 members healthy"}
	if diff := cmp.Diff(want, reportWaiting(got)); diff != "" {
		t.Errorf("Health (-want +got):\n%s", diff)
	}
}

// A replacement that took the name of a pod the disruption controller saw
// evicted but never saw go is not counted until its disruptedPods entry
// expires: recovery says so, and wakes up when it expires.
func TestRecoveryWaitsOutStaleDisruptedPodsEntries(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	// The entry expires in 3 s: time for Health's informers to sync on a
	// busy machine before it does (500 ms was close under the race
	// detector).
	evictedAt := time.Now().Add(-health.DisruptedPodTimeout + 3*time.Second)
	b, _ := fc.client.PolicyV1().PodDisruptionBudgets(testNS).Get(ctx, "llm-leaders", metav1.GetOptions{})
	b.Status.CurrentHealthy, b.Status.DisruptionsAllowed = 1, 0
	b.Status.DisruptedPods = map[string]metav1.Time{"llm-0": metav1.NewTime(evictedAt)}
	if _, err := fc.client.PolicyV1().PodDisruptionBudgets(testNS).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _ := New(fc.client, Options{})
	got, err := d.Health(ctx, "ud-1")
	if err != nil {
		t.Fatal(err)
	}
	if w := reportWaiting(got); len(w) != 1 || !strings.Contains(w[0], "still counts llm-0 as being evicted (status.disruptedPods) until") {
		t.Fatalf("Health = %q, want the stale disruptedPods entry named", w)
	}
	// WaitHealthy keeps waiting while the entry holds, and returns once the
	// controller, at expiry, counts the pod (no pod event in between).
	go func() {
		time.Sleep(time.Until(evictedAt.Add(health.DisruptedPodTimeout)))
		b.Status.CurrentHealthy, b.Status.DisruptionsAllowed, b.Status.DisruptedPods = 2, 1, nil
		_, _ = fc.client.PolicyV1().PodDisruptionBudgets(testNS).UpdateStatus(context.Background(), b, metav1.UpdateOptions{})
	}()
	if _, err := d.WaitHealthy(ctx, "ud-1"); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(evictedAt.Add(health.DisruptedPodTimeout)) {
		t.Errorf("recovered before the stale entry expired")
	}
}

// TestRecoveryWaitCoalescesEvents: a flood of pod events during a recovery
// wait costs one evaluation per recoveryEvery, not one per event. Without
// the pacing (every = 0), the same flood causes many more: the test can
// tell them apart. The pacing is 1 s here (100 ms in a rollout) and the
// flood lasts 2 s however many updates the machine makes in that time, so
// that a slow machine neither passes the unpaced check by luck nor makes
// the test outlast its context.
func TestRecoveryWaitCoalescesEvents(t *testing.T) {
	const pace, flood = time.Second, 2 * time.Second
	tests := []struct {
		name  string
		every time.Duration
		paced bool
	}{
		{"paced", pace, true},
		{"unpaced", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			const domains, nodesPer, size = 2, 1, 2
			fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
			log := newEventLog()
			d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var evals []time.Time
			d.s.recoveryEvery = tt.every
			d.s.evaluated = func() {
				mu.Lock()
				evals = append(evals, time.Now())
				mu.Unlock()
			}
			done := make(chan error, 1)
			go func() {
				_, err := d.Rollout(ctx, RolloutOptions{}) // ud-1's group never comes back
				done <- err
			}()
			log.waitFor(t, "WaitingRecovery", func(e Event) bool { return e.Type == EventWaitingRecovery && e.Domain == "ud-1" })

			// Change a pod of the other group for the flood's time, as
			// fast as the fake API takes it.
			start := time.Now()
			updates := 0
			for ; time.Since(start) < flood; updates++ {
				p, err := fc.client.CoreV1().Pods(testNS).Get(ctx, "llm-1", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				p.Annotations = map[string]string{"touch": fmt.Sprint(updates)}
				if _, err := fc.client.CoreV1().Pods(testNS).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(300 * time.Millisecond) // let the last events arrive
			end := time.Now()
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Rollout: %v, want context.Canceled", err)
			}

			mu.Lock()
			n := 0
			for _, e := range evals {
				if !e.Before(start) && !e.After(end) {
					n++
				}
			}
			mu.Unlock()
			limit := int(end.Sub(start)/pace) + 2
			t.Logf("%d evaluations in %s of %d pod updates", n, end.Sub(start).Round(time.Millisecond), updates)
			if tt.paced && n > limit {
				t.Errorf("%d evaluations in %s, want at most %d (one per %s)", n, end.Sub(start), limit, tt.every)
			}
			if !tt.paced && n <= limit {
				t.Errorf("without pacing only %d evaluations in %s of %d pod updates: the flood is too slow to tell pacing apart", n, end.Sub(start), updates)
			}
		})
	}
}

// TestRolloutWaitsForTheUnschedulableTaintToGo: after a domain's uncordon,
// the next domain's evictions wait until the node lifecycle controller
// (played here, 300 ms late) has taken its node.kubernetes.io/unschedulable
// taint off the uncordoned nodes, so that the groups evicted next can land
// there.
func TestRolloutWaitsForTheUnschedulableTaintToGo(t *testing.T) {
	ctx := testContext(t)
	const domains, nodesPer, size = 2, 1, 2
	objs := lwsCluster(domains, nodesPer, size)
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok && n.Name == "node-1-1" {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	fc := newFakeCluster(t, objs...)
	var mu sync.Mutex
	var removed, firstEviction time.Time
	fc.onEvict = func(_, name string, dryRun bool) error {
		mu.Lock()
		defer mu.Unlock()
		if !dryRun && strings.HasPrefix(name, "llm-1-") && firstEviction.IsZero() {
			firstEviction = time.Now()
		}
		return nil
	}
	// The node lifecycle controller: the taint goes 300 ms after the
	// node is uncordoned.
	go func() {
		for ctx.Err() == nil {
			n, err := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
			if err == nil && !n.Spec.Unschedulable && n.Annotations[udrain.UpgradedByAnnotation] != "" {
				time.Sleep(300 * time.Millisecond)
				n, _ = fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
				n.Spec.Taints = nil
				mu.Lock()
				removed = time.Now()
				mu.Unlock()
				if _, err := fc.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
					t.Errorf("removing the taint: %v", err)
				}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	_, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Order: OrderGiven, Domains: []string{"ud-1", "ud-2"}, Upgrade: func(ctx context.Context, dom topology.Domain) error {
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, size, idx, nodesPer, domains)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if removed.IsZero() || firstEviction.IsZero() || firstEviction.Before(removed) {
		t.Errorf("the taint went at %v, ud-2's first eviction at %v: want the eviction after", removed, firstEviction)
	}
}

func TestRolloutIDOf(t *testing.T) {
	id := RolloutIDOf("topology.udrain.dev/upgrade-domain", "./upgrade.sh 1.37")
	if !regexp.MustCompile(`^udrain-[0-9a-f]{10}$`).MatchString(id) {
		t.Fatalf("ID %q is not udrain- and 10 hex digits", id)
	}
	if _, err := (RolloutOptions{ID: id}).withDefaults(); err != nil {
		t.Errorf("RolloutOptions with ID %q: %v, want a valid ID", id, err)
	}
	for _, tc := range []struct {
		name         string
		parts        []string
		wantSameAsID bool
	}{
		{"same parts resume", []string{"topology.udrain.dev/upgrade-domain", "./upgrade.sh 1.37"}, true},
		{"another command starts fresh", []string{"topology.udrain.dev/upgrade-domain", "./upgrade.sh 1.38"}, false},
		{"another label starts fresh", []string{"topology.kubernetes.io/zone", "./upgrade.sh 1.37"}, false},
		{"parts do not run together", []string{"topology.udrain.dev/upgrade-domain./upgrade.sh", " 1.37"}, false},
		{"parts are ordered", []string{"./upgrade.sh 1.37", "topology.udrain.dev/upgrade-domain"}, false},
	} {
		if got := RolloutIDOf(tc.parts...) == id; got != tc.wantSameAsID {
			t.Errorf("%s: same ID = %v, want %v", tc.name, got, tc.wantSameAsID)
		}
	}
}
