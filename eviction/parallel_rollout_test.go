package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// parallelCluster is four full domains (one 8-GPU node each, holding
// group llm-<d-1> of two 4-GPU pods) and the budget llm-leaders over the
// leaders with maxUnavailable.
func parallelCluster(maxUnavailable int32) []runtime.Object {
	var objs []runtime.Object
	for d := 1; d <= 4; d++ {
		objs = append(objs, destNode(d, 1, 8))
		objs = append(objs, destGroup(d-1, 2, 4, fmt.Sprintf("node-%d-1", d))...)
	}
	pdb := leaderPDB(4)
	mu := intstr.FromInt32(maxUnavailable)
	pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = nil, &mu
	pdb.Status.DesiredHealthy, pdb.Status.DisruptionsAllowed = 4-maxUnavailable, maxUnavailable
	return append(objs, pdb)
}

// budgetKeeper plays the disruption controller for parallelCluster's
// budget: its status counts the Ready leaders.
func (fc *fakeCluster) keepBudget(ctx context.Context, maxUnavailable int32) {
	fc.t.Helper()
	pods, err := fc.client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		fc.t.Fatal(err)
	}
	var healthy int32
	for _, p := range pods.Items {
		if p.Labels[topology.LWSWorkerIndexLabel] == "0" && p.DeletionTimestamp == nil {
			healthy++
		}
	}
	fc.setBudget(ctx, max(healthy-(4-maxUnavailable), 0), healthy)
}

// stepGate is an upgrade step that records how many domains are in it
// at once; each waits (up to a bound) for width domains to be in it, so
// that a rollout running width domains at once shows it, then the
// domain's group comes back on its node.
type stepGate struct {
	fc    *fakeCluster
	width int
	mu    sync.Mutex
	in    int
	most  int
	order []string
	full  chan struct{}
	maxU  int32
}

