package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/drain"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// readerCluster is two domains of two nodes with an LWS group of two
// (leader and worker) each and the budget over the leaders, the worker of
// ud-2 not Ready, ud-1 cordoned by rollout r1, and the pods a plain
// kubectl drain refuses: a DaemonSet's pod and a ReplicaSet's pod with an
// emptyDir volume on ud-1, a bare pod on ud-2.
func readerCluster() []runtime.Object {
	objs := lwsCluster(2, 2, 2)
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			if o.Labels[topology.DefaultDomainLabel] == "ud-1" {
				o.Annotations = map[string]string{udrain.CordonedByAnnotation: "r1"}
				o.Spec.Unschedulable = true
			}
		case *corev1.Pod:
			if o.Name == "llm-1-1" {
				o.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
			}
		}
	}
	agent := readyPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-agent-a", UID: "agent", OwnerReferences: ownedBy("DaemonSet", "node-agent")},
		Spec:       corev1.PodSpec{NodeName: "node-1-1"},
	})
	cached := readyPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "cache-a", UID: "cache", OwnerReferences: ownedBy("ReplicaSet", "cache")},
		Spec: corev1.PodSpec{NodeName: "node-1-2", Volumes: []corev1.Volume{{Name: "scratch",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	})
	bare := readyPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "debug", UID: "debug"},
		Spec:       corev1.PodSpec{NodeName: "node-2-1"},
	})
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-agent"}}
	return append(objs, agent, cached, bare, ds)
}

// readCalls are read methods of a Drainer, the one from New and the
// read-only one from NewReader alike.
type readCalls interface {
	Snapshot(ctx context.Context) (*Snapshot, error)
	Health(ctx context.Context, domains ...string) (*health.Report, error)
	WaitHealthy(ctx context.Context, domains ...string) (*health.Report, error)
	PlanRollout(ctx context.Context, opts RolloutOptions) (*RolloutPlan, error)
	RolloutStatus(ctx context.Context, opts RolloutOptions) (*RolloutStatus, error)
}

// snapshotNames is what a comparison of snapshots looks at: the objects'
// names.
type snapshotNames struct {
	Nodes, Pods, PDBs []string
}

func namesOf(s *Snapshot) snapshotNames {
	var n snapshotNames
	for _, node := range s.Nodes {
		n.Nodes = append(n.Nodes, node.Name)
	}
	for _, p := range s.Pods {
		n.Pods = append(n.Pods, p.Namespace+"/"+p.Name)
	}
	for _, b := range s.PDBs {
		n.PDBs = append(n.PDBs, b.Namespace+"/"+b.Name)
	}
	slices.Sort(n.Nodes)
	slices.Sort(n.Pods)
	slices.Sort(n.PDBs)
	return n
}

