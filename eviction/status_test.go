package eviction

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var statusNow = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

// statusCluster is lwsCluster(4 domains, 2 nodes each, groups of 2) and
// what a rollout "r1" left on it: marks, cordons, the Lease.
type statusCluster struct {
	objs []runtime.Object
}

func newStatusCluster() *statusCluster {
	return &statusCluster{objs: lwsCluster(4, 2, 2)}
}

func (c *statusCluster) node(name string) *corev1.Node {
	for _, o := range c.objs {
		if n, ok := o.(*corev1.Node); ok && n.Name == name {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			return n
		}
	}
	panic("no node " + name)
}

// upgraded marks both nodes of ud-d upgraded by r1, ago before
// statusNow, and the first recovered.
func (c *statusCluster) upgraded(d int, ago time.Duration) *statusCluster {
	c.recovering(d, ago)
	c.node(fmt.Sprintf("node-%d-1", d)).Annotations[udrain.RecoveredByAnnotation] = "r1"
	return c
}

// recovering marks both nodes of ud-d upgraded by r1, ago before
// statusNow, and none recovered: its recovery has not ended.
func (c *statusCluster) recovering(d int, ago time.Duration) *statusCluster {
	for n := 1; n <= 2; n++ {
		node := c.node(fmt.Sprintf("node-%d-%d", d, n))
		node.Annotations[udrain.UpgradedByAnnotation] = "r1"
		node.Annotations[udrain.UpgradedAtAnnotation] = statusNow.Add(-ago).Format(time.RFC3339Nano)
	}
	return c
}

// cordoned cordons the nodes of ud-d by r1 (n: how many).
func (c *statusCluster) cordoned(d, n int) *statusCluster {
	for i := 1; i <= n; i++ {
		node := c.node(fmt.Sprintf("node-%d-%d", d, i))
		node.Annotations[udrain.CordonedByAnnotation] = "r1"
		node.Spec.Unschedulable = true
	}
	return c
}

// drained removes the pods of group g; pending leaves them Pending on no
// node, as a StatefulSet recreates them.
func (c *statusCluster) drained(g int, pending bool) *statusCluster {
	var out []runtime.Object
	for _, o := range c.objs {
		if p, ok := o.(*corev1.Pod); ok && strings.HasPrefix(p.Name, fmt.Sprintf("llm-%d", g)) {
			if !pending {
				continue
			}
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		}
		out = append(out, o)
	}
	c.objs = out
	return c
}

// lease adds r1's Lease: held by holder (empty: released), renewed ago.
func (c *statusCluster) lease(holder string, ago time.Duration) *statusCluster {
	renewed := metav1.NewMicroTime(statusNow.Add(-ago))
	acquired := metav1.NewMicroTime(statusNow.Add(-time.Hour))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultLockNamespace, Name: lockName("r1")},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptrTo(int32(30)), RenewTime: &renewed, AcquireTime: &acquired}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	c.objs = append(c.objs, l)
	return c
}

func (c *statusCluster) extraNode(name, domain string) *statusCluster {
	c.objs = append(c.objs, testNode(name, domain))
	return c
}

// progressLine is what a test checks of a RolloutDomain.
type progressLine struct {
	Domain, State, Stage string
	Pods, Cordoned, Up   int
	Since, NotBefore     string
	Down                 []string
}

func linesOf(ps []RolloutDomain) []progressLine {
	ago := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return statusNow.Sub(*t).String()
	}
	var out []progressLine
	for _, p := range ps {
		l := progressLine{Domain: p.Domain, State: string(p.State), Stage: string(p.Stage), Pods: p.Pods, Cordoned: p.Cordoned, Up: p.Upgraded,
			Since: ago(p.Since), NotBefore: ago(p.NotBefore)}
		for _, g := range p.Down {
			l.Down = append(l.Down, g.ID.Name)
		}
		out = append(out, l)
	}
	return out
}

