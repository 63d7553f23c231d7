package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/health"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

// slowBackoff makes retries after a 429 wait an hour: a test that still
// finishes proves the retry came from the budget's watch, not a timer.
var slowBackoff = wait.Backoff{Duration: time.Hour, Factor: 1, Steps: 1 << 30}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDrainEvictsLeadersBeforeAnyWorker(t *testing.T) {
	ctx := testContext(t)
	// Two groups in ud-1 (so phase 1 has two leaders), one in ud-2; the
	// budget allows the two disruptions.
	objs := lwsCluster(2, 2, 4)
	objs = append(objs, lwsPod(9, 0, 3, "node-1-1", "g9-w0"), lwsPod(9, 1, 3, "node-1-2", "g9-w1"), lwsPod(9, 2, 3, "node-1-2", "g9-w2"))
	fc := newFakeCluster(t, objs...)
	fc.setBudget(ctx, 2, 3)
	d, err := New(fc.client, Options{Backoff: slowBackoff, AllowViolations: true})
	if err != nil {
		t.Fatal(err)
	}
	plan, res, err := d.Drain(ctx, "ud-1", DrainOptions{})
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	leaders := map[string]bool{}
	for _, p := range plan.Phase1 {
		leaders[p.String()] = true
	}
	if diff := cmp.Diff([]string{"inference/llm-0", "inference/llm-9"}, sorted(keys(plan.Phase1))); diff != "" {
		t.Errorf("phase 1 (-want +got):\n%s", diff)
	}
	got := fc.evicted()
	if len(got) != 7 {
		t.Fatalf("evicted %d pods, want 7: %v", len(got), got)
	}
	for i, key := range got {
		if i < 2 && !leaders[key] {
			t.Errorf("eviction %d was %s, a worker, before every leader was evicted (order %v)", i, key, got)
		}
	}
	if res.Pods.Phase1Evicted != 2 || res.Pods.Phase2Evicted != 5 {
		t.Errorf("result counts %+v, want 2 and 5 evicted", res.Pods)
	}
	if diff := cmp.Diff([]string{"node-1-1", "node-1-2"}, res.Cordoned); diff != "" {
		t.Errorf("cordoned (-want +got):\n%s", diff)
	}
	for _, n := range res.Cordoned {
		node, _ := fc.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if !node.Spec.Unschedulable || node.Annotations[udrain.CordonedByAnnotation] != "drain" {
			t.Errorf("node %s: unschedulable=%v annotations=%v", n, node.Spec.Unschedulable, node.Annotations)
		}
	}
}

func keys(pods []PlannedPod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.String()
	}
	return out
}

