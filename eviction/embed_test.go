package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/topology"
)

// listsAndWatches counts the list and watch requests the fake clientset
// has seen.
func listsAndWatches(fc *fakeCluster) (lists, watches int) {
	for _, a := range fc.client.Actions() {
		switch a.GetVerb() {
		case "list":
			lists++
		case "watch":
			watches++
		}
	}
	return lists, watches
}

// waitWatching waits until every informer that listed has started its
// watch: WaitForCacheSync returns once the lists are in, and a reflector
// sends its watch just after, so a count taken at once may miss it.
func waitWatching(t *testing.T, fc *fakeCluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lists, watches := listsAndWatches(fc)
		if watches >= lists {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informers made %d lists but only %d watches within 10s", lists, watches)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startFactory starts a controller's informer factory with udrain's
// informers registered, and waits for its sync.
func startFactory(t *testing.T, ctx context.Context, client kubernetes.Interface, opts ...informers.SharedInformerOption) *clusterinformers.Set {
	t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	inf := clusterinformers.FromFactory(f)
	ctx, cancel := context.WithCancel(ctx)
	f.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	return inf
}

// A controller that shares its informers makes udrain read through them:
// plans, drains and health checks add no list and no watch, where a
// Drainer with its own informers lists and watches on every call.
func TestSharedInformersAddNoListOrWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"shared informers", true}, {"own informers", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(3, 2, 2)...)
			opts := Options{Backoff: slowBackoff, AllowViolations: true}
			if tc.shared {
				opts.Informers = startFactory(t, ctx, fc.client)
				waitWatching(t, fc)
			}
			d, err := New(fc.client, opts)
			if err != nil {
				t.Fatal(err)
			}
			lists0, watches0 := listsAndWatches(fc)
			for range 10 {
				if _, err := d.Plan(ctx, "ud-1"); err != nil {
					t.Fatal(err)
				}
			}
			for _, dom := range []string{"ud-1", "ud-2", "ud-3"} {
				fc.setBudget(ctx, 1, 3) // the previous domain's group is back
				if _, _, err := d.Drain(ctx, dom, DrainOptions{ID: "maint"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.Health(ctx); err != nil {
				t.Fatal(err)
			}
			lists, watches := listsAndWatches(fc)
			lists, watches = lists-lists0, watches-watches0
			t.Logf("%d lists, %d watches for 10 plans, 3 drains and a health check; %d evictions", lists, watches, len(fc.evicted()))
			if len(fc.evicted()) != 6 {
				t.Errorf("evicted %v, want the 6 pods of the 3 domains", fc.evicted())
			}
			if tc.shared && lists+watches != 0 {
				t.Errorf("%d lists and %d watches through shared informers, want none", lists, watches)
			}
			// Own informers: nodes, pods and budgets listed and watched
			// per call (14 calls); PodGroups are not listed, since no pod
			// names one.
			if !tc.shared && (lists < 14*3 || watches < 14*3) {
				t.Errorf("own informers made only %d lists and %d watches for 14 calls: the comparison cannot tell the two apart", lists, watches)
			}
		})
	}
}

// fakeCache has the shape of a controller-runtime cache's GetInformer
// (client.Object, InformerGetOption, Informer), built on a client-go
// factory.
type fakeGetOption func()
type fakeCRInformer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error
	HasSynced() bool
	IsStopped() bool
}
type fakeCache struct {
	f    informers.SharedInformerFactory
	asks []string
}

func (c *fakeCache) GetInformer(ctx context.Context, obj metav1.Object, opts ...fakeGetOption) (fakeCRInformer, error) {
	c.asks = append(c.asks, fmt.Sprintf("%T", obj))
	inf, err := c.f.ForResource(gvrOf(obj))
	if err != nil {
		return nil, err
	}
	return inf.Informer(), nil
}

func gvrOf(obj metav1.Object) schema.GroupVersionResource {
	switch obj.(type) {
	case *corev1.Node:
		return schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	case *corev1.Pod:
		return schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	case *policyv1.PodDisruptionBudget:
		return schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	case *appsv1.DaemonSet:
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	}
	return schema.GroupVersionResource{}
}

