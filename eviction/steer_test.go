package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// pendingTaints returns, per node, udrain's pending-upgrade taint as
// "effect=value", and fails on a node that lost the GPU taint it had.
func pendingTaints(t *testing.T, ctx context.Context, fc *fakeCluster, gpuNode string) map[string]string {
	t.Helper()
	nodes, err := fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		hasGPU := false
		for _, taint := range n.Spec.Taints {
			switch taint.Key {
			case udrain.PendingUpgradeTaint:
				out[n.Name] = string(taint.Effect) + "=" + taint.Value
			case gpuTaint.Key:
				hasGPU = true
			}
		}
		if n.Name == gpuNode && !hasGPU {
			t.Errorf("node %s lost its GPU taint: %v", n.Name, n.Spec.Taints)
		}
	}
	return out
}

func nodePatches(fc *fakeCluster) int {
	n := 0
	for _, a := range fc.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	return n
}

// While a rollout runs, the nodes of the domains it has not started carry
// its pending-upgrade taint (of the steering's effect), and only those:
// the cordon takes it off a domain's nodes (DaemonSet pods may start
// there during the upgrade step), the uncordon patch off any node that
// still has it, so no node has it at the end; other taints stay. The node
// patches: one taint, one cordon, one uncordon per node and one mark per
// domain; with Auto, one more for each pending node whose effect changes.
// Auto: ud-1's group has no upgraded room as ud-1 starts (it would go to
// a pending domain: PreferNoSchedule); ud-2's has ud-1 (NoSchedule on the
// pending ud-3 from then on).
func TestRolloutTaintsThePendingDomains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steering Steering
		effects  []string // as ud-1, ud-2 upgrade
		switches int      // patches of a changed effect
	}{
		{"default", "", []string{"PreferNoSchedule", "NoSchedule"}, 2},
		{"Auto", SteerAuto, []string{"PreferNoSchedule", "NoSchedule"}, 2},
		{"PreferUpgraded", SteerPreferUpgraded, []string{"PreferNoSchedule", "PreferNoSchedule"}, 0},
		{"Strict", SteerStrict, []string{"NoSchedule", "NoSchedule"}, 0},
		{"Off", SteerOff, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(3, 2, 2)...)
			n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-3-1", metav1.GetOptions{})
			n.Spec.Taints = []corev1.Taint{gpuTaint}
			if _, err := fc.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			fc.client.ClearActions()
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			during := map[string]map[string]string{}
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Steering: tc.steering, Upgrade: func(ctx context.Context, dom topology.Domain) error {
				during[dom.Name] = pendingTaints(t, ctx, fc, "node-3-1")
				idx := domainIndex(dom.Name)
				fc.recreateGroup(ctx, idx-1, 2, idx, 2, 3)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]map[string]string{"ud-1": {}, "ud-2": {}, "ud-3": {}}
			if tc.effects != nil {
				v1, v2 := tc.effects[0]+"=r1", tc.effects[1]+"=r1"
				want = map[string]map[string]string{
					"ud-1": {"node-2-1": v1, "node-2-2": v1, "node-3-1": v1, "node-3-2": v1},
					"ud-2": {"node-3-1": v2, "node-3-2": v2},
					"ud-3": {},
				}
			}
			if diff := cmp.Diff(want, during); diff != "" {
				t.Errorf("pending-upgrade taints during each domain's upgrade (-want +got):\n%s", diff)
			}
			if got := pendingTaints(t, ctx, fc, "node-3-1"); len(got) > 0 {
				t.Errorf("taints left after the rollout: %v", got)
			}
			wantPatches := 6 + 6 + 3 + 3 + tc.switches // cordon and uncordon per node, an upgraded and a recovered mark per domain
			if tc.effects != nil {
				wantPatches += 6 // the taint
			}
			if got := nodePatches(fc); got != wantPatches {
				t.Errorf("%d node patches, want %d", got, wantPatches)
				for _, a := range fc.client.Actions() {
					if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "nodes" {
						t.Logf("patch %s: %s", p.GetName(), p.GetPatch())
					}
				}
			}
		})
	}
}