func TestBlockedPhase1HoldsPhase2UntilBudgetFrees(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(3, 2, 4)...)
	// A group elsewhere is down: the budget allows nothing.
	fc.setBudget(ctx, 0, 2)
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		_, res, err = d.Drain(ctx, "ud-1", DrainOptions{})
		done <- err
	}()
	blocked := log.waitFor(t, "Blocked", func(e Event) bool { return e.Type == EventBlocked })
	leader := topology.PodRef{Namespace: testNS, Name: "llm-0", UID: "g0-w0", Node: "node-1-1"}
	want := &BlockInfo{Reason: BlockRefused, BudgetRef: health.BudgetRef{Namespace: testNS, PDB: "llm-leaders"}, BudgetCounts: health.BudgetCounts{DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3},
		Pods: []topology.PodRef{leader}, Message: "The disruption budget llm-leaders needs 2 healthy pods and has 2 currently"}
	if diff := cmp.Diff(want, blocked.Block, cmpIgnoreSince); diff != "" {
		t.Errorf("block info (-want +got):\n%s", diff)
	}
	if !strings.Contains(blocked.Message, "llm-leaders") {
		t.Errorf("blocked message %q does not name the PDB", blocked.Message)
	}
	// While blocked, no worker may be touched. Give the drain every
	// chance to misbehave: wait for a retry cycle of the watch.
	fc.setBudget(ctx, 0, 2)
	time.Sleep(50 * time.Millisecond)
	if got := fc.evicted(); len(got) != 0 {
		t.Fatalf("pods evicted while phase 1 was blocked: %v", got)
	}
	for _, a := range fc.attempts {
		if a != "inference/llm-0" {
			t.Fatalf("eviction of %s attempted while the leader was blocked", a)
		}
	}
	// The other group recovers: the budget frees, the drain goes on alone.
	fc.setBudget(ctx, 1, 3)
	if err := <-done; err != nil {
		t.Fatalf("Drain after the budget freed: %v", err)
	}
	got := fc.evicted()
	if len(got) != 4 || got[0] != "inference/llm-0" {
		t.Errorf("evictions %v, want the leader first and then its 3 workers", got)
	}
	if len(log.ofType(EventUnblocked)) != 1 {
		t.Errorf("want one Unblocked event, got %d", len(log.ofType(EventUnblocked)))
	}
	if len(res.Blocks) != 1 || res.Blocks[0].PDB != "llm-leaders" || res.Blocks[0].Reason != BlockRefused || res.Blocks[0].Duration <= 0 ||
		!res.Blocks[0].Until.Equal(res.Blocks[0].Since.Add(res.Blocks[0].Duration.Duration())) ||
		!cmp.Equal(res.Blocks[0].Pods, []topology.PodRef{leader}) {
		t.Errorf("blocks = %+v, want one record of llm-leaders, until its since plus its duration, with the leader that waited", res.Blocks)
	}
}

var cmpIgnoreSince = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Since" }, cmp.Ignore())

func TestBlockedPastTimeoutIsTypedError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch time.Duration // how long each node patch (the cordon) takes
	}{
		{"quick cordon", 0},
		// The timeout counts from the cordon, as kubectl's from its
		// evictions: a cordon slower than the whole timeout (a loaded
		// server) leaves it all to the evictions (issue 38: a 300 ms
		// timeout passed in a 417 ms cordon, before any eviction was
		// refused, and the error had no Blocked RetryError).
		{"cordon slower than the timeout", 1200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { testBlockedPastTimeout(t, tc.patch) })
	}
}

func testBlockedPastTimeout(t *testing.T, patch time.Duration) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(3, 1, 2)...)
	fc.setBudget(ctx, 0, 2)
	if patch > 0 {
		fc.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			time.Sleep(patch)
			return false, nil, nil
		})
	}
	d, err := New(fc.client, Options{Helper: &drain.Helper{GracePeriodSeconds: -1, Timeout: time.Second}, Backoff: slowBackoff})
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := d.Drain(ctx, "ud-2", DrainOptions{ID: "maint-7"})
	var de *DomainError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want *DomainError", err)
	}
	if de.Domain != "ud-2" || de.ID != "maint-7" || de.Stage != StagePhase1 || de.Timeout != time.Second {
		t.Errorf("DomainError = %+v, want domain ud-2, ID maint-7, stage Phase1, timeout 1s", de)
	}
	if want := []string{"inference/llm-1", "inference/llm-1-1"}; !cmp.Equal(refStrings(de.Pending), want) {
		t.Errorf("pending %v, want %v (the leader waiting, its worker not started)", refStrings(de.Pending), want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v does not unwrap to context.DeadlineExceeded", err)
	}
	var be *RetryError
	if !asReason(err, &be, ReasonBlocked) {
		t.Fatalf("err = %v does not unwrap to a *RetryError (ReasonBlocked)", err)
	}
	if be.Block.PDB != "llm-leaders" || be.Block.CurrentHealthy != 2 || be.Block.DesiredHealthy != 2 || len(be.Block.Pods) != 1 || be.Block.Pods[0].Name != "llm-1" {
		t.Errorf("Blocked RetryError = %+v", be)
	}
	if len(fc.evicted()) != 0 {
		t.Errorf("evicted %v although blocked", fc.evicted())
	}
	if len(res.Blocks) != 1 || res.Blocks[0].PDB != "llm-leaders" || res.Blocks[0].Duration <= 0 || res.Blocks[0].Until.IsZero() {
		t.Errorf("blocks = %+v, want the record of llm-leaders's block", res.Blocks)
	}
	if res.Completed {
		t.Error("a drain that timed out says Completed")
	}
}

