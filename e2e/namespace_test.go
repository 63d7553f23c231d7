package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// TestRolloutGoesOnWhenANamespaceIsDeleted is the drill "a namespace
// deleted under a rollout" (issue 37): besides the scenario's three groups,
// a second workload (one group of two pods, in a namespace of its own,
// placed by the scheduler) runs in the pool; its namespace is deleted as
// the rollout starts the domain holding its pods. While a namespace is
// being deleted the API server refuses every eviction in it (403,
// NamespaceTerminating), and here its pods stay that long: a
// ValidatingAdmissionPolicy holds the namespace controller's deletions
// of them for holdFor, as a slow namespace deletion does (finalizers,
// an aggregated API that does not answer). udrain retries those
// evictions, says why in its events, takes the pods as gone with their
// namespace once the namespace controller deletes them, and goes on: the
// rollout completes, each of the scenario's groups disrupted exactly
// once (an independent pod watch judges it), never two down. Before, the
// refusal stopped the rollout with a permission error.
func TestRolloutGoesOnWhenANamespaceIsDeleted(t *testing.T) {
	t.Parallel()
	const holdFor = 6 * time.Second
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	c := s.tt.Client

	doomed := fixture.LWS{Namespace: s.tt.Name + "-gone", Name: "doomed", Groups: 1, Size: 2, Pool: s.tt.Name, NoReadinessGate: true,
		ReadyDelay: time.Second, TerminateDelay: time.Second, GracePeriodSeconds: 5}
	createNamespace(t, c, doomed.Namespace)
	rec, err := fixture.RecordPods(ctx, c, doomed.Namespace, doomed.Selector())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Stop)
	s.tt.OnFailure("doomed-pod-timeline.txt", rec.WriteTimeline)
	if err := doomed.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	pods, err := fixture.WaitForPods(ctx, c, doomed.Namespace, doomed.Selector(), fixture.PodsReady(doomed.Size))
	if err != nil {
		t.Fatal(err)
	}
	target := s.domainOf()[pods[0].Spec.NodeName]
	for _, p := range pods {
		if d := s.domainOf()[p.Spec.NodeName]; d != target {
			t.Fatalf("the doomed group spans domains %s and %s", target, d)
		}
	}
	// The domain holding the doomed group is drained second, so that the
	// rollout has a domain to go on to.
	domains := []string{target}
	for _, d := range s.domains() {
		if d != target {
			domains = append(domains, d)
		}
	}
	domains[0], domains[1] = domains[1], domains[0]
	t.Logf("the doomed group runs in %s; rollout order %v", target, domains)
	release := holdPodDeletions(t, c, doomed.Namespace, pods[0].Name)

	events := &eventLog{}
	var deletedAt, releasedAt time.Time
	var mu sync.Mutex
	var once sync.Once
	hook := func(e eviction.Event) {
		if e.Type != eviction.EventDomainStarted || e.Domain != target {
			return
		}
		once.Do(func() {
			// Synchronously: the domain's evictions come after the
			// namespace is Terminating.
			if err := c.CoreV1().Namespaces().Delete(ctx, doomed.Namespace, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete namespace %s: %v", doomed.Namespace, err)
			}
			mu.Lock()
			deletedAt = time.Now()
			mu.Unlock()
			time.AfterFunc(holdFor, func() {
				// Marked before the release: pods may terminate
				// while its second delete is still on its way.
				mu.Lock()
				releasedAt = time.Now()
				mu.Unlock()
				release()
			})
		})
	}
	d := hookedDrainer(t, s, "udrain-events.txt", events, eviction.Options{}, hook)
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-namespace-deleted", Domains: domains, RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) }})
	if err != nil {
		t.Fatalf("rollout with a namespace deleted under it: %v", err)
	}
	took := time.Since(start)
	mu.Lock()
	deleted, released := deletedAt, releasedAt
	mu.Unlock()
	if deleted.IsZero() || released.IsZero() {
		t.Fatalf("the namespace was not deleted (%v) or not released (%v) during the rollout", deleted, released)
	}

	// udrain's side: the doomed pods' evictions were refused as the
	// namespace's, retried, and the pods taken as gone with it; none
	// evicted, and no permission error.
	refused := map[string]int{}
	for _, e := range events.all() {
		if e.Pod == nil || e.Pod.Namespace != doomed.Namespace {
			continue
		}
		switch {
		case e.Request == eviction.RequestNamespaceTerminating && e.Type == eviction.EventRetrying:
			refused[e.Pod.Name]++
		case e.Request == eviction.RequestEvicted:
			t.Errorf("udrain evicted %s, in a namespace being deleted", e.Pod)
		case e.Type == eviction.EventEvictionFailed:
			t.Errorf("the eviction of %s failed for good: %s", e.Pod, e.Message)
		}
	}
	leader := doomed.LeaderName(0)
	if refused[leader] == 0 {
		t.Errorf("no eviction of %s refused for its namespace: the drill did not meet a namespace being deleted (refusals %v)", leader, refused)
	}
	byPod := map[string]eviction.Event{}
	for _, e := range events.all() {
		if e.Pod != nil && e.Pod.Namespace == doomed.Namespace && e.Request != "" {
			byPod[e.Pod.Name] = e
		}
	}
	for _, p := range pods {
		last, ok := byPod[p.Name]
		if !ok || (last.Request != eviction.RequestNamespaceTerminating && last.Request != eviction.RequestGone) || last.Type == eviction.EventRetrying {
			t.Errorf("the last answer about %s: %s %s, want it taken as going with its namespace", p.Name, last.Type, last.Request)
		}
	}

	// The pods' side, as the doomed namespace's watch saw it: each pod
	// terminated once, after the hold was released (by the namespace
	// controller, not before it could delete).
	terminated := map[string]time.Time{}
	for _, e := range rec.Events() {
		if e.Pod.DeletionTimestamp != nil {
			if _, seen := terminated[e.Pod.Name]; !seen {
				terminated[e.Pod.Name] = e.At
			}
		}
	}
	for _, p := range pods {
		at, ok := terminated[p.Name]
		switch {
		case !ok:
			t.Errorf("pod %s never seen terminating", p.Name)
		case at.Before(released):
			t.Errorf("pod %s terminating at %s, before the hold was released at %s", p.Name, at.Format("15:04:05.000"), released.Format("15:04:05.000"))
		}
	}
	if err := waitNamespaceGone(ctx, c, doomed.Namespace, time.Minute); err != nil {
		t.Error(err)
	}

	o := checkWholeRollout(t, s, start, "rollout with a namespace deleted under it")
	checkUpgradedAndUncordoned(t, s, "e2e-namespace-deleted")
	if sum := report.SummarizeRollout(res); sum.DomainsDone != 3 {
		t.Errorf("summary %+v, want 3 domains done", sum)
	}
	var gone time.Duration
	for _, at := range terminated {
		gone = max(gone, at.Sub(released))
	}
	t.Logf("namespace deleted %s after the start, its pods held %s, then terminating within %s; %d refusal(s) of %s; rollout %s; fewest healthy groups %d of %d",
		deleted.Sub(start).Round(time.Millisecond), released.Sub(deleted).Round(time.Millisecond), gone.Round(time.Millisecond),
		refused[leader], leader, took.Round(100*time.Millisecond), o.MinHealthy, s.groupCount())
}