// A read-only Drainer (NewReader) reads as the CLI's read-only commands
// read before it existed,
// with a Drainer of fake drain settings under which every pod counts
// (grace period -1, no dry run, Force, IgnoreAllDaemonSets,
// DeleteEmptyDirData), and sends only reads.
func TestReaderReadsAsADrainerWhereEveryPodCounts(t *testing.T) {
	clk := clocktesting.NewFakeClock(statusNow)
	everyPodCounts := Options{
		Helper: &drain.Helper{GracePeriodSeconds: -1, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true},
		Clock:  clk,
	}
	for _, tc := range []struct {
		name string
		call func(context.Context, readCalls) (any, error)
		// check, if set, says what is wrong with NewReader's result
		// beyond its equality with the Drainer's.
		check func(got any) string
	}{
		{"Snapshot", func(ctx context.Context, r readCalls) (any, error) {
			s, err := r.Snapshot(ctx)
			if err != nil {
				return nil, err
			}
			return namesOf(s), nil
		}, func(got any) string {
			if n := len(got.(snapshotNames).Pods); n != 7 {
				return fmt.Sprintf("the snapshot holds %d pods, want 7", n)
			}
			return ""
		}},
		{"Health", func(ctx context.Context, r readCalls) (any, error) { return r.Health(ctx) }, func(got any) string {
			if got.(*health.Report).Healthy {
				return "healthy, but the worker of ud-2 is not Ready"
			}
			return ""
		}},
		{"Health of ud-2", func(ctx context.Context, r readCalls) (any, error) { return r.Health(ctx, "ud-2") }, nil},
		{"WaitHealthy of ud-1", func(ctx context.Context, r readCalls) (any, error) { return r.WaitHealthy(ctx, "ud-1") }, nil},
		{"WaitHealthy of ud-2, until a deadline", func(ctx context.Context, r readCalls) (any, error) {
			h, err := r.WaitHealthy(deadlineOnceWaiting(ctx), "ud-2")
			var nh *RetryError
			if !asReason(err, &nh, ReasonNotHealthy) || !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return h, nil
		}, nil},
		{"PlanRollout", func(ctx context.Context, r readCalls) (any, error) {
			return r.PlanRollout(ctx, RolloutOptions{ID: "r1"})
		}, nil},
		{"RolloutStatus", func(ctx context.Context, r readCalls) (any, error) {
			return r.RolloutStatus(ctx, RolloutOptions{ID: "r1"})
		}, func(got any) string {
			// Every pod counts: the DaemonSet's is skipped, the emptyDir
			// and the bare pods are evicted, none is refused.
			var pods []int
			for _, p := range got.(*RolloutStatus).Domains {
				pods = append(pods, p.Pods)
			}
			return cmp.Diff([]int{3, 3}, pods)
		}},
		{"RolloutStatus without its Lease", func(ctx context.Context, r readCalls) (any, error) {
			return r.RolloutStatus(ctx, RolloutOptions{ID: "r1", NoLock: true})
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			dclient := fake.NewClientset(readerCluster()...)
			d, err := New(dclient, everyPodCounts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tc.call(ctx, d)
			if err != nil {
				t.Fatalf("Drainer: %v", err)
			}
			rclient := fake.NewClientset(readerCluster()...)
			r, err := NewReader(rclient, Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.call(ctx, r)
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NewReader's result differs from New's (-New +NewReader):\n%s", diff)
			}
			if tc.check != nil {
				if problem := tc.check(got); problem != "" {
					t.Errorf("NewReader: %s", problem)
				}
			}
			for _, a := range rclient.Actions() {
				if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
					t.Errorf("NewReader's Drainer sent %s %s: want only get, list and watch", v, a.GetResource().Resource)
				}
			}
		})
	}
}

// NewReader checks the fields of Options it reads as New does, and the
// errors name the Drainer's methods; it ignores the drain settings.
func TestReaderOptions(t *testing.T) {
	ctx := testContext(t)
	nodesOnly := &clusterinformers.Set{Nodes: cache.NewSharedIndexInformer(nil, &corev1.Node{}, 0, nil)}
	for _, tc := range []struct {
		name string
		opts Options
		want string // the ConfigError's Field; "" for none
	}{
		{"zero", Options{}, ""},
		{"all set", Options{DomainLabel: "example.com/pool", Unlabeled: topology.UnlabeledSkip, Namespace: "web",
			ConnectTimeout: time.Second, Groupers: topology.DefaultGroupers(), Clock: clocktesting.NewFakeClock(statusNow)}, ""},
		{"domain label", Options{DomainLabel: "not a key!"}, "eviction.Options.DomainLabel"},
		{"namespace", Options{Namespace: "Not_A_Namespace"}, "eviction.Options.Namespace"},
		{"connect timeout", Options{ConnectTimeout: -time.Second}, "eviction.Options.ConnectTimeout"},
		{"groupers", Options{Groupers: []topology.Grouper{topology.DefaultGroupers()[0], nil}}, "eviction.Options.Groupers[1]"},
		{"informers", Options{Informers: nodesOnly}, "eviction.Options.Informers.Pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, check := range []struct {
				what string
				err  error
			}{
				{"Validate", tc.opts.Validate()},
				{"NewReader", func() error { _, err := NewReader(fake.NewClientset(), tc.opts); return err }()},
			} {
				var ce *udrain.ConfigError
				switch {
				case tc.want == "" && check.err != nil:
					t.Errorf("%s: %v, want no error", check.what, check.err)
				case tc.want == "":
				case !errors.As(check.err, &ce):
					t.Errorf("%s: %v, want a *udrain.ConfigError", check.what, check.err)
				case ce.Field != tc.want:
					t.Errorf("%s: Field %q, want %q (%v)", check.what, ce.Field, tc.want, check.err)
				}
			}
		})
	}

	drainOnly := Options{Concurrency: -1, Helper: &drain.Helper{Timeout: -time.Second}}
	if _, err := New(fake.NewClientset(), drainOnly); err == nil {
		t.Errorf("New(%+v) = nil error, want the drain settings refused", drainOnly)
	}
	if _, err := NewReader(fake.NewClientset(), drainOnly); err != nil {
		t.Errorf("NewReader with bad drain settings: %v, want them ignored", err)
	}

	r, err := NewReader(fake.NewClientset(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		want string
		call func() error
	}{
		{"eviction.NewReader(client)", func() error { _, err := NewReader(nil, Options{}); return err }},
		{"eviction.Drainer.Health(domains)", func() error { _, err := r.Health(ctx, "ud-1", ""); return err }},
		{"eviction.Drainer.WaitHealthy(domains)", func() error { _, err := r.WaitHealthy(ctx, ""); return err }},
		{"eviction.RolloutOptions.ID", func() error { _, err := r.RolloutStatus(ctx, RolloutOptions{ID: "not an ID!"}); return err }},
		{"eviction.RolloutOptions.Order", func() error {
			_, err := r.RolloutStatus(ctx, RolloutOptions{ID: "r1", Order: "random"})
			return err
		}},
		{"eviction.RolloutOptions.Steering", func() error { _, err := r.PlanRollout(ctx, RolloutOptions{Steering: "sideways"}); return err }},
	} {
		var ce *udrain.ConfigError
		if err := tc.call(); !errors.As(err, &ce) || ce.Field != tc.want {
			t.Errorf("%v, want a *udrain.ConfigError of Field %q", err, tc.want)
		}
	}
}

