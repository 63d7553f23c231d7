package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
)

// TestWorkloadLandsAsTheContractWants: every group in one upgrade domain,
// groups in different ones, and every pod labelled as LWS labels it.
func TestWorkloadLandsAsTheContractWants(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	gpu := fixture.H100()
	nodes := fixture.Nodes{Pool: tt.Name, UDs: 4, PerUD: 2, GPU: &gpu}
	if _, err := nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	// 8 GPUs a pod on 8-GPU nodes: one pod per node, so a group of 2 fills a UD.
	w := fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: 4, Size: 2, Pool: tt.Name, GPUsPerPod: 8, ReadyDelay: 500 * time.Millisecond}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	pods, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsRunning(8))
	if err != nil {
		t.Fatal(err)
	}

	groups, err := w.Health(ctx, tt.Client)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, g := range groups {
		if len(g.UDs) != 1 || g.UDs[0] == "" {
			t.Errorf("group %d spans upgrade domains %q, want exactly one", g.Index, g.UDs)
			continue
		}
		if other, dup := seen[g.UDs[0]]; dup {
			t.Errorf("groups %d and %d share upgrade domain %s", other, g.Index, g.UDs[0])
		}
		seen[g.UDs[0]] = g.Index
	}
	if len(groups) != 4 {
		t.Errorf("got %d groups, want 4: %+v", len(groups), groups)
	}

	// Labels and annotations, as LWS writes them, on every pod.
	type lwsMeta struct{ Name, Group, Worker, Size, Role string }
	got := map[string]lwsMeta{}
	for _, p := range pods {
		got[p.Name] = lwsMeta{
			p.Labels[fixture.LWSNameLabel], p.Labels[fixture.LWSGroupIndexLabel], p.Labels[fixture.LWSWorkerIndexLabel],
			p.Annotations[fixture.LWSSizeAnnotation], p.Labels[fixture.RoleLabel],
		}
	}
	want := map[string]lwsMeta{}
	for g := range 4 {
		want[w.LeaderName(g)] = lwsMeta{"llm", strconv.Itoa(g), "0", "2", "leader"}
		want[w.WorkerName(g, 1)] = lwsMeta{"llm", strconv.Itoa(g), "1", "2", "worker"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
}

// TestReadinessGateDrivesLeaderReady: kwok's Stages make a Running leader's
// Ready follow its udrain.dev/group-ready gate both ways, as a kubelet would.
func TestReadinessGateDrivesLeaderReady(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	if _, err := (fixture.Nodes{Pool: tt.Name, UDs: 1, PerUD: 1}).Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	w := fixture.LWS{Namespace: tt.Name, Name: "gate", Groups: 1, Size: 1, Pool: tt.Name, ReadyDelay: 500 * time.Millisecond}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	leader := w.LeaderName(0)
	one := labels.SelectorFromSet(labels.Set{"statefulset.kubernetes.io/pod-name": leader})
	pods, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, one, fixture.PodCondition{
		What: "leader's containers ready", Holds: func(p []corev1.Pod) bool { return len(p) == 1 && fixture.ContainersReady(&p[0]) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Containers ready, gate not written yet: not Ready, for the gate's reason.
	if ready := condition(&pods[0], corev1.PodReady); ready.Status != corev1.ConditionFalse || ready.Reason != "ReadinessGatesNotReady" {
		t.Fatalf("leader with ready containers and no gate condition: Ready=%s reason=%q, want False ReadinessGatesNotReady", ready.Status, ready.Reason)
	}

	for _, step := range []bool{true, false, true} {
		if err := fixture.SetGroupReady(ctx, tt.Client, tt.Name, leader, step); err != nil {
			t.Fatal(err)
		}
		_, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, one, fixture.PodCondition{
			What: fmt.Sprintf("leader Ready=%t after gate %t", step, step),
			Holds: func(p []corev1.Pod) bool {
				return len(p) == 1 && fixture.IsReady(&p[0]) == step && fixture.ContainersReady(&p[0])
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPDBStatusAndEvictionBudget: the disruption controller computes the
// leaders' PDB, the Eviction API admits one disruption and answers 429 to the
// next while a group is down, and the budget comes back when it recovers.
func TestPDBStatusAndEvictionBudget(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	if _, err := (fixture.Nodes{Pool: tt.Name, UDs: 3, PerUD: 1}).Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	w := fixture.LWS{Namespace: tt.Name, Name: "pdb", Groups: 3, Size: 1, Pool: tt.Name, ReadyDelay: 200 * time.Millisecond, TerminateDelay: time.Second}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsRunning(3)); err != nil {
		t.Fatal(err)
	}
	// No gate controller here: stand in for it.
	for g := range 3 {
		if err := fixture.SetGroupReady(ctx, tt.Client, tt.Name, w.LeaderName(g), true); err != nil {
			t.Fatal(err)
		}
	}
	want := policyv1.PodDisruptionBudgetStatus{ExpectedPods: 3, CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1}
	waitPDB(ctx, t, tt.Client, tt.Name, w.PDBName(), want)

	first := w.LeaderName(0)
	if err := evict(ctx, tt.Client, tt.Name, first); err != nil {
		t.Fatalf("first eviction, within budget: %v", err)
	}
	err := evict(ctx, tt.Client, tt.Name, w.LeaderName(1))
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusTooManyRequests {
		t.Fatalf("second eviction while group 0 is down: got %v, want HTTP 429", err)
	}
	// The apiserver names the blocking PDB in a DisruptionBudget cause: what
	// udrain reports while it waits.
	var causes []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			causes = append(causes, string(c.Type)+": "+c.Message)
		}
	}
	if !strings.Contains(strings.Join(causes, "\n"), w.PDBName()) {
		t.Errorf("429 causes %q do not name the PDB %s", causes, w.PDBName())
	}

	// Group 0 comes back (the StatefulSet recreates its leader; its gate is
	// written again) and the budget with it.
	pods, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsRunning(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Name == first && !fixture.IsReady(&p) {
			if err := fixture.SetGroupReady(ctx, tt.Client, tt.Name, first, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitPDB(ctx, t, tt.Client, tt.Name, w.PDBName(), want)
}

// TestStatefulSetReplacesEvictedPod: an evicted pod goes after its
// termination delay and comes back with the same name, a new UID, and Ready
// only after the start-up delay.
func TestStatefulSetReplacesEvictedPod(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	if _, err := (fixture.Nodes{Pool: tt.Name, UDs: 1, PerUD: 1}).Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	const readyDelay, terminateDelay = 3 * time.Second, time.Second
	w := fixture.LWS{Namespace: tt.Name, Name: "sts", Groups: 1, Size: 1, Pool: tt.Name, NoReadinessGate: true,
		ReadyDelay: readyDelay, TerminateDelay: terminateDelay}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	before, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsReady(1))
	if err != nil {
		t.Fatal(err)
	}
	old := before[0]
	rec, err := fixture.RecordPods(ctx, tt.Client, tt.Name, w.Selector())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	tt.OnFailure("pod-timeline.txt", rec.WriteTimeline)

	if err := evict(ctx, tt.Client, tt.Name, old.Name); err != nil {
		t.Fatal(err)
	}
	after, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodCondition{
		What: "a Ready replacement with a new UID",
		Holds: func(p []corev1.Pod) bool {
			return len(p) == 1 && p[0].UID != old.UID && fixture.IsReady(&p[0])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Name != old.Name {
		t.Errorf("replacement is %s, want the same name %s", after[0].Name, old.Name)
	}
	if err := rec.CaughtUp(ctx, after); err != nil {
		t.Fatal(err)
	}

	// From the recorded events: how long the old pod terminated, and how
	// long the new one loaded before Ready.
	var terminating, gone, running, ready time.Time
	for _, e := range rec.Events() {
		switch {
		case e.Pod.UID == old.UID && e.Pod.DeletionTimestamp != nil && terminating.IsZero():
			terminating = e.At
		case e.Pod.UID == old.UID && e.Type == watch.Deleted:
			gone = e.At
		case e.Pod.UID == after[0].UID && e.Pod.Status.Phase == corev1.PodRunning && running.IsZero():
			running = e.At
		case e.Pod.UID == after[0].UID && fixture.IsReady(e.Pod) && ready.IsZero():
			ready = e.At
		}
	}
	if d := gone.Sub(terminating); terminating.IsZero() || gone.IsZero() || d < terminateDelay/2 {
		t.Errorf("old pod terminated in %s (terminating at %v, gone at %v), want about %s", d, terminating, gone, terminateDelay)
	}
	// The stage counts the delay from the PodScheduled condition's time
	// (whole seconds): Ready comes at least readyDelay after it. (Counted
	// from the Running event the test saw, a watch lagging 53 ms under
	// load made 1.947 s of a bound of 2 s: that measured the watch.)
	var scheduled time.Time
	for _, c := range after[0].Status.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = c.LastTransitionTime.Time
		}
	}
	if d := ready.Sub(scheduled); running.IsZero() || ready.IsZero() || scheduled.IsZero() || d < readyDelay {
		t.Errorf("replacement was Ready %s after it was scheduled (%v; Running seen at %v), want at least %s (start-up delay)", d, scheduled, running, readyDelay)
	}
	if err := rec.Err(); err != nil {
		t.Errorf("pod recorder: %v", err)
	}
}

// TestTerminationIgnoresUpdates: a terminating pod goes its termination
// delay after the deletion even while its object keeps changing (a
// controller writing conditions to it), as a kubelet's grace period does.
// kwok's delay used to restart with every update of the pod.
func TestTerminationIgnoresUpdates(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	if _, err := (fixture.Nodes{Pool: tt.Name, UDs: 1, PerUD: 1}).Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	const terminateDelay, touchFor = 3 * time.Second, 12 * time.Second
	w := fixture.LWS{Namespace: tt.Name, Name: "touch", Groups: 1, Size: 1, Pool: tt.Name, NoReadinessGate: true,
		ReadyDelay: time.Second, TerminateDelay: terminateDelay}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	pods, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsReady(1))
	if err != nil {
		t.Fatal(err)
	}
	old := pods[0]
	deleted := time.Now()
	if err := tt.Client.CoreV1().Pods(tt.Name).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Touch the pod every 300ms until it is gone (or for touchFor: with a
	// delay restarted by each update it would go touchFor + terminateDelay
	// after the deletion).
	var gone time.Duration
	touches := 0
	for gone == 0 && time.Since(deleted) < touchFor {
		// The uid in the patch is a precondition: for a replacement of
		// the same name the API server answers Invalid (uid immutable).
		patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{"e2e.udrain.dev/touch":"%d"}}}`, old.UID, touches)
		_, err := tt.Client.CoreV1().Pods(tt.Name).Patch(ctx, old.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err):
			gone = time.Since(deleted)
		case err != nil:
			t.Fatal(err)
		default:
			touches++
			time.Sleep(300 * time.Millisecond)
		}
	}
	if gone == 0 {
		t.Fatalf("pod still there %s after its deletion (%d updates while terminating), want gone after about %s", touchFor, touches, terminateDelay)
	}
	t.Logf("pod gone %s after its deletion, touched %d times while terminating (termination delay %s)", gone.Round(time.Millisecond), touches, terminateDelay)
	// deletionTimestamp has whole seconds: the stage rounds the deletion
	// up, so the pod goes between the delay and the delay + 1s, plus the
	// time for kwok to act and for this loop to see it.
	if min, max := terminateDelay-200*time.Millisecond, terminateDelay+3*time.Second; gone < min || gone > max {
		t.Errorf("pod gone %s after its deletion, want between %s and %s", gone, min, max)
	}
	if touches < 3 {
		t.Errorf("only %d updates while the pod terminated: the test did not exercise updates", touches)
	}
}

// TestAPIServerRestart: a test can kill the apiserver and start it again;
// clients, waits and the pod recorder carry on across it.
func TestAPIServerRestart(t *testing.T) {
	tt := bed.ForTest(t)
	ctx := t.Context()
	if _, err := (fixture.Nodes{Pool: tt.Name, UDs: 1, PerUD: 1}).Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	w := fixture.LWS{Namespace: tt.Name, Name: "restart", Groups: 1, Size: 2, Pool: tt.Name, NoReadinessGate: true, ReadyDelay: 200 * time.Millisecond}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsReady(2)); err != nil {
		t.Fatal(err)
	}
	rec, err := fixture.RecordPods(ctx, tt.Client, tt.Name, w.Selector())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	tt.OnFailure("pod-timeline.txt", rec.WriteTimeline)

	start := time.Now()
	err = tt.Testbed().RestartAPIServer(ctx)
	if errors.Is(err, testbed.ErrNotSupported) {
		t.Skip("this cluster's apiserver cannot be restarted from a test:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver killed and ready again in %s", time.Since(start).Round(10*time.Millisecond))

	// The apiserver that answers is a new process: /livez's uptime is not
	// available, but the kill is proven by the recorder's watch breaking and
	// resuming; prove the resumed watch sees a change made after the restart.
	victim := w.WorkerName(0, 1)
	if err := tt.Client.CoreV1().Pods(tt.Name).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsReady(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.CaughtUp(ctx, pods); err != nil {
		t.Fatal(err)
	}
	var deleted bool
	for _, e := range rec.Events() {
		deleted = deleted || (e.Type == watch.Deleted && e.Pod.Name == victim)
	}
	if !deleted {
		t.Errorf("the pod recorder did not see %s deleted after the apiserver restart", victim)
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{Type: t, Status: corev1.ConditionUnknown}
}

func evict(ctx context.Context, c kubernetes.Interface, ns, pod string) error {
	return c.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
}

// waitPDB waits until the PDB's status counts are want (the disruption
// controller updates it asynchronously).
func waitPDB(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, want policyv1.PodDisruptionBudgetStatus) {
	t.Helper()
	var got policyv1.PodDisruptionBudgetStatus
	counts := func(s policyv1.PodDisruptionBudgetStatus) [4]int32 {
		return [4]int32{s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = pdb.Status
		return counts(got) == counts(want), nil
	})
	if err != nil {
		t.Fatalf("PDB %s status (expected, healthy, desired, allowed) = %v, want %v: %v", name, counts(got), counts(want), err)
	}
}