// clusterinformers.FromCache takes a cache with controller-runtime's method shape
// as it is, without an adapter: its type parameters are inferred.
func TestInformersFromCache(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	c := &fakeCache{f: informers.NewSharedInformerFactory(fc.client, 0)}
	inf, err := clusterinformers.FromCache(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"*v1.Node", "*v1.Pod", "*v1.PodDisruptionBudget", "*v1.DaemonSet"}, c.asks); diff != "" {
		t.Errorf("informers asked of the cache (-want +got):\n%s", diff)
	}
	stop := make(chan struct{})
	c.f.Start(stop)
	defer func() {
		close(stop)
		c.f.Shutdown()
	}()
	c.f.WaitForCacheSync(ctx.Done())
	d, err := New(fc.client, Options{Informers: inf})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.Plan(ctx, "ud-2")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(plan.Phase1); !cmp.Equal(got, []string{"inference/llm-1"}) {
		t.Errorf("phase 1 %v, want the leader of ud-2", got)
	}
}

// Informers that were never started make a call fail after
// ConnectTimeout, saying what to do, instead of hanging.
func TestUnstartedInformersFailWithAHint(t *testing.T) {
	fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
	f := informers.NewSharedInformerFactory(fc.client, 0)
	d, err := New(fc.client, Options{Informers: clusterinformers.FromFactory(f), ConnectTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Plan(testContext(t), "ud-1")
	var ns *RetryError
	if !asReason(err, &ns, ReasonNotSynced) || !strings.Contains(err.Error(), "start them") {
		t.Fatalf("Plan over informers never started: %v, want *RetryError (ReasonNotSynced) saying to start them", err)
	}
}

// A namespace scope limits what a drain sees and evicts.
func TestNamespaceScope(t *testing.T) {
	ctx := testContext(t)
	objs := lwsCluster(2, 1, 2)
	web := readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "web-0", UID: "web-0", OwnerReferences: ownedBy("ReplicaSet", "web")},
		Spec: corev1.PodSpec{NodeName: "node-1-1"}})
	fc := newFakeCluster(t, append(objs, web)...)
	for _, shared := range []bool{false, true} {
		opts := Options{Namespace: "web", Backoff: slowBackoff}
		if shared {
			opts.Informers = startFactory(t, ctx, fc.client)
		}
		d, err := New(fc.client, opts)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := d.Plan(ctx, "ud-1")
		if err != nil {
			t.Fatal(err)
		}
		if got := append(keys(plan.Phase1), keys(plan.Phase2)...); !cmp.Equal(got, []string{"web/web-0"}) {
			t.Errorf("shared=%v: plan of namespace web %v, want only web/web-0", shared, got)
		}
	}
	d, _ := New(fc.client, Options{Namespace: "web"})
	_, err := d.Rollout(ctx, RolloutOptions{Upgrade: func(context.Context, topology.Domain) error { return nil }})
	var cfg *udrain.ConfigError
	if !errors.As(err, &cfg) || cfg.Field != "eviction.Options.Namespace" {
		t.Errorf("rollout with an upgrade step in a namespace scope: %v, want a ConfigError on Options.Namespace", err)
	}
}

