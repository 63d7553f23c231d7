package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/examples/internal/exampletest"
	"github.com/udrain/udrain/topology"
)

// recorder keeps the Events the reconciler records, as "Kind/name uid
// reason (related Kind/name)".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := describe(regarding) + " " + eventtype + " " + reason
	if related != nil {
		e += " (related " + describe(related) + ")"
	}
	r.events = append(r.events, e)
}

func describe(o runtime.Object) string {
	switch o := o.(type) {
	case *corev1.ObjectReference:
		return fmt.Sprintf("%s/%s %s", o.Kind, o.Name, o.UID)
	case *corev1.ConfigMap:
		return "ConfigMap/" + o.Name
	}
	return fmt.Sprintf("%T", o)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.events))
}

// fixture is a Reconciler over exampletest.FakeCluster, its informers
// shared through a SharedInformerFactory, and an upgrade request
// "kubelet" in a controller-runtime fake client.
type fixture struct {
	r    *Reconciler
	c    client.Client
	kube *fake.Clientset
	rec  *recorder
	ctx  context.Context
}

func newFixture(t *testing.T, cluster exampletest.ClusterOptions, data map[string]string, opts Options) *fixture {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx := klog.NewContext(t.Context(), logger)
	kube := exampletest.FakeCluster(cluster)
	factory := informers.NewSharedInformerFactory(kube, 0)
	shared := clusterinformers.FromFactory(factory)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	t.Cleanup(factory.Shutdown)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "kubelet", Labels: map[string]string{RequestLabel: ""}}, Data: data}
	c := crfake.NewClientBuilder().WithObjects(cm).Build()
	rec := &recorder{}
	r, err := NewReconciler(c, kube, shared, rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{r: r, c: c, kube: kube, rec: rec, ctx: ctx}
}

var requestKey = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "kubelet"}}

func (f *fixture) status(t *testing.T) Status {
	t.Helper()
	var cm corev1.ConfigMap
	if err := f.c.Get(f.ctx, requestKey.NamespacedName, &cm); err != nil {
		t.Fatal(err)
	}
	st, err := StatusOf(&cm)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// conditions are a Status's conditions as "Type Status Reason".
func conditions(st Status) []string {
	var out []string
	for _, c := range st.Conditions {
		out = append(out, fmt.Sprintf("%s %s %s", c.Type, c.Status, c.Reason))
	}
	return out
}

func TestReconcileRollsOut(t *testing.T) {
	var upgraded []string
	f := newFixture(t, exampletest.ClusterOptions{Allowed: 1}, map[string]string{KeyTargetVersion: "1.37.2", KeyDomains: "ud-1, ud-2"}, Options{
		Upgrade: func(ctx context.Context, dom topology.Domain, req Request) error {
			upgraded = append(upgraded, dom.Name+" "+req.TargetVersion)
			return nil
		},
	})
	res, err := f.r.Reconcile(f.ctx, requestKey)
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile = %+v, %v; want done", res, err)
	}
	st := f.status(t)
	if diff := cmp.Diff(Status{ID: "kubelet-1.37.2", Phase: PhaseSucceeded,
		Domains: []DomainState{{"ud-1", eviction.StateDone}, {"ud-2", eviction.StateDone}}}, st, cmpopts.IgnoreFields(Status{}, "Conditions")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Succeeded True RolloutDone", "Progressing False RolloutDone", "GroupsHealthy True GroupReady"}, conditions(st)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if msg := st.Condition(ConditionSucceeded).Message; !strings.HasPrefix(msg, "2 domain(s) upgraded, 0 skipped (done before), 2 group(s) disrupted") {
		t.Errorf("Succeeded's message %q", msg)
	}
	if diff := cmp.Diff([]string{"ud-1 1.37.2", "ud-2 1.37.2"}, upgraded); diff != "" {
		t.Errorf("upgrade step (-want +got):\n%s", diff)
	}
	for _, n := range []string{"node-a1", "node-a2", "node-b1", "node-b2"} {
		node, err := f.kube.CoreV1().Nodes().Get(f.ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels[TargetVersionLabel] != "1.37.2" || node.Spec.Unschedulable || node.Annotations[udrain.UpgradedByAnnotation] != "kubelet-1.37.2" {
			t.Errorf("node %s: labels %v, annotations %v, unschedulable %t", n, node.Labels, node.Annotations, node.Spec.Unschedulable)
		}
	}
	// Events on the evicted pods by the UID they had, on the nodes, and on
	// the request.
	want := []string{"ConfigMap/kubelet Normal DomainUpgraded", "ConfigMap/kubelet Normal DomainUpgraded", "ConfigMap/kubelet Normal RolloutDone"}
	for _, p := range []string{"llm-0", "llm-0-1", "llm-1", "llm-1-1"} {
		want = append(want, "Pod/"+p+" "+p+" Normal Evicted (related ConfigMap/kubelet)")
	}
	for _, n := range []string{"node-a1", "node-a2", "node-b1", "node-b2"} {
		want = append(want, "Node/"+n+" "+n+" Normal Cordoned (related ConfigMap/kubelet)", "Node/"+n+" "+n+" Normal Uncordoned (related ConfigMap/kubelet)")
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), f.rec.all()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Done is done: the request is not run again.
	before := len(f.kube.Actions())
	if res, err := f.r.Reconcile(f.ctx, requestKey); err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile again = %+v, %v", res, err)
	}
	if n := len(f.kube.Actions()) - before; n != 0 || len(upgraded) != 2 {
		t.Errorf("reconciling a succeeded request sent %d request(s) and upgraded %d domain(s), want none and still 2", n, len(upgraded))
	}

	// A new target version is a new rollout.
	var cm corev1.ConfigMap
	if err := f.c.Get(f.ctx, requestKey.NamespacedName, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[KeyTargetVersion] = "1.37.3"
	if err := f.c.Update(f.ctx, &cm); err != nil {
		t.Fatal(err)
	}
	if res, err := f.r.Reconcile(f.ctx, requestKey); err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile of 1.37.3 = %+v, %v", res, err)
	}
	if st := f.status(t); st.ID != "kubelet-1.37.3" || st.Phase != PhaseSucceeded {
		t.Errorf("status after 1.37.3: %+v, want rollout kubelet-1.37.3 succeeded", st)
	}
	if diff := cmp.Diff([]string{"ud-1 1.37.2", "ud-2 1.37.2", "ud-1 1.37.3", "ud-2 1.37.3"}, upgraded); diff != "" {
		t.Errorf("upgrade step after 1.37.3 (-want +got):\n%s", diff)
	}
}