// A read-only Drainer refuses each write method with a *udrain.ConfigError
// naming NewReader, before any request: the clientset sees nothing of the
// call, not even a read. A Drainer from New over the same cluster does
// write (cordon, evict, uncordon), so that the check is not empty.
func TestReaderRefusesWrites(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, d *Drainer, plan *Plan) error
	}{
		{"Drain", func(ctx context.Context, d *Drainer, _ *Plan) error {
			_, _, err := d.Drain(ctx, "ud-2", DrainOptions{})
			return err
		}},
		{"Execute", func(ctx context.Context, d *Drainer, plan *Plan) error {
			_, err := d.Execute(ctx, plan, DrainOptions{})
			return err
		}},
		{"Uncordon", func(ctx context.Context, d *Drainer, _ *Plan) error {
			_, err := d.Uncordon(ctx, "ud-1")
			return err
		}},
		{"Rollout", func(ctx context.Context, d *Drainer, _ *Plan) error {
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r1", NoLock: true, RecoveryTimeout: time.Millisecond})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, readerCluster()...)
			r, err := NewReader(fc.client, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// ud-2 is not cordoned (ud-1 is, by r1: a drain of it
			// under another ID is refused before any write).
			plan, err := r.Plan(ctx, "ud-2")
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if len(plan.Phase1)+len(plan.Phase2) == 0 {
				t.Fatal("the plan of ud-2 evicts nothing; the test needs pods to evict")
			}
			fc.client.ClearActions()
			err = tc.call(ctx, r, plan)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) || ce.Field != "eviction.NewReader(client)" || !strings.Contains(ce.Problem, tc.name+" changes the cluster") {
				t.Fatalf("%v, want a *udrain.ConfigError of Field eviction.NewReader(client) naming %s", err, tc.name)
			}
			if n := len(fc.client.Actions()); n != 0 {
				t.Errorf("%s on a read-only Drainer sent %d requests, want none: %v", tc.name, n, fc.client.Actions())
			}

			// The same call from New writes: the refusal above is the
			// read-only Drainer's, not the call's.
			fc = newFakeCluster(t, readerCluster()...)
			d, err := New(fc.client, Options{Helper: readHelper(), Backoff: slowBackoff})
			if err != nil {
				t.Fatal(err)
			}
			if plan, err = d.Plan(ctx, "ud-2"); err != nil {
				t.Fatal(err)
			}
			// Its outcome does not matter here, its requests do (the
			// budget may hold an eviction: the deadline ends the wait).
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_ = tc.call(wctx, d, plan)
			if len(fc.mutations()) == 0 {
				t.Errorf("%s from New sent no write; the test proves nothing", tc.name)
			}
		})
	}
}