// OnEvent never runs twice at once on one Drainer, whatever its calls do
// concurrently.
func TestOnEventIsSerialisedPerDrainer(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(3, 2, 4)...)
	fc.setBudget(ctx, 3, 3) // the three drains may run at once
	var inside, most, calls atomic.Int32
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(context.Context, Event) {
		n := inside.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		calls.Add(1)
		time.Sleep(200 * time.Microsecond)
		inside.Add(-1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, dom := range []string{"ud-1", "ud-2", "ud-3"} {
		wg.Go(func() {
			if _, _, err := d.Drain(ctx, dom, DrainOptions{ID: "maint"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 || calls.Load() < 30 {
		t.Errorf("%d events, at most %d callbacks at once; want many events, one at a time", calls.Load(), most.Load())
	}
}

// Every event of a drain carries its ID; pod events carry the pod's
// namespace, name, UID and node and its phase.
func TestEventsCarryIDsAndPods(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 2, 2)...)
	log := newEventLog()
	d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if _, _, err := d.Drain(ctx, "ud-1", DrainOptions{ID: "maint-42"}); err != nil {
		t.Fatal(err)
	}
	for _, e := range log.all() {
		if e.ID != "maint-42" || e.Domain != "ud-1" {
			t.Errorf("event %s: ID %q domain %q, want maint-42 and ud-1", e.Type, e.ID, e.Domain)
		}
		switch e.Type {
		case EventEvicting, EventEvicted, EventGone:
			if e.Pod == nil || e.Pod.UID == "" || e.Pod.Node == "" || e.Node != e.Pod.Node || e.Stage == "" {
				t.Errorf("pod event %s: pod %+v node %q stage %q", e.Type, e.Pod, e.Node, e.Stage)
			}
		}
	}
	gone := log.ofType(EventGone)
	want := map[string]Stage{"inference/llm-0": StagePhase1, "inference/llm-0-1": StagePhase2}
	if len(gone) != 2 {
		t.Fatalf("%d Gone events, want 2", len(gone))
	}
	for _, e := range gone {
		if want[e.Pod.String()] != e.Stage {
			t.Errorf("Gone %s in %s, want %s", e.Pod, e.Stage, want[e.Pod.String()])
		}
	}
}

// A drain's ID is its cordon mark: a rollout with another ID refuses the
// domain and says which library call releases it.
func TestDrainIDHoldsTheDomain(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	if _, _, err := d.Drain(ctx, "ud-1", DrainOptions{ID: "maint-42"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{}); n.Annotations[udrain.CordonedByAnnotation] != "maint-42" {
		t.Fatalf("cordon mark %q, want maint-42", n.Annotations[udrain.CordonedByAnnotation])
	}
	_, err := d.Rollout(ctx, RolloutOptions{ID: "kubelet-1.37"})
	var ip *RetryError
	var de *DomainError
	if !asReason(err, &ip, ReasonInProgress) || ip.By != "maint-42" || !errors.As(err, &de) || de.Domain != "ud-1" || de.Stage != StagePlan {
		t.Fatalf("rollout over a drained domain: %v, want a DomainError at Plan with an InProgress RetryError by maint-42", err)
	}
	// What resumes it is in the fields (By, Domain), not in prose for one
	// kind of caller: the message says what is, in terms of both.
	if msg := err.Error(); !strings.Contains(msg, `cordoned by "maint-42"`) || strings.Contains(msg, "udrain uncordon") || strings.Contains(msg, "Drainer.") {
		t.Errorf("the message names a call or a command, or not who cordoned the domain: %s", msg)
	}
}

// DomainError.Cordoned: the stages between the cordon and the uncordon,
// and the message says so only then.
func TestDomainErrorCordoned(t *testing.T) {
	for _, tc := range []struct {
		stage Stage
		want  bool
	}{
		{StagePlan, false},
		{StageCordon, false},
		{StagePhase1, true},
		{StagePhase2, true},
		{StageWaitGone, true},
		{StageUpgrade, true},
		{StageGPUCheck, true},
		{StageUncordon, false},
		{StageRecovery, false},
	} {
		e := &DomainError{Domain: "ud-1", Stage: tc.stage, Err: errors.New("boom")}
		if got := e.Cordoned(); got != tc.want {
			t.Errorf("%s: Cordoned() = %v, want %v", tc.stage, got, tc.want)
		}
		if got := strings.Contains(e.Error(), "stay cordoned"); got != tc.want {
			t.Errorf("%s: %q says the nodes stay cordoned: %v, want %v", tc.stage, e.Error(), got, tc.want)
		}
	}
}

// Every way a domain stops is a *DomainError with the stage, that unwraps
// to its cause.
func TestDomainErrorUnwrapsToTheCause(t *testing.T) {
	stepFailed := errors.New("the node image did not boot")
	for _, tc := range []struct {
		name      string
		run       func(ctx context.Context, cancel context.CancelFunc, fc *fakeCluster) error
		stage     Stage
		cause     error
		wantBlock bool
	}{{
		name: "cancelled while blocked",
		run: func(ctx context.Context, cancel context.CancelFunc, fc *fakeCluster) error {
			fc.setBudget(ctx, 0, 2)
			d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(_ context.Context, e Event) {
				if e.Type == EventBlocked {
					cancel()
				}
			}})
			_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
			return err
		},
		stage: StagePhase1, cause: context.Canceled, wantBlock: true,
	}, {
		name: "the context's deadline in phase 1",
		run: func(ctx context.Context, _ context.CancelFunc, fc *fakeCluster) error {
			fc.setBudget(ctx, 0, 2)
			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			_, _, err := d.Drain(short, "ud-1", DrainOptions{})
			return err
		},
		stage: StagePhase1, cause: context.DeadlineExceeded, wantBlock: true,
	}, {
		name: "the upgrade step fails",
		run: func(ctx context.Context, _ context.CancelFunc, fc *fakeCluster) error {
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			_, err := d.Rollout(ctx, RolloutOptions{Upgrade: func(context.Context, topology.Domain) error { return stepFailed }})
			return err
		},
		stage: StageUpgrade, cause: stepFailed,
	}, {
		name: "recovery times out",
		run: func(ctx context.Context, _ context.CancelFunc, fc *fakeCluster) error {
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			_, err := d.Rollout(ctx, RolloutOptions{RecoveryTimeout: 300 * time.Millisecond})
			return err
		},
		stage: StageRecovery, cause: context.DeadlineExceeded,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			err := tc.run(ctx, cancel, fc)
			var de *DomainError
			if !errors.As(err, &de) {
				t.Fatalf("err = %T %v, want a *DomainError", err, err)
			}
			if de.Domain != "ud-1" || de.Stage != tc.stage || !errors.Is(err, tc.cause) {
				t.Errorf("DomainError %+v: want domain ud-1, stage %s, unwrapping to %v", de, tc.stage, tc.cause)
			}
			var be *RetryError
			if got := asReason(err, &be, ReasonBlocked); got != tc.wantBlock {
				t.Errorf("unwraps to a *RetryError (ReasonBlocked): %v, want %v", got, tc.wantBlock)
			}
			if tc.wantBlock && (len(de.Pending) != 2 || de.Block == nil || de.Block.PDB != "llm-leaders") {
				t.Errorf("pending %v block %+v, want the 2 pods of ud-1 and llm-leaders", de.Pending, de.Block)
			}
			if tc.stage == StageRecovery && (de.Health == nil || de.Health.Healthy || len(de.Health.Groups) != 1 || de.Timeout != 300*time.Millisecond) {
				t.Errorf("recovery stop: health %+v timeout %v, want the group not healthy and the 300ms timeout", de.Health, de.Timeout)
			}
		})
	}
}

// A logger in the context hears the decisions an operator needs at V(0),
// and each retry at V(2).
func TestLogging(t *testing.T) {
	for _, tc := range []struct {
		verbosity int
		want      []string
		notWant   []string
	}{
		{0, []string{`"Draining domain"`, `"Blocked by PodDisruptionBudget"`, `"PodDisruptionBudget no longer blocks"`, `"Domain drained"`, `"Rollout started"`, `"Recovered"`, `"Rollout done"`}, []string{`"Evicted"`, `"Still blocked"`}},
		{2, []string{`"Evicted"`, `"Waiting for recovery"`}, nil},
	} {
		t.Run(fmt.Sprint("v", tc.verbosity), func(t *testing.T) {
			var buf testkit.SyncBuffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(tc.verbosity), textlogger.Output(&buf)))
			ctx := klog.NewContext(testContext(t), logger)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			fc.setBudget(ctx, 0, 2)
			d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(_ context.Context, e Event) {
				if e.Type == EventBlocked {
					go fc.setBudget(ctx, 1, 2)
				}
				if e.Type == EventUncordoned && e.Domain == "ud-1" {
					go fc.recreateGroup(ctx, 0, 2, 1, 1, 2)
				}
				if e.Type == EventUncordoned && e.Domain == "ud-2" {
					go fc.recreateGroup(ctx, 1, 2, 2, 1, 2)
				}
			}})
			if _, err := d.Rollout(ctx, RolloutOptions{ID: "r"}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("log has no %s line:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("log at V(%d) has a %s line", tc.verbosity, w)
				}
			}
		})
	}
}