func (g *stepGate) step(ctx context.Context, dom topology.Domain) error {
	g.mu.Lock()
	g.in++
	g.most = max(g.most, g.in)
	g.order = append(g.order, dom.Name)
	if g.in == g.width {
		close(g.full)
		g.full = make(chan struct{})
	}
	full := g.full
	g.mu.Unlock()
	select {
	case <-full:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	g.in--
	g.mu.Unlock()
	d := domainIndex(dom.Name)
	for w := range 2 {
		p := withGPUs(lwsPod(d-1, w, 2, fmt.Sprintf("node-%d-1", d), g.fc.nextUID(fmt.Sprintf("g%d-w%d", d-1, w))), 4)
		if _, err := g.fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	g.fc.keepBudget(ctx, g.maxU)
	return nil
}

// TestParallelRolloutKeepsToTheBudget rolls four full domains under a
// budget over the leaders: with maxUnavailable 2 and ParallelAuto, two
// domains are in their upgrade step at once, never three; each pod is
// evicted once; the budget holds the others back before their cordon.
// With maxUnavailable 1, or without Parallel, one at a time.
func TestParallelRolloutKeepsToTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name           string
		maxUnavailable int32
		parallel       int
		wantMost       int
		wantPlanned    int
		wantHeld       bool
	}{
		{name: "auto, two allowed", maxUnavailable: 2, parallel: ParallelAuto, wantMost: 2, wantPlanned: 2, wantHeld: true},
		{name: "auto, one allowed", maxUnavailable: 1, parallel: ParallelAuto, wantMost: 1, wantPlanned: 1, wantHeld: true},
		{name: "three asked, two allowed", maxUnavailable: 2, parallel: 3, wantMost: 2, wantPlanned: 2, wantHeld: true},
		{name: "serial", maxUnavailable: 2, wantMost: 1, wantPlanned: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, parallelCluster(tc.maxUnavailable)...)
			log := newEventLog()
			d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
			if err != nil {
				t.Fatal(err)
			}
			gate := &stepGate{fc: fc, width: tc.wantMost, full: make(chan struct{}), maxU: tc.maxUnavailable}
			res, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Parallel: tc.parallel, Upgrade: gate.step, NoLock: true})
			if err != nil {
				t.Fatalf("Rollout: %v", err)
			}
			if gate.most != tc.wantMost {
				t.Errorf("%d domains in the upgrade step at once (order %v), want %d", gate.most, gate.order, tc.wantMost)
			}
			if res.MaxInFlight != tc.wantPlanned {
				t.Errorf("plan: %d domains in flight at most, want %d (domains %+v)", res.MaxInFlight, tc.wantPlanned, res.Domains)
			}
			// More asked than allowed is a cap, said in a warning.
			limited := slices.ContainsFunc(res.Findings, func(f topology.Finding) bool {
				return f.Code == topology.FindingParallelLimited && f.Severity == udrain.SeverityWarning && strings.Contains(f.Message, "3 domains at once asked for, but the budgets and the upgraded room allow at most 2")
			})
			if want := tc.parallel == 3; limited != want {
				t.Errorf("a ParallelLimited warning: %v, want %v; findings %+v", limited, want, res.Findings)
			}
			seen := map[types.UID]bool{}
			for _, u := range fc.uids {
				if seen[u] {
					t.Errorf("pod %s evicted twice", u)
				}
				seen[u] = true
			}
			if len(fc.uids) != 8 {
				t.Errorf("%d evictions, want 8: %v", len(fc.uids), fc.evicted())
			}
			// The budget was never refused: the plan held domains back
			// before their cordon, not a 429 after it.
			if blocked := log.ofType(EventBlocked); len(blocked) > 0 {
				t.Errorf("%d Blocked events, want none: the rollout waits before the cordon: %v", len(blocked), eventMessages(blocked))
			}
			held := log.ofType(EventDomainHeld)
			if tc.wantHeld != (len(held) > 0) {
				t.Errorf("%d DomainHeld events, want some: %v", len(held), tc.wantHeld)
			}
			budget := 0
			for _, e := range held {
				switch {
				case e.Hold == nil:
					t.Errorf("DomainHeld without a Hold: %+v", e)
				case e.Hold.Reason == BlockBudget && e.Hold.PDB == "llm-leaders" && e.Hold.Allowed == int(tc.maxUnavailable):
					budget++
				case e.Hold.Reason == BlockLimit && tc.parallel > 0:
				default:
					t.Errorf("DomainHeld %+v, want the budget llm-leaders (or the limit)", e.Hold)
				}
			}
			if tc.wantHeld && budget == 0 {
				t.Errorf("no DomainHeld event names the budget: %v", eventMessages(held))
			}
			if diff := cmp.Diff([]DomainState{StateDone, StateDone, StateDone, StateDone}, statusesOf(res)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			nodes, _ := fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			for _, n := range nodes.Items {
				if n.Spec.Unschedulable || n.Annotations[udrain.UpgradedByAnnotation] != "r1" {
					t.Errorf("node %s after the rollout: unschedulable %v, annotations %v", n.Name, n.Spec.Unschedulable, n.Annotations)
				}
			}
		})
	}
}