// TestReconcileRecoveryTimeout: replacements that do not become Ready stop
// the rollout in recovery; the status names the stage and, from package
// health's judgment, the group and why, and the rollout is tried again
// after RetryAfter.
func TestReconcileRecoveryTimeout(t *testing.T) {
	f := newFixture(t, exampletest.ClusterOptions{Allowed: 1, Unready: true}, map[string]string{KeyTargetVersion: "1.37.2"},
		Options{RecoveryTimeout: 300 * time.Millisecond, RetryAfter: 7 * time.Second})
	res, err := f.r.Reconcile(f.ctx, requestKey)
	if err != nil || res.RequeueAfter != 7*time.Second {
		t.Fatalf("Reconcile = %+v, %v; want a retry after 7s", res, err)
	}
	st := f.status(t)
	if st.Phase != PhaseFailed || !slices.Equal(st.Domains, []DomainState{{"ud-1", eviction.StateFailed}, {"ud-2", eviction.StatePending}}) {
		t.Errorf("status %+v, want Failed with ud-1 failed and ud-2 pending", st)
	}
	if diff := cmp.Diff([]string{"Succeeded False StoppedAtRecovery", "Progressing False StoppedAtRecovery", "GroupsHealthy False MemberNotReady"}, conditions(st)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if msg := st.Condition(ConditionGroupsHealthy).Message; !strings.HasPrefix(msg, "domain ud-1: group serving/llm-0: ") {
		t.Errorf("GroupsHealthy's message %q does not name the group", msg)
	}
	if !slices.Contains(f.rec.all(), "ConfigMap/kubelet Warning StoppedAtRecovery") {
		t.Errorf("no StoppedAtRecovery warning on the request: %q", f.rec.all())
	}
}

// TestReconcileInterrupted: a controller that stops during a rollout
// leaves the request Interrupted, and asks for no retry: the next start
// reconciles it anyway, and the rollout resumes.
func TestReconcileInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, exampletest.ClusterOptions{Allowed: 1}, map[string]string{KeyTargetVersion: "1.37.2"}, Options{
		Upgrade: func(ctx context.Context, dom topology.Domain, _ Request) error {
			cancel() // the manager stops
			<-ctx.Done()
			return ctx.Err()
		},
	})
	res, err := f.r.Reconcile(klog.NewContext(ctx, klog.FromContext(f.ctx)), requestKey)
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile = %+v, %v; want no retry and no error", res, err)
	}
	st := f.status(t)
	if st.Phase != PhaseInterrupted || !slices.Equal(st.Domains, []DomainState{{"ud-1", eviction.StateInterrupted}, {"ud-2", eviction.StatePending}}) {
		t.Errorf("status %+v, want Interrupted in ud-1", st)
	}
	if diff := cmp.Diff([]string{"Succeeded False Interrupted", "Progressing False Interrupted"}, conditions(st)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

// TestReconcileInvalidRequest: a request without a target version is
// refused with a condition and a warning saying what to set; nothing is
// cordoned or evicted.
func TestReconcileInvalidRequest(t *testing.T) {
	f := newFixture(t, exampletest.ClusterOptions{Allowed: 1}, map[string]string{KeyDomains: "ud-1"}, Options{})
	before := len(f.kube.Actions())
	res, err := f.r.Reconcile(f.ctx, requestKey)
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile = %+v, %v; want no retry (the request must change)", res, err)
	}
	st := f.status(t)
	if st.Phase != PhaseInvalid || !strings.Contains(st.Condition(ConditionSucceeded).Message, "data.targetVersion is missing") {
		t.Errorf("status %+v, want Invalid saying data.targetVersion is missing", st)
	}
	if n := len(f.kube.Actions()) - before; n != 0 {
		t.Errorf("%d request(s) sent to the cluster for an invalid request: %v", n, f.kube.Actions()[before:])
	}
	if diff := cmp.Diff([]string{"ConfigMap/kubelet Warning InvalidRequest"}, f.rec.all()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