// A stop is logged at V(0) with why: what an operator reading the default
// log needs to act on.
func TestLoggingOfStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, fc *fakeCluster) error
		want []string
	}{
		{"upgrade step fails", func(ctx context.Context, fc *fakeCluster) error {
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r", Upgrade: func(context.Context, topology.Domain) error { return errors.New("firmware flash failed") }})
			return err
		}, []string{`"Domain drained"`, `"Upgrade step started"`, `"Rollout stopped"`, `domain="ud-1"`, `firmware flash failed`}},
		{"drain times out on a spent budget", func(ctx context.Context, fc *fakeCluster) error {
			fc.setBudget(ctx, 0, 2)
			d, _ := New(fc.client, Options{Backoff: slowBackoff, Helper: &drain.Helper{GracePeriodSeconds: -1, Timeout: time.Second}})
			_, _, err := d.Drain(ctx, "ud-1", DrainOptions{ID: "d"})
			return err
		}, []string{`"Blocked by PodDisruptionBudget"`, `"Domain stopped"`, `domain="ud-1"`, `pdb="inference/llm-leaders"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf testkit.SyncBuffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(0), textlogger.Output(&buf)))
			ctx := klog.NewContext(testContext(t), logger)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			if err := tc.run(ctx, fc); err == nil {
				t.Fatal("the call did not stop")
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("V(0) log has no %s:\n%s", w, out)
				}
			}
		})
	}
}

// An API server that cannot be reached fails a call with its address after
// ConnectTimeout, and changes nothing.
func TestUnreachableAPIServer(t *testing.T) {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(client, Options{ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = d.Plan(testContext(t), "ud-1")
	took := time.Since(start)
	var ue *RetryError
	if !asReason(err, &ue, ReasonUnreachable) || ue.Server != "https://127.0.0.1:1" || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Plan against a closed port: %v, want a *RetryError (ReasonUnreachable) naming https://127.0.0.1:1", err)
	}
	if took > 5*time.Second {
		t.Errorf("took %s to give up, want about the 500ms ConnectTimeout", took)
	}
}

// Options that contradict each other or cannot work are errors that name
// the Go field.
func TestConfigErrorsNameTheField(t *testing.T) {
	fc := newFakeCluster(t)
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{Helper: &drain.Helper{DisableEviction: true}, Evictor: PodDeletion(fc.client)}, "eviction.Options.Evictor"},
		{Options{Concurrency: -1}, "eviction.Options.Concurrency"},
		{Options{BudgetRecheck: -time.Second}, "eviction.Options.BudgetRecheck"},
		{Options{Helper: &drain.Helper{Timeout: -time.Second}}, "eviction.Options.Helper.Timeout"},
		{Options{Namespace: "Not_A_Namespace"}, "eviction.Options.Namespace"},
		{Options{DomainLabel: "not a label!"}, "eviction.Options.DomainLabel"},
		{Options{DomainLabel: "topology.udrain.dev/"}, "eviction.Options.DomainLabel"},
		{Options{Informers: &clusterinformers.Set{Nodes: cache.NewSharedIndexInformer(nil, &corev1.Node{}, 0, nil)}}, "eviction.Options.Informers.Pods"},
	} {
		_, err := New(fc.client, tc.opts)
		var cfg *udrain.ConfigError
		if !errors.As(err, &cfg) || cfg.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a ConfigError on %s", tc.opts, err, tc.field)
		}
	}
}

// Options.Validate, DrainOptions.Validate and RolloutOptions.Validate
// return, without a cluster, the ConfigError that New, Drain (and
// Execute) and RolloutStatus return; Drain and Execute refuse a bad ID
// before any request.
func TestValidateWithoutACluster(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"Options, fine", Options{}.Validate(), ""},
		{"Options, negative concurrency", Options{Concurrency: -1}.Validate(), "eviction.Options.Concurrency"},
		{"Options, bad pod selector", Options{Helper: &drain.Helper{PodSelector: "a in (b"}}.Validate(), "eviction.Options.Helper.PodSelector"},
		{"DrainOptions, default ID", DrainOptions{}.Validate(), ""},
		{"DrainOptions, an ID", DrainOptions{ID: "maintenance-2026.12"}.Validate(), ""},
		{"DrainOptions, a space", DrainOptions{ID: "a b"}.Validate(), "eviction.DrainOptions.ID"},
		{"DrainOptions, too long", DrainOptions{ID: long}.Validate(), "eviction.DrainOptions.ID"},
		{"status, default ID", RolloutOptions{}.Validate(), ""},
		{"status, bad ID", RolloutOptions{ID: "a b"}.Validate(), "eviction.RolloutOptions.ID"},
		{"status, a domain twice", RolloutOptions{Domains: []string{"ud-1", "ud-1"}}.Validate(), "eviction.RolloutOptions.Domains"},
		{"status, default interval", RolloutOptions{StatusInterval: 0}.Validate(), ""},
		{"status, negative interval", RolloutOptions{StatusInterval: -time.Second}.Validate(), "eviction.RolloutOptions.StatusInterval"},
	} {
		var cfg *udrain.ConfigError
		switch {
		case tc.field == "" && tc.err != nil:
			t.Errorf("%s: %v, want nil", tc.name, tc.err)
		case tc.field != "" && (!errors.As(tc.err, &cfg) || cfg.Field != tc.field):
			t.Errorf("%s: %v, want a ConfigError on %s", tc.name, tc.err, tc.field)
		}
	}
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(1, 1, 2)...)
	d, err := New(fc.client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := len(fc.client.Actions())
	_, _, drainErr := d.Drain(ctx, "ud-1", DrainOptions{ID: "a b"})
	_, execErr := d.Execute(ctx, &Plan{Domain: "ud-1"}, DrainOptions{ID: "a b"})
	for _, err := range []error{drainErr, execErr} {
		var cfg *udrain.ConfigError
		if !errors.As(err, &cfg) || cfg.Field != "eviction.DrainOptions.ID" {
			t.Errorf("Drain or Execute with ID %q = %v, want a ConfigError on eviction.DrainOptions.ID", "a b", err)
		}
	}
	if got := fc.client.Actions()[before:]; len(got) != 0 {
		t.Errorf("%d requests for a bad ID, want none: %v", len(got), got)
	}
}

// WaitRecovered waits for the groups a drain disrupted, also while none of
// their pods exists yet (WaitHealthy of the domain sees no group then).
func TestWaitRecoveredAfterADrain(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	d, _ := New(fc.client, Options{Backoff: slowBackoff})
	plan, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Uncordon(ctx, "ud-1"); err != nil {
		t.Fatal(err)
	}
	if r, err := d.WaitHealthy(ctx, "ud-1"); err != nil || !r.Healthy || len(r.Domains[0].Groups) != 0 {
		t.Fatalf("WaitHealthy of the drained domain = %+v, %v: want healthy with no group (none of its pods exists)", r, err)
	}
	h, err := d.WaitRecovered(deadlineOnceWaiting(ctx), plan)
	var de *DomainError
	if !errors.As(err, &de) || de.Stage != StageRecovery || h == nil || h.Healthy || len(h.Unhealthy().Groups) != 1 {
		t.Fatalf("WaitRecovered before the group is back = %+v, %v: want a DomainError at Recovery with the group not healthy", h, err)
	}
	go fc.recreateGroup(ctx, 0, 2, 1, 1, 2)
	if h, err := d.WaitRecovered(ctx, plan); err != nil || !h.Healthy {
		t.Fatalf("WaitRecovered after the group is back = %+v, %v", h, err)
	}
}

// With its own informers, a Drainer lists native PodGroups only when a pod
// names one: the list then gives the gang's expected size; without such a
// pod it costs no request.
func TestPodGroupsListedOnlyWhenAPodNamesOne(t *testing.T) {
	for _, tc := range []struct {
		name      string
		member    bool
		wantLists int
	}{{"no pod names a PodGroup", false, 0}, {"a pod names a PodGroup", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			objs := lwsCluster(1, 1, 2)
			gang := "gang"
			pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: gang},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}}}}
			objs = append(objs, pg)
			if tc.member {
				for i := range 2 {
					objs = append(objs, readyPod(&corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: fmt.Sprintf("gang-%d", i), UID: types.UID(fmt.Sprintf("gang-%d", i)), OwnerReferences: ownedBy("ReplicaSet", "gang")},
						Spec:       corev1.PodSpec{NodeName: "node-1-1", SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: &gang}}}))
				}
			}
			fc := newFakeCluster(t, objs...)
			d, err := New(fc.client, Options{Backoff: slowBackoff, AllowViolations: true})
			if err != nil {
				t.Fatal(err)
			}
			var logs testkit.SyncBuffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&logs)))
			plan, err := d.Plan(klog.NewContext(ctx, logger), "ud-1")
			if err != nil {
				t.Fatal(err)
			}
			// Without a list, the V(2) log still says why there are no
			// native groups (an operator debugging grouping looks there).
			if said := strings.Contains(logs.String(), "No native PodGroups"); said == tc.member {
				t.Errorf("V(2) log says 'No native PodGroups': %v, want %v:\n%s", said, !tc.member, logs.String())
			}
			lists := 0
			for _, a := range fc.client.Actions() {
				if a.GetVerb() == "list" && a.GetResource().Resource == "podgroups" {
					lists++
				}
			}
			if lists != tc.wantLists {
				t.Errorf("%d lists of PodGroups, want %d", lists, tc.wantLists)
			}
			if !tc.member {
				return
			}
			var sizes []int
			for _, g := range plan.Groups {
				if g.ID.Kind == topology.KindPodGroup {
					sizes = append(sizes, g.Size)
				}
			}
			if !cmp.Equal(sizes, []int{3}) {
				t.Errorf("expected sizes of the PodGroup groups in the plan %v, want [3] (the gang's minCount, from the listed PodGroup)", sizes)
			}
		})
	}
}

type ctxMark struct{}

// A call's own OnEvent gets the call's events, in Seq order, with the
// call's context, and a slow one holds back only its own call: a drain
// whose sink is stuck does not stop another drain on the same Drainer.
func TestCallOnEventHoldsBackOnlyItsCall(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 2, 4)...)
	fc.setBudget(ctx, 2, 2) // both drains may run at once
	all := newEventLog()
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: all.add})
	if err != nil {
		t.Fatal(err)
	}
	stuck, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var slowEvents []Event
	slowDone := make(chan error, 1)
	go func() {
		_, _, err := d.Drain(context.WithValue(ctx, ctxMark{}, "slow"), "ud-1", DrainOptions{ID: "slow", OnEvent: func(cctx context.Context, e Event) {
			if cctx.Value(ctxMark{}) != "slow" {
				t.Errorf("the slow drain's OnEvent got another context")
			}
			slowEvents = append(slowEvents, e)
			if e.Type == EventEvicted {
				once.Do(func() { close(stuck); <-release }) // a status write that hangs
			}
		}})
		slowDone <- err
	}()
	select {
	case <-stuck:
	case <-ctx.Done():
		t.Fatal("the slow drain evicted nothing")
	}
	var fastEvents []Event
	var res *Result
	fastDone := make(chan error, 1)
	go func() {
		var err error
		_, res, err = d.Drain(context.WithValue(ctx, ctxMark{}, "fast"), "ud-2", DrainOptions{ID: "fast", OnEvent: func(cctx context.Context, e Event) {
			if cctx.Value(ctxMark{}) != "fast" {
				t.Errorf("the fast drain's OnEvent got another context")
			}
			fastEvents = append(fastEvents, e)
		}})
		fastDone <- err
	}()
	select {
	case err := <-fastDone:
		close(release)
		if err != nil {
			t.Fatalf("a drain beside one whose OnEvent hangs: %v", err)
		}
	case <-time.After(20 * time.Second):
		close(release)
		<-fastDone
		t.Fatal("a drain did not end in 20 s while another drain's OnEvent hung")
	}
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	if res.Pods.Phase2Evicted == 0 {
		t.Errorf("the fast drain evicted no worker: %+v", res)
	}
	for name, evs := range map[string][]Event{"slow": slowEvents, "fast": fastEvents} {
		var want []Event
		for _, e := range all.all() {
			if e.ID == name {
				want = append(want, e)
			}
		}
		if len(evs) == 0 {
			t.Fatalf("drain %s: its OnEvent got nothing", name)
		}
		if diff := cmp.Diff(want, evs, cmpopts.IgnoreFields(Event{}, "Err")); diff != "" {
			t.Errorf("drain %s: its OnEvent's events differ from the Drainer's for its ID (-Drainer +call):\n%s", name, diff)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].Seq <= evs[i-1].Seq {
				t.Errorf("drain %s: event %d has Seq %d after %d", name, i, evs[i].Seq, evs[i-1].Seq)
			}
		}
	}
}

// Options.OnEvent has the calls' hook signature and gets the context of
// the call that sent each event, with or without a hook of the call's
// own.
func TestDrainerOnEventGetsTheCallsContext(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 2, 4)...)
	fc.setBudget(ctx, 2, 2)
	var mu sync.Mutex
	marks := map[any]int{}
	d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: func(cctx context.Context, e Event) {
		mu.Lock()
		marks[cctx.Value(ctxMark{})]++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Drain(context.WithValue(ctx, ctxMark{}, "bare"), "ud-1", DrainOptions{ID: "bare"}); err != nil {
		t.Fatal(err)
	}
	own := 0
	if _, _, err := d.Drain(context.WithValue(ctx, ctxMark{}, "hooked"), "ud-2", DrainOptions{ID: "hooked", OnEvent: func(context.Context, Event) { own++ }}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if marks["bare"] == 0 || marks["hooked"] != own || len(marks) != 2 {
		t.Errorf("events by the mark of the context Options.OnEvent got: %v (the hooked drain's own hook got %d); want both drains' marks, and as many for the hooked drain as its own hook", marks, own)
	}
}

// TestPodCountsCount: each pod done with counts once, in its phase, by
// how it went.
func TestPodCountsCount(t *testing.T) {
	var c PodCounts
	for _, x := range []struct {
		phase Stage
		kind  outcomeKind
	}{{StagePhase1, outcomeAccepted}, {StagePhase1, outcomeGone}, {StagePhase2, outcomeAccepted}, {StagePhase2, outcomeAccepted}, {StagePhase2, outcomeWaited}} {
		c.count(x.phase, x.kind)
	}
	want := PodCounts{Phase1Evicted: 1, Phase1AlreadyGone: 1, Phase2Evicted: 2, Phase2AlreadyTerminating: 1}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if h1, h2 := c.Done(); h1 != 2 || h2 != 3 {
		t.Errorf("handled %d, %d; want 2, 3", h1, h2)
	}
}

func TestEventString(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Type: EventDomainDone, Domain: "ud-2", Message: "done in 4.2s", Time: time.Now()}, `DomainDone domain=ud-2 msg="done in 4.2s"`},
		{Event{Type: EventEvicted, Domain: "ud-1", Stage: StagePhase2, Pod: &topology.PodRef{Namespace: "web", Name: "web-1"}, Node: "cpu-1"}, `Evicted domain=ud-1 phase=2 pod=web/web-1 node=cpu-1`},
		{Event{Type: EventCordoned, DryRun: "server", Domain: "ud-1", Message: "a\nb"}, `Cordoned dryRun=server domain=ud-1 msg="a\nb"`},
		// A phase's pods found gone or terminating count as done with.
		{Event{Type: EventGone, Stage: StagePhase1, Progress: PodCounts{Phase1Total: 3, Phase1Evicted: 1, Phase1AlreadyGone: 1, Phase1AlreadyTerminating: 1, Phase2Total: 2, Gone: 2}},
			`Gone phase=1 phase1=3/3 phase2=0/2 gone=2`},
		// Stages other than the phases have no number.
		{Event{Type: EventUpgradeStarted, Stage: StageUpgrade}, `UpgradeStarted`},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