// TestParallelRolloutStopsTheOthersOnAnError: the first domain whose
// upgrade step fails stops the rollout; the other domain in flight is
// interrupted (left cordoned, for a resume), and nothing else starts.
func TestParallelRolloutStopsTheOthersOnAnError(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, parallelCluster(2)...)
	d, err := New(fc.client, Options{Backoff: slowBackoff})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	started := 0
	both := make(chan struct{})
	res, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Parallel: ParallelAuto, NoLock: true, Upgrade: func(ctx context.Context, dom topology.Domain) error {
		mu.Lock()
		started++
		if started == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-ctx.Done():
			return ctx.Err()
		}
		if dom.Name == "ud-1" {
			return fmt.Errorf("the reboot of %s failed", dom.Name)
		}
		<-ctx.Done()
		return ctx.Err()
	}})
	if err == nil || !errorsAs[*DomainError](err) {
		t.Fatalf("Rollout: %v, want the DomainError of ud-1", err)
	}
	if diff := cmp.Diff([]DomainState{StateFailed, StateInterrupted, StatePending, StatePending}, statusesOf(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	for _, name := range []string{"node-1-1", "node-2-1"} {
		n, _ := fc.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if !n.Spec.Unschedulable || n.Annotations[udrain.CordonedByAnnotation] != "r1" {
			t.Errorf("node %s: unschedulable %v, annotations %v; want it left cordoned by r1 for a resume", name, n.Spec.Unschedulable, n.Annotations)
		}
	}
	for _, name := range []string{"node-3-1", "node-4-1"} {
		n, _ := fc.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if n.Spec.Unschedulable {
			t.Errorf("node %s cordoned; want the domains not started left alone", name)
		}
	}

	// Run again with the same ID: both domains part-way resume at once,
	// whatever holds the others; no pod is evicted twice.
	evictedBefore := len(fc.uids)
	gate := &stepGate{fc: fc, width: 2, full: make(chan struct{}), maxU: 2}
	res, err = d.Rollout(ctx, RolloutOptions{ID: "r1", Parallel: ParallelAuto, NoLock: true, Upgrade: gate.step})
	if err != nil {
		t.Fatalf("resumed rollout: %v", err)
	}
	if diff := cmp.Diff([]string{"ud-1", "ud-2"}, gate.order[:2], cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("first domains upgraded by the resumed rollout (-want +got):\n%s", diff)
	}
	if gate.most != 2 {
		t.Errorf("%d domains in the upgrade step at once, want 2", gate.most)
	}
	seen := map[types.UID]bool{}
	for _, u := range fc.uids {
		if seen[u] {
			t.Errorf("pod %s evicted twice", u)
		}
		seen[u] = true
	}
	if len(fc.uids) != 8 {
		t.Errorf("%d evictions over both runs (%d in the first), want 8, each pod once: %v", len(fc.uids), evictedBefore, fc.evicted())
	}
	if diff := cmp.Diff([]DomainState{StateDone, StateDone, StateDone, StateDone}, statusesOf(res)); diff != "" {
		t.Errorf("statuses of the resumed rollout (-want +got):\n%s", diff)
	}
}

func errorsAs[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// statusesOf lists the states of a rollout's domains, in order.
func statusesOf(res *RolloutResult) []DomainState {
	var out []DomainState
	for _, o := range res.Domains {
		out = append(out, o.State)
	}
	return out
}

// TestPlanRolloutDomains: a parallel rollout's plan lists every domain
// in the rollout's order, Skipped for one a run with the same ID
// upgraded already, and each Pending one with when it starts (After,
// With) and what holds it back (HeldBy), as the plan's simulation finds
// it; one domain at a time, it lists no schedule.
func TestPlanRolloutDomains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int
		want     []string
	}{
		{name: "auto, two allowed", parallel: ParallelAuto, want: []string{
			"ud-1 Pending after - with [] plan [node-1-1] phase1 1 phase2 1 healthy true groups 1",
			"ud-2 Pending after - with [ud-1] plan [node-2-1] phase1 1 phase2 1 healthy true groups 1",
			"ud-3 Pending after ud-1 with [ud-2] held Budget plan [node-3-1] phase1 1 phase2 1 healthy true groups 1",
			"ud-4 Skipped after - with [] healthy true groups 1"}},
		{name: "serial", parallel: 1, want: []string{
			"ud-1 Pending after - with [] plan [node-1-1] phase1 1 phase2 1 healthy true groups 1",
			"ud-2 Pending after - with [] plan [node-2-1] phase1 1 phase2 1 healthy true groups 1",
			"ud-3 Pending after - with [] plan [node-3-1] phase1 1 phase2 1 healthy true groups 1",
			"ud-4 Skipped after - with [] healthy true groups 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := parallelCluster(2)
			for _, o := range objs {
				if n, ok := o.(*corev1.Node); ok && n.Name == "node-4-1" {
					metav1.SetMetaDataAnnotation(&n.ObjectMeta, udrain.UpgradedByAnnotation, "r1")
				}
			}
			fc := newFakeCluster(t, objs...)
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			plan, err := d.PlanRollout(testContext(t), RolloutOptions{ID: "r1", Order: OrderGiven, Domains: []string{"ud-1", "ud-2", "ud-3", "ud-4"}, Parallel: tc.parallel})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, dom := range plan.Domains {
				line := fmt.Sprintf("%s %s after %s with %v", dom.Domain, dom.State, orDash(dom.After), dom.With)
				if dom.HeldBy != nil {
					line += " held " + string(dom.HeldBy.Reason)
				}
				// One read: each domain's drain plan (none for one
				// upgraded already) and its groups' health.
				if dom.Plan != nil {
					line += fmt.Sprintf(" plan %v phase1 %d phase2 %d", dom.Plan.Nodes, len(dom.Plan.Phase1), len(dom.Plan.Phase2))
				}
				if dom.Health != nil {
					line += fmt.Sprintf(" healthy %t groups %d", dom.Health.Healthy, len(dom.Health.Groups))
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan's domains (-want +got):\n%s", diff)
			}
		})
	}
}