// createNamespace makes namespace ns for the test, labelled as the
// testbed labels a test's own, and deletes it when the test ends (if the
// test did not).
func createNamespace(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{testbed.TestLabel: strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))}}}
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
}

// holdPodDeletions installs a ValidatingAdmissionPolicy that denies every
// deletion of a pod in namespace ns (the namespace controller's and the
// garbage collector's too; evictions are creates of pods/eviction, which
// it leaves alone), waits until the API server applies it (a dry-run
// deletion of probe is denied), and returns the release: the policy's
// removal. The test's end removes it too.
func holdPodDeletions(t *testing.T, c kubernetes.Interface, ns, probe string) (release func()) {
	t.Helper()
	ctx := t.Context()
	name := "udrain-e2e-hold-" + ns
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "held by the test: the namespace's deletion is slow"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	api := c.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, err := range []error{
				api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}),
				api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}),
			} {
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("releasing the hold on %s: %v", ns, err)
				}
			}
		})
	}
	t.Cleanup(release)
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.CoreV1().Pods(ns).Delete(ctx, probe, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(last) || apierrors.IsInvalid(last), nil
	})
	if err != nil {
		t.Fatalf("the hold on pod deletions in %s is not applied (last dry-run deletion: %v): %v", ns, last, err)
	}
	return release
}

// waitNamespaceGone waits until namespace ns no longer exists.
func waitNamespaceGone(ctx context.Context, c kubernetes.Interface, ns string, timeout time.Duration) error {
	var phase string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			phase = string(n.Status.Phase)
			for _, c := range n.Status.Conditions {
				phase += fmt.Sprintf("; %s=%s: %s", c.Type, c.Status, c.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s still there after %s (%s): %w", ns, timeout, phase, err)
	}
	return nil
}