func TestMultiplePDBsStopsBeforePhase2(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 3)...)
	d, err := New(fc.client, Options{Backoff: slowBackoff})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.Plan(ctx, "ud-1")
	if err != nil || plan.Err() != nil {
		t.Fatalf("plan: %v / %v", err, plan.Err())
	}
	// A second budget over the leader appears after planning.
	extra := leaderPDB(2)
	extra.Name = "also-leaders"
	if _, err := fc.client.PolicyV1().PodDisruptionBudgets(testNS).Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = d.Execute(ctx, plan, DrainOptions{})
	var me *ClusterError
	if !asReason(err, &me, ReasonMultiplePDBs) || me.Pod.Name != "llm-0" {
		t.Fatalf("err = %v, want *ClusterError (ReasonMultiplePDBs) for llm-0", err)
	}
	for _, a := range fc.attempts {
		if a != "inference/llm-0" {
			t.Errorf("phase-2 pod %s touched after the multi-PDB error", a)
		}
	}
	// Planned again, the plan itself reports it before anything happens.
	plan, err = d.Plan(ctx, "ud-1")
	if err != nil {
		t.Fatal(err)
	}
	if !asReason(plan.Err(), &me, ReasonMultiplePDBs) {
		t.Errorf("plan.Err() = %v, want *ClusterError (ReasonMultiplePDBs)", plan.Err())
	}
}

func TestReplacementPodWithSameNameIsNotEvicted(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 3)...)
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.Plan(ctx, "ud-1")
	if err != nil {
		t.Fatal(err)
	}
	// Between plan and execution a worker is deleted (by its StatefulSet
	// controller, behind the fake's back) and a replacement made with the
	// same name and a new UID.
	fc.deleteBehindTheAPI("llm-0-2")
	repl := lwsPod(0, 2, 3, "node-1-1", "replacement-uid")
	if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, repl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := d.Execute(ctx, plan, DrainOptions{})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if diff := cmp.Diff([]string{"inference/llm-0", "inference/llm-0-1"}, sorted(fc.evicted())); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
	cur, err := fc.client.CoreV1().Pods(testNS).Get(ctx, "llm-0-2", metav1.GetOptions{})
	if err != nil || cur.UID != "replacement-uid" {
		t.Errorf("replacement pod: %v, %v; want it untouched", cur, err)
	}
	if res.Pods.Phase2AlreadyGone != 1 {
		t.Errorf("counts %+v, want the replaced pod counted as already gone in phase 2", res.Pods)
	}
}

func TestTerminatingPodIsWaitedOnNotEvicted(t *testing.T) {
	ctx := testContext(t)
	objs := lwsCluster(2, 1, 2)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "llm-0-1" {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			p.Finalizers = []string{"test/hold"}
		}
	}
	fc := newFakeCluster(t, objs...)
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		_, res, err = d.Drain(ctx, "ud-1", DrainOptions{})
		done <- err
	}()
	log.waitFor(t, "PhaseDone of phase 2", func(e Event) bool { return e.Type == EventPhaseDone && e.Stage == StagePhase2 })
	select {
	case err := <-done:
		t.Fatalf("drain finished (%v) while a terminating pod still exists", err)
	case <-time.After(20 * time.Millisecond):
	}
	// Its finalizer goes away and the pod is gone: the drain ends.
	if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, "llm-0-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, a := range fc.attempts {
		if a == "inference/llm-0-1" {
			t.Errorf("the terminating pod was evicted again")
		}
	}
	if res.Pods.Phase2AlreadyTerminating != 1 {
		t.Errorf("counts %+v, want 1 already terminating in phase 2", res.Pods)
	}
}