func TestRolloutStatus(t *testing.T) {
	held := func(c *statusCluster) *statusCluster { return c.lease("host-a", 5*time.Second) }
	pending := func(d string) progressLine { return progressLine{Domain: d, State: "Pending", Pods: 2} }
	done := func(d string, ago string) progressLine {
		return progressLine{Domain: d, State: "Done", Up: 2, Since: ago}
	}
	for _, tc := range []struct {
		name    string
		cluster *statusCluster
		opts    RolloutOptions
		want    []progressLine
		running bool
		holder  string
		eta     *statusETA
	}{
		{
			name:    "never ran",
			cluster: newStatusCluster(),
			want:    []progressLine{pending("ud-1"), pending("ud-2"), pending("ud-3"), pending("ud-4")},
		},
		{
			name:    "draining the third domain",
			cluster: held(newStatusCluster().upgraded(1, 20*time.Minute).upgraded(2, 10*time.Minute).cordoned(3, 2)),
			want: []progressLine{done("ud-1", "20m0s"), done("ud-2", "10m0s"),
				{Domain: "ud-3", State: "Draining", Stage: "Phase1", Pods: 2, Cordoned: 2, NotBefore: "10m0s"}, pending("ud-4")},
			running: true, holder: "host-a",
			eta: &statusETA{PerDomain: udrain.Seconds(10 * time.Minute), Samples: 1, DomainsLeft: 2, At: statusNow.Add(10 * time.Minute)},
		},
		{
			name:    "upgrading the third domain, its group Pending",
			cluster: held(newStatusCluster().upgraded(1, 20*time.Minute).upgraded(2, 10*time.Minute).cordoned(3, 2).drained(2, true)),
			want: []progressLine{done("ud-1", "20m0s"), done("ud-2", "10m0s"),
				{Domain: "ud-3", State: "Upgrading", Stage: "Upgrade", Cordoned: 2, NotBefore: "10m0s", Down: []string{"llm-2"}}, pending("ud-4")},
			running: true, holder: "host-a",
			eta: &statusETA{PerDomain: udrain.Seconds(10 * time.Minute), Samples: 1, DomainsLeft: 2, At: statusNow.Add(10 * time.Minute)},
		},
		{
			name:    "stopped in the upgrade: Lease released",
			cluster: newStatusCluster().upgraded(1, 20*time.Minute).cordoned(2, 2).drained(1, false).lease("", time.Minute),
			want: []progressLine{done("ud-1", "20m0s"),
				{Domain: "ud-2", State: "Stopped", Stage: "Upgrade", Cordoned: 2, NotBefore: "20m0s"}, pending("ud-3"), pending("ud-4")},
		},
		{
			name:    "stopped while draining: Lease expired",
			cluster: newStatusCluster().cordoned(1, 1).lease("host-a", time.Minute),
			want:    []progressLine{{Domain: "ud-1", State: "Stopped", Stage: "Phase1", Pods: 2, Cordoned: 1}, pending("ud-2"), pending("ud-3"), pending("ud-4")},
			holder:  "host-a",
		},
		{
			name:    "no lock: in progress, never stopped",
			cluster: newStatusCluster().cordoned(1, 2).lease("", time.Minute),
			opts:    RolloutOptions{NoLock: true},
			want:    []progressLine{{Domain: "ud-1", State: "Draining", Stage: "Phase1", Pods: 2, Cordoned: 2}, pending("ud-2"), pending("ud-3"), pending("ud-4")},
		},
		{
			name: "uncordoning: one node marked, one still cordoned",
			cluster: held(func() *statusCluster {
				c := newStatusCluster().upgraded(1, 20*time.Minute).cordoned(2, 2).drained(1, false)
				n := c.node("node-2-1")
				n.Annotations[udrain.UpgradedByAnnotation], n.Annotations[udrain.UpgradedAtAnnotation] = "r1", statusNow.Add(-time.Minute).Format(time.RFC3339Nano)
				return c
			}()),
			want: []progressLine{done("ud-1", "20m0s"), {Domain: "ud-2", State: "Recovering", Stage: "Uncordon", Cordoned: 2, Up: 1, Since: "1m0s"},
				pending("ud-3"), pending("ud-4")},
			running: true, holder: "host-a",
			eta: &statusETA{PerDomain: udrain.Seconds(19 * time.Minute), Samples: 1, DomainsLeft: 2, At: statusNow.Add(37 * time.Minute)},
		},
		{
			name:    "recovering the last domain upgraded while running",
			cluster: held(newStatusCluster().upgraded(1, 20*time.Minute).recovering(2, time.Minute)),
			want:    []progressLine{done("ud-1", "20m0s"), {Domain: "ud-2", State: "Recovering", Stage: "Recovery", Up: 2, Since: "1m0s"}, pending("ud-3"), pending("ud-4")},
			running: true, holder: "host-a",
			eta: &statusETA{PerDomain: udrain.Seconds(19 * time.Minute), Samples: 1, DomainsLeft: 2, At: statusNow.Add(37 * time.Minute)},
		},
		{
			name:    "stopped in the recovery: its group Pending, no holder",
			cluster: newStatusCluster().upgraded(1, 20*time.Minute).recovering(2, time.Minute).drained(1, true).lease("", time.Minute),
			want: []progressLine{done("ud-1", "20m0s"), {Domain: "ud-2", State: "Stopped", Stage: "Recovery", Up: 2, Since: "1m0s", Down: []string{"llm-1"}},
				pending("ud-3"), pending("ud-4")},
			eta: &statusETA{PerDomain: udrain.Seconds(19 * time.Minute), Samples: 1, DomainsLeft: 2, At: statusNow.Add(37 * time.Minute)},
		},
		{
			// Parallel domains: two recovering at once, one draining.
			name:    "two domains recovering, one draining",
			cluster: held(newStatusCluster().recovering(1, 2*time.Minute).recovering(2, time.Minute).cordoned(3, 2)),
			want: []progressLine{{Domain: "ud-1", State: "Recovering", Stage: "Recovery", Up: 2, Since: "2m0s"}, {Domain: "ud-2", State: "Recovering", Stage: "Recovery", Up: 2, Since: "1m0s"},
				{Domain: "ud-3", State: "Draining", Stage: "Phase1", Pods: 2, Cordoned: 2, NotBefore: "1m0s"}, pending("ud-4")},
			running: true, holder: "host-a",
		},
		{
			name:    "completed",
			cluster: newStatusCluster().upgraded(1, 40*time.Minute).upgraded(2, 30*time.Minute).upgraded(3, 10*time.Minute).upgraded(4, 5*time.Minute).lease("", time.Minute),
			want:    []progressLine{done("ud-1", "40m0s"), done("ud-2", "30m0s"), done("ud-3", "10m0s"), done("ud-4", "5m0s")},
		},
		{
			name: "spare first: upgraded in mark order, the domain held, empty ones, the rest",
			cluster: held(newStatusCluster().upgraded(2, 20*time.Minute).upgraded(1, 10*time.Minute).cordoned(4, 2).extraNode("node-5-1", "ud-5").
				extraNode("node-0-1", "ud-0")),
			want: []progressLine{done("ud-2", "20m0s"), done("ud-1", "10m0s"),
				{Domain: "ud-4", State: "Draining", Stage: "Phase1", Pods: 2, Cordoned: 2, NotBefore: "10m0s"},
				{Domain: "ud-0", State: "Pending"}, {Domain: "ud-5", State: "Pending"}, pending("ud-3")},
			running: true, holder: "host-a",
			eta: &statusETA{PerDomain: udrain.Seconds(10 * time.Minute), Samples: 1, DomainsLeft: 4, At: statusNow.Add(30 * time.Minute)},
		},
		{
			name:    "given domains keep their order",
			cluster: held(newStatusCluster().upgraded(2, 20*time.Minute).cordoned(4, 2)),
			opts:    RolloutOptions{Domains: []string{"ud-4", "ud-2", "ud-1"}},
			want: []progressLine{{Domain: "ud-4", State: "Draining", Stage: "Phase1", Pods: 2, Cordoned: 2, NotBefore: "20m0s"},
				done("ud-2", "20m0s"), pending("ud-1")},
			running: true, holder: "host-a",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, tc.cluster.objs...)
			d, err := New(fc.client, Options{Clock: clocktesting.NewFakeClock(statusNow)})
			if err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.ID = "r1"
			st, err := d.RolloutStatus(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, linesOf(st.Domains)); diff != "" {
				t.Errorf("domains (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.eta, etaOf(st)); diff != "" {
				t.Errorf("ETA (-want +got):\n%s", diff)
			}
			if st.Running != tc.running || st.LockHolder != tc.holder {
				t.Errorf("running %v, holder %q; want %v, %q", st.Running, st.LockHolder, tc.running, tc.holder)
			}
			done := 0
			for _, w := range tc.want {
				if w.State == "Done" {
					done++
				}
			}
			if st.Done != done || st.Completed != (done == len(tc.want)) {
				t.Errorf("done %d, completed %v; want %d of %d", st.Done, st.Completed, done, len(tc.want))
			}
			for _, a := range fc.client.Actions() {
				if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
					t.Errorf("request %s %s: the status changes nothing", a.GetVerb(), a.GetResource().Resource)
				}
				if a.GetResource().Resource == "leases" && tc.opts.NoLock {
					t.Errorf("read the Lease with NoLock")
				}
			}
		})
	}
}