// A rollout that stops takes its taint off the nodes still to upgrade.
func TestStoppedRolloutTakesItsTaintOff(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(3, 2, 2)...)
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	boom := errors.New("boom")
	_, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Upgrade: func(ctx context.Context, dom topology.Domain) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the upgrade step's", err)
	}
	if got := pendingTaints(t, ctx, fc, ""); len(got) > 0 {
		t.Errorf("taints left after the stop: %v", got)
	}
	n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
	if !n.Spec.Unschedulable {
		t.Error("the domain the rollout stopped in was uncordoned")
	}
}

// Uncordon takes udrain's taint off too, also from a schedulable node.
func TestUncordonTakesThePendingTaintOff(t *testing.T) {
	ctx := testContext(t)
	objs := lwsCluster(1, 2, 2)
	objs[0].(*corev1.Node).Spec.Taints = []corev1.Taint{gpuTaint, {Key: udrain.PendingUpgradeTaint, Value: "old", Effect: corev1.TaintEffectPreferNoSchedule}}
	fc := newFakeCluster(t, objs...)
	d, _ := New(fc.client, Options{})
	done, err := d.Uncordon(ctx, "ud-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"node-1-1"}, done); diff != "" {
		t.Errorf("uncordoned (-want +got):\n%s", diff)
	}
	if got := pendingTaints(t, ctx, fc, "node-1-1"); len(got) > 0 {
		t.Errorf("taints left: %v", got)
	}
}

// A taint patch refused with a conflict (another controller changed the
// node's taints) is made again from the node as it is then: nothing the
// other controller added is lost.
func TestTaintPatchRetriesOnConflict(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 1)...)
	conflicts := 0
	fc.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		// Another controller adds its taint first.
		n, _ := fc.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "node-1-1")
		node := n.(*corev1.Node).DeepCopy()
		node.Spec.Taints = append(node.Spec.Taints, gpuTaint)
		_ = fc.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), node, "")
		return true, nil, conflictErr()
	})
	d, _ := New(fc.client, Options{})
	stale, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
	if _, err := d.setPendingTaints(ctx, func(Event) {}, func(string) (*corev1.Node, bool) { return stale, true }, []string{"node-1-1"}, "r1", corev1.TaintEffectPreferNoSchedule); err != nil {
		t.Fatal(err)
	}
	n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
	want := []corev1.Taint{gpuTaint, {Key: udrain.PendingUpgradeTaint, Value: "r1", Effect: corev1.TaintEffectPreferNoSchedule}}
	if diff := cmp.Diff(want, n.Spec.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
}