func TestDryRun(t *testing.T) {
	for _, tc := range []struct {
		strategy    string
		wantMutates []string
	}{
		{"client", nil},
		{"server", []string{"patch nodes", "create pods/eviction", "create pods/eviction"}},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			h := KubectlDefaults()
			h.DryRunStrategy = dryRunStrategy(tc.strategy)
			log := newEventLog()
			d, err := New(fc.client, Options{Helper: h, OnEvent: log.add})
			if err != nil {
				t.Fatal(err)
			}
			_, res, err := d.Drain(ctx, "ud-1", DrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantMutates, fc.mutations()); diff != "" {
				t.Errorf("mutating requests (-want +got):\n%s", diff)
			}
			if len(fc.evicted()) != 0 {
				t.Errorf("dry run evicted %v", fc.evicted())
			}
			leader := topology.PodRef{Namespace: testNS, Name: "llm-0", UID: "g0-w0", Node: "node-1-1"}
			worker := topology.PodRef{Namespace: testNS, Name: "llm-0-1", UID: "g0-w1", Node: "node-1-1"}
			want := []PlannedPod{{PodRef: leader, Stage: StagePhase1, DryRun: WouldEvict, DryRunMessage: "would evict"}, {PodRef: worker, Stage: StagePhase2, DryRun: WouldEvict, DryRunMessage: "would evict"}}
			if diff := cmp.Diff(want, res.DryRunPods, cmpopts.IgnoreFields(PlannedPod{}, "PDBs", "Group", "Leader")); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if res.DryRun != tc.strategy || !res.Completed {
				t.Errorf("result dryRun %q completed %v, want %q and true", res.DryRun, res.Completed, tc.strategy)
			}
			// Every event of a dry run says so, the cordon of a server
			// dry run above all.
			for _, e := range log.all() {
				if e.DryRun != tc.strategy {
					t.Errorf("event %s %s has dryRun %q, want %q", e.Type, e.Message, e.DryRun, tc.strategy)
				}
			}
			if tc.strategy == "server" {
				if c := log.ofType(EventCordoned); len(c) != 1 || !strings.Contains(c[0].Message, "would be cordoned") {
					t.Errorf("cordon events of a server dry run: %v", eventMessages(c))
				}
			}
			// Every mutating request carries dryRun=All (the fake clientset
			// does not honour it; the API server does).
			for _, a := range fc.client.Actions() {
				var dry []string
				switch a := a.(type) {
				case k8stesting.PatchActionImpl:
					dry = a.PatchOptions.DryRun
				case k8stesting.CreateActionImpl:
					if ev, ok := a.Object.(*policyv1.Eviction); ok && ev.DeleteOptions != nil {
						dry = ev.DeleteOptions.DryRun
					}
				default:
					continue
				}
				if diff := cmp.Diff([]string{metav1.DryRunAll}, dry); diff != "" {
					t.Errorf("%s %s without dryRun=All", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		domain  string
		wantErr any
	}{
		{"unknown domain", Options{}, "ud-9", new(*topology.UnknownDomainError)},
		{"empty domain", Options{}, "", new(*udrain.ConfigError)},
		{"negative timeout", Options{Helper: &drain.Helper{Timeout: -time.Second}}, "ud-1", new(*udrain.ConfigError)},
		{"invalid selector", Options{Helper: &drain.Helper{PodSelector: "a in (b"}}, "ud-1", new(*udrain.ConfigError)},
		{"negative concurrency", Options{Concurrency: -1}, "ud-1", new(*udrain.ConfigError)},
		{"DisableEviction with an Evictor", Options{Helper: &drain.Helper{DisableEviction: true}, Evictor: Evictor(func(context.Context, PlannedPod, metav1.DeleteOptions) error { return nil })}, "ud-1", new(*udrain.ConfigError)},
		{"informers without pods", Options{Informers: &clusterinformers.Set{}}, "ud-1", new(*udrain.ConfigError)},
		{"unlabeled node", Options{}, "ud-1", new(*topology.UnlabeledNodesError)},
		{"refused pod", Options{}, "ud-2", new(*ClusterError)},
		{"contract violation", Options{}, "ud-3", new(*topology.ContractError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			objs := lwsCluster(3, 1, 2)
			if tc.name == "unlabeled node" {
				objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stray"}})
			}
			// ud-2 holds a pod with no controller (kubectl refuses it
			// without --force); ud-3's leader has lost its budget because
			// a worker label moved (contract: unprotected leader).
			for _, o := range objs {
				if p, ok := o.(*corev1.Pod); ok {
					if p.Name == "llm-1-1" {
						p.OwnerReferences = nil
					}
					if p.Name == "llm-2" {
						p.Labels[topology.LWSNameLabel+"-x"] = "y"
						p.Labels[topology.LWSWorkerIndexLabel] = "0"
						delete(p.Labels, topology.LWSNameLabel)
						p.Labels[topology.LWSNameLabel] = "llm"
						p.Labels["pdb-excluded"] = "true"
					}
				}
			}
			fc := newFakeCluster(t, objs...)
			if tc.name == "contract violation" {
				b, _ := fc.client.PolicyV1().PodDisruptionBudgets(testNS).Get(ctx, "llm-leaders", metav1.GetOptions{})
				b.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "pdb-excluded", Operator: metav1.LabelSelectorOpDoesNotExist}}
				if _, err := fc.client.PolicyV1().PodDisruptionBudgets(testNS).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			before := len(fc.mutations())
			d, err := New(fc.client, tc.opts)
			if err == nil {
				_, _, err = d.Drain(ctx, tc.domain, DrainOptions{})
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.As(err, tc.wantErr) {
				t.Fatalf("err = %T %v, want %T", err, err, tc.wantErr)
			}
			if got := fc.mutations()[before:]; len(got) != 0 {
				t.Errorf("bad input changed the cluster: %v", got)
			}
			if msg := err.Error(); len(msg) < 20 {
				t.Errorf("error %q says too little", msg)
			}
		})
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	failures := 2
	fc.onEvict = func(ns, name string, dryRun bool) error {
		if failures > 0 && !dryRun {
			failures--
			return apierrors.NewServiceUnavailable("apiserver is restarting")
		}
		return nil
	}
	log := newEventLog()
	d, err := New(fc.client, Options{Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 100}, OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Drain(ctx, "ud-1", DrainOptions{}); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if n := len(log.ofType(EventRetrying)); n != 2 {
		t.Errorf("%d Retrying events, want 2", n)
	}
	if len(fc.evicted()) != 2 {
		t.Errorf("evicted %v", fc.evicted())
	}
}

// An eviction refused for good fails the domain at its first eviction
// (allowed in the preflight, refused for real): a Forbidden one is a
// *PermissionError (ReasonForbidden) naming the pod; another (an invalid
// request) is an error of no group, with the same text.
func TestRefusedEvictionFailsTheDomain(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refusal    func(name string) error
		permission bool
		want       string
	}{
		{"forbidden", func(name string) error {
			return apierrors.NewForbidden(podsGVR.GroupResource(), name, fmt.Errorf("denied by policy"))
		}, true, `evicting pod inference/llm-0: pods "llm-0" is forbidden: denied by policy`},
		{"bad request", func(string) error { return apierrors.NewBadRequest("no such field") }, false, "evicting pod inference/llm-0: no such field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			refusal := tc.refusal("llm-0")
			fc.onEvict = func(ns, name string, dryRun bool) error {
				if dryRun {
					return nil
				}
				return refusal
			}
			d, err := New(fc.client, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = d.Drain(ctx, "ud-1", DrainOptions{})
			var de *DomainError
			var pe *PermissionError
			type got struct {
				Stage        Stage
				Permission   bool
				Pod          topology.PodRef
				Wraps        bool
				Message      string
				OtherGroup   bool
				EvictionsTry int
			}
			g := got{Permission: asReason(err, &pe, ReasonForbidden), Wraps: errors.Is(err, refusal),
				OtherGroup: errors.Is(err, &ClusterError{}) || errors.Is(err, &RetryError{}), EvictionsTry: len(fc.attempts)}
			if errors.As(err, &de) {
				g.Stage, g.Message = de.Stage, de.Err.Error()
			}
			if pe != nil {
				g.Pod = topology.PodRef{Namespace: pe.Pod.Namespace, Name: pe.Pod.Name}
			}
			want := got{Stage: StagePhase1, Permission: tc.permission, Wraps: true, Message: tc.want, EvictionsTry: 2}
			if tc.permission {
				want.Pod = topology.PodRef{Namespace: "inference", Name: "llm-0"}
			}
			// EvictionsTry: the preflight and the leader; phase 2 must not
			// start after a phase-1 failure.
			if diff := cmp.Diff(want, g); diff != "" {
				t.Errorf("err = %v (-want +got):\n%s", err, diff)
			}
		})
	}
}

func TestRefusedListFailsFastWithPermissionError(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	fc.client.PrependReactor("list", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(pdbsGVR.GroupResource(), "", fmt.Errorf(`User "system:serviceaccount:ops:udrain" cannot list resource "poddisruptionbudgets"`))
	})
	d, _ := New(fc.client, Options{})
	start := time.Now()
	_, err := d.Plan(ctx, "ud-1")
	var pe *PermissionError
	if !errors.As(err, &pe) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "drainer.yaml") {
		t.Fatalf("err = %v, want *PermissionError wrapping Forbidden and naming the role", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s to give up", took)
	}
}

func TestNodeDeletedMidDrainIsReported(t *testing.T) {
	ctx := testContext(t)
	objs := lwsCluster(2, 2, 2)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "llm-0-1" {
			now := metav1.Now()
			p.DeletionTimestamp = &now // terminating: the drain waits for it
			p.Finalizers = []string{"test/hold"}
		}
	}
	fc := newFakeCluster(t, objs...)
	log := newEventLog()
	d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	done := make(chan *Result, 1)
	go func() {
		_, res, err := d.Drain(ctx, "ud-1", DrainOptions{})
		if err != nil {
			t.Errorf("Drain: %v", err)
		}
		done <- res
	}()
	log.waitFor(t, "PhaseDone of phase 2", func(e Event) bool { return e.Type == EventPhaseDone && e.Stage == StagePhase2 })
	// The node holding the terminating pod is deleted; then the pod
	// garbage collector removes its pod.
	if err := fc.client.CoreV1().Nodes().Delete(ctx, "node-1-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "NodeGone", func(e Event) bool { return e.Type == EventNodeGone && e.Node == "node-1-2" })
	if err := fc.client.CoreV1().Pods(testNS).Delete(ctx, "llm-0-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if diff := cmp.Diff([]string{"node-1-2"}, res.NodesGone); diff != "" {
		t.Errorf("NodesGone (-want +got):\n%s", diff)
	}
}

func TestMissingEvictionPermissionStopsBeforeTheCordon(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	fc.onEvict = func(ns, name string, dryRun bool) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, name, fmt.Errorf("RBAC: not allowed"))
	}
	d, _ := New(fc.client, Options{})
	_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
	var pe *PermissionError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *PermissionError", err)
	}
	n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
	if n.Spec.Unschedulable {
		t.Error("the node was cordoned although udrain may not evict")
	}
}

