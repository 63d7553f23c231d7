package evictiontest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction/evictiontest"
)

// answer is what a request got, and what it left behind.
type answer struct {
	// Status is the HTTP code of the error (0: accepted), Cause its
	// DisruptionBudgetCause, if any.
	Status int32
	Cause  string
	// PodLeft: the pod still exists (with its UID); Allowed is the
	// budget's disruptionsAllowed after the request, Disrupted whether
	// its disruptedPods has the pod; Evicted what Options.OnEvicted saw.
	PodLeft   bool
	Allowed   int32
	Disrupted bool
	Evicted   []string
}

func budget(allowed, healthy, desired int32, mod ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "leaders"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "leader"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: healthy},
	}
	for _, m := range mod {
		m(b)
	}
	return b
}

func leader(mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Labels: map[string]string{"role": "leader"}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

// TestEviction: the fake answers evictions as the API server's eviction
// subresource does, in its order of checks.
func TestEviction(t *testing.T) {
	uid := func(u types.UID) *metav1.DeleteOptions {
		return &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &u}}
	}
	dry := &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	const spent = "The disruption budget leaders needs 2 healthy pods and has 2 currently"
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		pdbs   []runtime.Object
		opts   *metav1.DeleteOptions
		v1beta bool
		// evict names the pod to evict; empty: pod.
		evict string
		want  answer
	}{
		{name: "no budget", pod: leader(), want: answer{Evicted: []string{"p"}}},
		{name: "the budget allows one: spent", pod: leader(), pdbs: []runtime.Object{budget(1, 3, 2)}, want: answer{Allowed: 0, Disrupted: true, Evicted: []string{"p"}}},
		{name: "the budget allows none: 429", pod: leader(), pdbs: []runtime.Object{budget(0, 2, 2)}, want: answer{Status: 429, Cause: spent, PodLeft: true}},
		{name: "policy/v1beta1 too", pod: leader(), pdbs: []runtime.Object{budget(0, 2, 2)}, v1beta: true, want: answer{Status: 429, Cause: spent, PodLeft: true}},
		{name: "a dry run is checked and changes nothing", pod: leader(), pdbs: []runtime.Object{budget(1, 3, 2)}, opts: dry, want: answer{Allowed: 1, PodLeft: true}},
		{name: "a dry run of a spent budget: 429", pod: leader(), pdbs: []runtime.Object{budget(0, 2, 2)}, opts: dry, want: answer{Status: 429, Cause: spent, PodLeft: true}},
		{name: "the UID precondition matches", pod: leader(), opts: uid("u1"), want: answer{Evicted: []string{"p"}}},
		{name: "the UID precondition does not match: 409", pod: leader(), opts: uid("u0"), want: answer{Status: 409, PodLeft: true}},
		{name: "no such pod: 404", pod: leader(), evict: "other", want: answer{Status: 404, PodLeft: true}},
		{name: "two budgets: 500", pod: leader(), pdbs: []runtime.Object{budget(1, 3, 2), budget(1, 3, 2, func(b *policyv1.PodDisruptionBudget) { b.Name = "again" })},
			want: answer{Status: 500, PodLeft: true, Allowed: 1}},
		{name: "a budget selecting nothing is no budget", pod: leader(), pdbs: []runtime.Object{budget(0, 2, 2, func(b *policyv1.PodDisruptionBudget) { b.Spec.Selector = &metav1.LabelSelector{} })},
			want: answer{Evicted: []string{"p"}}},
		{name: "a budget whose status is behind: 429", pod: leader(), pdbs: []runtime.Object{budget(1, 3, 2, func(b *policyv1.PodDisruptionBudget) { b.Generation = 2 })},
			want: answer{Status: 429, Cause: "The disruption budget leaders is still being processed by the server.", PodLeft: true, Allowed: 1}},
		{name: "a negative allowance: 403", pod: leader(), pdbs: []runtime.Object{budget(-1, 1, 2)}, want: answer{Status: 403, PodLeft: true, Allowed: -1}},
		{name: "an unready pod of a healthy budget goes, unspent", pod: leader(func(p *corev1.Pod) { p.Status.Conditions = nil }), pdbs: []runtime.Object{budget(0, 2, 2)},
			want: answer{Evicted: []string{"p"}}},
		{name: "a terminating pod goes without its budget", pod: leader(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), pdbs: []runtime.Object{budget(0, 2, 2)},
			want: answer{Evicted: []string{"p"}}},
		{name: "a Pending pod goes without its budget", pod: leader(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), pdbs: []runtime.Object{budget(0, 2, 2)},
			want: answer{Evicted: []string{"p"}}},
		{name: "a finished pod goes without its budget", pod: leader(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), pdbs: []runtime.Object{budget(0, 2, 2)},
			want: answer{Evicted: []string{"p"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			objs := append([]runtime.Object{tc.pod}, tc.pdbs...)
			name := tc.pod.Name
			if tc.evict != "" {
				name = tc.evict
			}
			var got answer
			client := fake.NewClientset(objs...)
			evictiontest.Install(client, evictiontest.Options{OnEvicted: func(_ k8stesting.ObjectTracker, p *corev1.Pod) error {
				got.Evicted = append(got.Evicted, p.Name)
				return nil
			}})
			var err error
			if tc.v1beta {
				err = client.PolicyV1beta1().Evictions("ns").Evict(ctx, &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, DeleteOptions: tc.opts})
			} else {
				err = client.PolicyV1().Evictions("ns").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, DeleteOptions: tc.opts})
			}
			if status, ok := err.(apierrors.APIStatus); ok {
				got.Status = status.Status().Code
				if c, ok := apierrors.StatusCause(err, policyv1.DisruptionBudgetCause); ok {
					got.Cause = c.Message
				}
			} else if err != nil {
				t.Fatalf("evict: %v", err)
			}
			if p, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); err == nil && p.UID == "u1" {
				got.PodLeft = true
			}
			if b, err := client.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "leaders", metav1.GetOptions{}); err == nil {
				got.Allowed = b.Status.DisruptionsAllowed
				_, got.Disrupted = b.Status.DisruptedPods["p"]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDryRunsChangeNothing: a dry-run delete and a dry-run node patch (a
// server dry run's cordon) answer as the real ones would and store
// nothing; a delete honours its preconditions.
func TestDryRunsChangeNothing(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	client := evictiontest.NewClientset(node, leader())
	dry := []string{metav1.DryRunAll}

	patched, err := client.CoreV1().Nodes().Patch(ctx, "n1", types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{DryRun: dry})
	if err != nil || !patched.Spec.Unschedulable {
		t.Fatalf("dry-run patch: %v, unschedulable %t; want the patched node", err, patched != nil && patched.Spec.Unschedulable)
	}
	if n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); n.Spec.Unschedulable {
		t.Error("a dry-run patch cordoned the node")
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{DryRun: dry}); err != nil {
		t.Fatalf("dry-run delete: %v", err)
	}
	other := types.UID("u0")
	if err := client.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with another UID: err = %v, want a conflict", err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod is gone after a dry run and a refused delete: %v", err)
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "missing", metav1.DeleteOptions{DryRun: dry}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run delete of a missing pod: err = %v, want NotFound", err)
	}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, leader(), metav1.CreateOptions{DryRun: dry}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("dry-run create of an existing pod: err = %v, want AlreadyExists", err)
	}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, leader(func(p *corev1.Pod) { p.Name = "q" }), metav1.CreateOptions{DryRun: dry}); err != nil {
		t.Errorf("dry-run create: %v", err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "q", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry-run create stored the pod: %v", err)
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still there after its delete: %v", err)
	}
}

// TestDiscoveryServesEviction: kubectl drain's own check finds policy/v1
// evictions, unless the test says the server serves none (its own
// c.Resources, before Install).
func TestDiscoveryServesEviction(t *testing.T) {
	gv, err := drain.CheckEvictionSupport(evictiontest.NewClientset())
	if err != nil || gv != policyv1.SchemeGroupVersion {
		t.Errorf("CheckEvictionSupport = %v, %v; want policy/v1", gv, err)
	}
	c := fake.NewClientset()
	c.Resources = []*metav1.APIResourceList{{GroupVersion: "v1"}}
	evictiontest.Install(c, evictiontest.Options{})
	if gv, err := drain.CheckEvictionSupport(c); err != nil || gv != (schema.GroupVersion{}) {
		t.Errorf("CheckEvictionSupport of a server without evictions = %v, %v; want none", gv, err)
	}
}