// With the caller's informers, the status costs one GET of the Lease and
// nothing else.
func TestRolloutStatusOverInformersGetsOnlyTheLease(t *testing.T) {
	ctx := testContext(t)
	c := newStatusCluster().upgraded(1, 20*time.Minute).cordoned(2, 2).lease("host-a", time.Second)
	fc := newFakeCluster(t, c.objs...)
	factory := informers.NewSharedInformerFactory(fc.client, 0)
	shared := clusterinformers.FromFactory(factory)
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.WaitForCacheSync(ctx.Done())
	// The reflectors start their watches after their lists: wait for
	// them, so that only the status's own requests are counted.
	for ctx.Err() == nil {
		listed, watched := map[string]bool{}, map[string]bool{}
		for _, a := range fc.client.Actions() {
			switch a.GetVerb() {
			case "list":
				listed[a.GetResource().Resource] = true
			case "watch":
				watched[a.GetResource().Resource] = true
			}
		}
		if len(listed) > 0 && len(listed) == len(watched) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	d, err := New(fc.client, Options{Informers: shared, Clock: clocktesting.NewFakeClock(statusNow)})
	if err != nil {
		t.Fatal(err)
	}
	fc.client.ClearActions()
	st, err := d.RolloutStatus(ctx, RolloutOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range fc.client.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
	}
	if diff := cmp.Diff([]string{"get leases"}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if st.Domains[1].State != StateDraining || !st.Running {
		t.Errorf("ud-2 %s, running %v; want Draining, running", st.Domains[1].State, st.Running)
	}
}

func TestRolloutStatusErrors(t *testing.T) {
	fc := newFakeCluster(t, newStatusCluster().objs...)
	d, _ := New(fc.client, Options{})
	for _, tc := range []struct {
		id   string
		opts RolloutOptions
		want string
	}{
		{"has spaces", RolloutOptions{}, "eviction.RolloutOptions.ID"},
		{"r1", RolloutOptions{Order: "Random"}, "eviction.RolloutOptions.Order"},
		{"r1", RolloutOptions{LockNamespace: "Not_A_Namespace"}, "eviction.RolloutOptions.LockNamespace"},
		{"r1", RolloutOptions{Domains: []string{"ud-9"}}, "ud-9"},
	} {
		opts := tc.opts
		opts.ID = tc.id
		_, err := d.RolloutStatus(testContext(t), opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RolloutStatus(%q, %+v): %v, want an error naming %s", tc.id, tc.opts, err, tc.want)
		}
	}
}

// TestRolloutStatusJSON pins RolloutStatus's JSON: the Lock* fields in
// "lock" (held: Running), the ETA* fields in "eta" (remaining: per
// domain times the domains left), as the CLI's RolloutStatus document
// wrote them when they were types of their own; and reads it back.
func TestRolloutStatusJSON(t *testing.T) {
	at := statusNow
	dom := []RolloutDomain{{Domain: "ud-1", State: StateDraining, Stage: StagePhase1, Pods: 2}}
	const domJSON = `"domains":[{"domain":"ud-1","state":"Draining","stage":"Phase1","pods":2}]`
	for _, tc := range []struct {
		name string
		st   RolloutStatus
		want string
	}{
		{"lock and ETA", RolloutStatus{ID: "r1", Time: statusNow, Running: true,
			LockNamespace: "ns", LockName: "l", LockHolder: "h", LockAcquiredAt: &at, LockRenewedAt: &at, LockDuration: udrain.Seconds(30 * time.Second),
			Domains: dom, ETA: &at, ETAPerDomain: udrain.Seconds(90 * time.Second), ETASamples: 2, ETADomainsLeft: 2},
			`{"id":"r1","time":"2026-07-01T10:00:00Z","running":true,` +
				`"lock":{"namespace":"ns","name":"l","holder":"h","held":true,"acquiredAt":"2026-07-01T10:00:00Z","renewedAt":"2026-07-01T10:00:00Z","durationSeconds":30},` +
				domJSON + `,"done":0,"completed":false,` +
				`"eta":{"samples":2,"domainsLeft":2,"at":"2026-07-01T10:00:00Z","perDomainSeconds":90,"remainingSeconds":180}}`},
		{"lock released", RolloutStatus{ID: "r1", Time: statusNow, LockNamespace: "ns", LockName: "l", LockDuration: udrain.Seconds(15 * time.Second), Domains: dom},
			`{"id":"r1","time":"2026-07-01T10:00:00Z","running":false,"lock":{"namespace":"ns","name":"l","held":false,"durationSeconds":15},` +
				domJSON + `,"done":0,"completed":false}`},
		{"running without a lock", RolloutStatus{ID: "r1", Time: statusNow, Running: true, Domains: dom, Done: 1, Completed: true},
			`{"id":"r1","time":"2026-07-01T10:00:00Z","running":true,` + domJSON + `,"done":1,"completed":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWire(t, tc.st, tc.want)
		})
	}
}

// A status that may not read the rollout's Lease names the Role to grant,
// as a rollout that may not take it does (lockRole): deploy/rbac's in
// udrain-system, a copy of it elsewhere.
func TestRolloutStatusLeaseForbidden(t *testing.T) {
	for _, tc := range []struct{ name, namespace, wantRole string }{
		{"default namespace", "", "the Role udrain-rollout-lock (namespace udrain-system)"},
		{"another namespace", "platform", "a copy of the Role udrain-rollout-lock in namespace platform"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, newStatusCluster().objs...)
			fc.client.PrependReactor("get", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "udrain-rollout-r1", errors.New("no"))
			})
			d, err := New(fc.client, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.RolloutStatus(testContext(t), RolloutOptions{ID: "r1", LockNamespace: tc.namespace})
			var pe *PermissionError
			if !errors.As(err, &pe) || pe.Role != tc.wantRole {
				t.Errorf("RolloutStatus: %v, want a *PermissionError naming %q", err, tc.wantRole)
			}
		})
	}
}

// TestEstimateCountsTheDomainsInFlight: with k domains in flight, the ETA
// takes the gaps between upgraded marks k apart and divides them by k: two
// domains at once, marked in pairs a minute apart every four minutes, make
// two minutes a domain (the median of consecutive gaps would say one).
// statusETA is a status's ETA* fields, nil without an ETA.
type statusETA struct {
	At          time.Time
	PerDomain   udrain.Seconds
	DomainsLeft int
	Samples     int
}

func etaOf(st *RolloutStatus) *statusETA {
	if st.ETA == nil {
		return nil
	}
	return &statusETA{At: *st.ETA, PerDomain: st.ETAPerDomain, DomainsLeft: st.ETADomainsLeft, Samples: st.ETASamples}
}

func TestEstimateCountsTheDomainsInFlight(t *testing.T) {
	at := func(min int) *time.Time { v := statusNow.Add(time.Duration(min) * time.Minute); return &v }
	done := func(min int) RolloutDomain { return RolloutDomain{State: StateDone, Since: at(min)} }
	for _, tc := range []struct {
		name string
		ps   []RolloutDomain
		want *statusETA
	}{
		{"one at a time", []RolloutDomain{done(-3), done(-2), done(-1), {State: StateDraining, Stage: StagePhase1}, {State: StatePending}},
			&statusETA{Samples: 2, DomainsLeft: 2, PerDomain: udrain.Seconds(time.Minute), At: statusNow.Add(time.Minute)}},
		{"two at a time", []RolloutDomain{done(-9), done(-8), done(-5), done(-4),
			{State: StateDraining, Stage: StagePhase2}, {State: StateUpgrading, Stage: StageUpgrade}, {State: StatePending}, {State: StatePending}},
			&statusETA{Samples: 2, DomainsLeft: 4, PerDomain: udrain.Seconds(2 * time.Minute), At: statusNow.Add(4 * time.Minute)}},
		{"as many marks as in flight: no ETA yet", []RolloutDomain{done(-2), done(-1),
			{State: StateDraining, Stage: StagePhase1}, {State: StateDraining, Stage: StagePhase1}, {State: StatePending}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &RolloutStatus{Domains: tc.ps}
			estimate(st)
			if diff := cmp.Diff(tc.want, etaOf(st)); diff != "" {
				t.Errorf("estimate (-want +got):\n%s", diff)
			}
		})
	}
}