// A missing permission to patch nodes stops the drain at its first change,
// the cordon, with a *PermissionError; nothing is cordoned or evicted. No
// dry-run patch is sent to find it out beforehand.
func TestMissingNodePermissionStopsAtTheCordon(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 2, 2)...)
	var dryRunPatches int
	fc.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if len(a.(k8stesting.PatchActionImpl).PatchOptions.DryRun) > 0 {
			dryRunPatches++
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, a.(k8stesting.PatchAction).GetName(), fmt.Errorf("RBAC: not allowed"))
	})
	d, _ := New(fc.client, Options{})
	_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
	var pe *PermissionError
	var de *DomainError
	if !errors.As(err, &pe) || !errors.As(err, &de) || de.Stage != StageCordon {
		t.Fatalf("err = %v, want a DomainError at Cordon wrapping a *PermissionError", err)
	}
	if !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("err %q does not say nothing was changed", err)
	}
	if got := fc.evicted(); len(got) != 0 {
		t.Errorf("evicted %v without the right to cordon", got)
	}
	if dryRunPatches != 0 {
		t.Errorf("%d dry-run node patches, want none (the cordon is the first change)", dryRunPatches)
	}
}

// A block names the pods the budget does not count healthy and their
// nodes, and for a leader the members of its group that are down: a group
// down on a node gone offline (issue 24's GPU node drill) reads "llm-0 on
// node node-1-1 (NotReady)", or, when the node is a worker's, names the
// worker and its node under the leader.
func TestBlockNamesTheUnhealthyPodsAndTheirNodes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodesPer    int      // nodes per domain: with 2, group 0's worker runs on node-1-2
		offline     string   // a node made NotReady (Ready Unknown)
		unready     []string // pods made not Ready
		terminating bool     // the leader is being deleted
		want        []health.BudgetPod
		wantText    string
	}{
		{name: "its node offline", nodesPer: 1, offline: "node-1-1", unready: []string{"llm-0"},
			want:     []health.BudgetPod{{Pod: topology.PodRef{Namespace: testNS, Name: "llm-0"}, Node: "node-1-1", NodeNotReady: true}},
			wantText: "not healthy: inference/llm-0 on node node-1-1 (NotReady)"},
		{name: "being deleted on a Ready node", nodesPer: 1, unready: []string{"llm-0"}, terminating: true,
			want:     []health.BudgetPod{{Pod: topology.PodRef{Namespace: testNS, Name: "llm-0"}, Node: "node-1-1", Terminating: true}},
			wantText: "not healthy: inference/llm-0 on node node-1-1, terminating"},
		{name: "its worker's node offline", nodesPer: 2, offline: "node-1-2", unready: []string{"llm-0", "llm-0-1"},
			want: []health.BudgetPod{{Pod: topology.PodRef{Namespace: testNS, Name: "llm-0"}, Node: "node-1-1",
				Down: []health.BudgetPod{{Pod: topology.PodRef{Namespace: testNS, Name: "llm-0-1"}, Node: "node-1-2", NodeNotReady: true}}}},
			wantText: "not healthy: inference/llm-0 on node node-1-1 (its group's members down: inference/llm-0-1 on node node-1-2 (NotReady))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := lwsCluster(3, tc.nodesPer, 2)
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.Node:
					if o.Name == tc.offline {
						o.Status.Conditions[0].Status = corev1.ConditionUnknown
					}
				case *corev1.Pod:
					if slices.Contains(tc.unready, o.Name) {
						kube.SetCondition(o, corev1.PodReady, corev1.ConditionFalse)
					}
					if o.Name == "llm-0" && tc.terminating {
						now := metav1.Now()
						o.DeletionTimestamp, o.Finalizers = &now, []string{"example.com/hold"}
					}
				}
			}
			ctx := testContext(t)
			fc := newFakeCluster(t, objs...)
			fc.setBudget(ctx, 0, 2)
			d, err := New(fc.client, Options{Helper: &drain.Helper{GracePeriodSeconds: -1, Timeout: time.Second}, Backoff: slowBackoff})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = d.Drain(ctx, "ud-2", DrainOptions{})
			var be *RetryError
			if !asReason(err, &be, ReasonBlocked) {
				t.Fatalf("err = %v, want a *RetryError (ReasonBlocked)", err)
			}
			if diff := cmp.Diff(tc.want, be.Block.Unhealthy); diff != "" {
				t.Errorf("unhealthy pods of the budget (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("err %q does not say %q", err, tc.wantText)
			}
			if len(fc.evicted()) != 0 {
				t.Errorf("evicted %v although blocked", fc.evicted())
			}
		})
	}
}