// Without Domains, a rollout takes first the domains that evict nothing
// (a spare domain), then the others in natural order; with Domains, their
// order, unless Order asks for SpareFirst (the others then keep the order
// given).
func TestRolloutOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		domains []string
		order   RolloutOrder
		want    []string
	}{
		{"default", nil, "", []string{"ud-4", "ud-1", "ud-2", "ud-3"}},
		{"given", []string{"ud-2", "ud-4", "ud-1"}, "", []string{"ud-2", "ud-4", "ud-1"}},
		{"given, spare first", []string{"ud-2", "ud-4", "ud-1"}, OrderSpareFirst, []string{"ud-4", "ud-2", "ud-1"}},
		{"every domain, given", nil, OrderGiven, []string{"ud-1", "ud-2", "ud-3", "ud-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			objs := append(lwsCluster(3, 1, 2), testNode("node-4-1", "ud-4"))
			fc := newFakeCluster(t, objs...)
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			var got []string
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Domains: tc.domains, Order: tc.order, Upgrade: func(ctx context.Context, dom topology.Domain) error {
				got = append(got, dom.Name)
				if idx := domainIndex(dom.Name); idx <= 3 {
					fc.recreateGroup(ctx, idx-1, 2, idx, 1, 3)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// Bad rollout options are a ConfigError naming the field, before anything
// is read or changed.
func TestRolloutOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		opts  RolloutOptions
		field string
	}{
		{RolloutOptions{ID: "has spaces / slashes"}, "eviction.RolloutOptions.ID"},
		{RolloutOptions{ID: "x" + fmt.Sprint(make([]int, 30))}, "eviction.RolloutOptions.ID"},
		{RolloutOptions{Steering: "Sometimes"}, "eviction.RolloutOptions.Steering"},
		{RolloutOptions{Order: "Random"}, "eviction.RolloutOptions.Order"},
		{RolloutOptions{Domains: []string{"ud-1", "ud-1"}}, "eviction.RolloutOptions.Domains"},
	} {
		fc := newFakeCluster(t, lwsCluster(1, 1, 1)...)
		d, _ := New(fc.client, Options{})
		fc.client.ClearActions()
		_, err := d.Rollout(testContext(t), tc.opts)
		var ce *udrain.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: err = %v, want a ConfigError on %s", tc.opts, err, tc.field)
		}
		if n := len(fc.client.Actions()); n > 0 {
			t.Errorf("%+v: %d requests before the error", tc.opts, n)
		}
	}
}

// A recovery whose members cannot pull their image stops once they have
// waited StuckAfter, naming the pods and the reason, long before its
// timeout; a crash loop does not stop it.
func TestRecoveryStopsOnMembersThatCannotStart(t *testing.T) {
	// The stuck case's timeout is far above the bound it must stop
	// within, so that a slow machine cannot pass the timeout for the stop.
	const mountFailed = `MountVolume.SetUp failed for volume "model" : rpc error: code = Internal desc = mount failed`
	for _, tc := range []struct {
		name    string
		reason  string // the containers' waiting reason
		phase   corev1.PodPhase
		events  []corev1.Event // warning events of each pod, as the kubelet writes them
		stuck   string         // the Stuck ClusterError's text; empty: none
		timeout time.Duration
	}{
		{name: "ImagePullBackOff", reason: "ImagePullBackOff", stuck: "2 pod(s) of group " + testNS + "/llm-0 cannot start: ImagePullBackOff (llm-0, llm-0-1)", timeout: 30 * time.Second},
		{name: "CrashLoopBackOff", reason: "CrashLoopBackOff", timeout: 3 * time.Second},
		{name: "volume cannot mount (CSI)", reason: "ContainerCreating", phase: corev1.PodPending,
			events: []corev1.Event{{Reason: "FailedMount", Message: mountFailed}},
			stuck:  "2 pod(s) of group " + testNS + "/llm-0 cannot start: FailedMount (llm-0, llm-0-1): " + mountFailed, timeout: 30 * time.Second},
		{name: "volume cannot attach, then a later warning of another kind", reason: "ContainerCreating", phase: corev1.PodPending,
			events:  []corev1.Event{{Reason: "FailedAttachVolume", Message: "AttachVolume.Attach failed"}, {Reason: "BackOff", Message: "later"}},
			timeout: 3 * time.Second},
		{name: "Multi-Attach clears by itself", reason: "ContainerCreating", phase: corev1.PodPending,
			events:  []corev1.Event{{Reason: "FailedAttachVolume", Message: `Multi-Attach error for volume "pvc-1" Volume is already exclusively attached to one node`}},
			timeout: 3 * time.Second},
		{name: "ContainerCreating without events", reason: "ContainerCreating", phase: corev1.PodPending, timeout: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
			// The members wait on a fake clock, which moves only once the
			// recovery has seen both: on the real clock, a member the view
			// showed a moment after the other had not waited StuckAfter yet
			// when the other had. (No lock: its renewals would wait on the
			// clock too.)
			const stuckAfter = 300 * time.Millisecond
			clk := clocktesting.NewFakeClock(time.Now())
			log := newEventLog()
			d, _ := New(fc.client, Options{Backoff: slowBackoff, Clock: clk, OnEvent: log.add})
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				_, err := d.Rollout(ctx, RolloutOptions{ID: "r1", RecoveryTimeout: tc.timeout, StuckAfter: stuckAfter, NoLock: true,
					Upgrade: func(ctx context.Context, dom topology.Domain) error {
						for w := range 2 {
							p := lwsPod(0, w, 2, "node-1-1", fc.nextUID(fmt.Sprintf("g0-w%d", w)))
							p.Status.Conditions = nil
							p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "vllm", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: tc.reason}}}}
							if tc.phase != "" {
								p.Status.Phase = tc.phase
							}
							if _, err := fc.client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
								return err
							}
							for i, e := range tc.events {
								e.Name, e.Namespace, e.Type = fmt.Sprintf("%s.%d", p.Name, i), testNS, corev1.EventTypeWarning
								e.InvolvedObject = corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: p.Name, UID: p.UID}
								e.LastTimestamp = metav1.NewTime(time.Now().Add(time.Duration(i) * time.Second))
								if _, err := fc.client.CoreV1().Events(testNS).Create(ctx, &e, metav1.CreateOptions{}); err != nil {
									return err
								}
							}
							// A warning of a pod of the same name before: not this one's.
							old := corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: p.Name + ".old", Namespace: testNS}, Type: corev1.EventTypeWarning, Reason: "FailedMount", Message: "old",
								InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: p.Name, UID: "before"}, LastTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
							if _, err := fc.client.CoreV1().Events(testNS).Create(ctx, &old, metav1.CreateOptions{}); err != nil {
								return err
							}
						}
						return nil
					}})
				done <- err
			}()
			log.waitFor(t, "the recovery waiting for both members", func(e Event) bool {
				if e.Type != EventWaitingRecovery || e.Health == nil {
					return false
				}
				seen := map[string]bool{}
				for _, g := range e.Health.Groups {
					for _, m := range g.Problems {
						seen[m.Name] = m.UID != ""
					}
				}
				return seen["llm-0"] && seen["llm-0-1"]
			})
			// The recovery arms its timer after it has looked at the members
			// it reported: from then on, StuckAfter passes at each of its
			// waits, until the rollout returns.
			var err error
			for stopped := false; !stopped; {
				select {
				case err = <-done:
					stopped = true
				default:
					if clk.HasWaiters() {
						clk.Step(stuckAfter)
					}
					time.Sleep(time.Millisecond)
				}
			}
			took := time.Since(start)
			var stuck *ClusterError
			var de *DomainError
			// The stuck members, by group, with the reason each waits for.
			var members []string
			if asReason(err, &stuck, ReasonStuck) {
				for _, g := range stuck.Groups {
					for _, m := range g.Problems {
						members = append(members, g.ID.String()+"/"+m.Name+" "+m.Waiting)
					}
				}
			}
			waits := tc.reason
			if len(tc.events) > 0 {
				waits = tc.events[0].Reason
			}
			wantMembers := []string{testNS + "/llm-0/llm-0 " + waits, testNS + "/llm-0/llm-0-1 " + waits}
			switch {
			case tc.stuck != "" && (!asReason(err, &stuck, ReasonStuck) || !errors.As(err, &de) || de.Stage != StageRecovery || !cmp.Equal(members, wantMembers) || took > 10*time.Second):
				t.Errorf("after %s: err = %v (members %q), want a Stuck ClusterError of the 2 pods %q at Recovery within 10s (its recovery timeout: %s)", took, err, members, wantMembers, tc.timeout)
			case tc.stuck != "" && !strings.Contains(err.Error(), tc.stuck):
				t.Errorf("message %q does not say which pods cannot start and why (%q)", err, tc.stuck)
			case tc.stuck == "" && (asReason(err, &stuck, ReasonStuck) || !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded)):
				t.Errorf("err = %v, want the recovery timeout, not a Stuck ClusterError", err)
			}
		})
	}
}
