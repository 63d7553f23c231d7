package eviction

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// destNode is node-<domain>-<n> of domain ud-<domain> with gpus
// nvidia.com/gpu allocatable and room for 110 pods.
func destNode(domain, n int, gpus int64) *corev1.Node {
	node := testNode(fmt.Sprintf("node-%d-%d", domain, n), fmt.Sprintf("ud-%d", domain))
	node.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")}
	return node
}

// destGroup is LWS group g of size pods, each requesting gpus, on the
// given nodes (pod i on nodes[i % len(nodes)]).
func destGroup(g, size int, gpus int64, nodes ...string) []runtime.Object {
	var out []runtime.Object
	for w := range size {
		out = append(out, withGPUs(lwsPod(g, w, size, nodes[w%len(nodes)], types.UID(fmt.Sprintf("g%d-w%d", g, w))), gpus))
	}
	return out
}

// exclusive gives the pods of objs LeaderWorkerSet's exclusive topology:
// they repel the pods of every other group of the LWS on the domain label.
func exclusive(objs []runtime.Object) []runtime.Object {
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: topology.DefaultDomainLabel,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: topology.LWSNameLabel, Operator: metav1.LabelSelectorOpExists},
				{Key: topology.LWSGroupIndexLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{p.Labels[topology.LWSGroupIndexLabel]}},
			}},
		}}}}
	}
	return objs
}

// objects flattens its arguments: nodes, pods, lists of both.
func objects(items ...any) []runtime.Object {
	var out []runtime.Object
	for _, it := range items {
		switch it := it.(type) {
		case runtime.Object:
			out = append(out, it)
		case []runtime.Object:
			out = append(out, it...)
		}
	}
	return out
}

// destinationsOf plans every domain of order (but upgraded) from objs and
// simulates the rollout.
func destinationsOf(t *testing.T, objs []runtime.Object, order, upgraded []string, steering Steering) []GroupDestination {
	t.Helper()
	snap := snapshotOf(objs)
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: order, upgraded: map[string]bool{}, plans: map[string]*Plan{}, steering: steering}
	for _, name := range upgraded {
		in.upgraded[name] = true
	}
	for _, name := range order {
		if in.upgraded[name] {
			continue
		}
		if in.plans[name], err = NewPlan(name, snap, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return destinations(in)
}

func dest(g int, from, to string, kind DestinationKind, room int) GroupDestination {
	return GroupDestination{Group: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: testNS, Name: fmt.Sprintf("llm-%d", g)}, From: from, To: to, Kind: kind, Room: room}
}

// TestDestinations pins where evicted groups go in a simulated rollout:
// three domains of one 8-GPU node; groups llm-0 (ud-1) and llm-1 (ud-2)
// of two 4-GPU pods fill their domain; ud-3 is spare unless a case fills
// it.
func TestDestinations(t *testing.T) {
	natural := []string{"ud-1", "ud-2", "ud-3"}
	spareFirst := []string{"ud-3", "ud-1", "ud-2"}
	full := func(extra ...any) []runtime.Object {
		return objects(append([]any{destNode(1, 1, 8), destNode(2, 1, 8), destNode(3, 1, 8),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")}, extra...)...)
	}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		order    []string
		upgraded []string
		steering Steering
		want     []GroupDestination
	}{
		{"spare domain first: each group finds the domain upgraded before it", full(), spareFirst, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-3", DestinationUpgraded, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1)}},
		{"spare domain last: the first group lands on it and is disrupted again there", full(), natural, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-3", DestinationDisruptedAgain, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1),
				dest(0, "ud-3", "ud-2", DestinationUpgraded, 1)}},
		{"strict: no upgraded room, so each group waits for its own domain", full(), natural, nil, SteerStrict,
			[]GroupDestination{dest(0, "ud-1", "ud-1", DestinationOwnDomain, 0), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0)}},
		{"no spare domain: each group comes back to its own", full(destGroup(2, 2, 4, "node-3-1")), natural, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-1", DestinationOwnDomain, 0), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0),
				dest(2, "ud-3", "ud-3", DestinationOwnDomain, 0)}},
		{"a domain upgraded by an earlier run is room from the start", full(), spareFirst, []string{"ud-3"}, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-3", DestinationUpgraded, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1)}},
		{"room counts groups like it: 16 GPUs free hold two", objects(destNode(1, 1, 8), destNode(2, 1, 16), destGroup(0, 2, 4, "node-1-1")),
			[]string{"ud-2", "ud-1"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-2", DestinationUpgraded, 2)}},
		{"a group does not fit on a node that would hold its GPUs only in sum", objects(destNode(1, 1, 8), destNode(2, 1, 6), destNode(2, 2, 2), destGroup(0, 2, 4, "node-1-1")),
			[]string{"ud-2", "ud-1"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-1", DestinationOwnDomain, 0)}},
		{"pending domains with room: steering Off takes the worst case", objects(destNode(1, 1, 8), destNode(2, 1, 16), destNode(3, 1, 8),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")), spareFirst, nil, SteerOff,
			[]GroupDestination{dest(0, "ud-1", "ud-2", DestinationDisruptedAgain, 1), dest(1, "ud-2", "ud-3", DestinationUpgraded, 1),
				dest(0, "ud-2", "ud-1", DestinationUpgraded, 1)}},
		{"pending domains with room: PreferUpgraded takes the upgraded one", objects(destNode(1, 1, 8), destNode(2, 1, 16), destNode(3, 1, 8),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")), spareFirst, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-3", DestinationUpgraded, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1)}},
		{"GPUs lost: no room even back home", objects(destNode(1, 1, 6), destNode(2, 1, 8), destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")),
			[]string{"ud-1", "ud-2"}, nil, SteerStrict,
			[]GroupDestination{{Group: dest(0, "", "", "", 0).Group, From: "ud-1", Kind: DestinationNoRoom}, dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0)}},
		{"a taint the pods do not tolerate keeps them off the spare domain",
			full(func() runtime.Object {
				n := destNode(4, 1, 8)
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
				return n
			}()), []string{"ud-4", "ud-1", "ud-2", "ud-3"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-3", DestinationDisruptedAgain, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1),
				dest(0, "ud-3", "ud-2", DestinationUpgraded, 1)}},
		{"udrain's own taint and cordon are the simulation's: a resumed rollout's spare domain is room",
			full(func() runtime.Object {
				n := destNode(4, 1, 8)
				n.Spec.Unschedulable = true
				n.Annotations = map[string]string{udrain.CordonedByAnnotation: "r1"}
				n.Spec.Taints = []corev1.Taint{{Key: udrain.PendingUpgradeTaint, Value: "r1", Effect: corev1.TaintEffectNoSchedule}, {Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
				return n
			}()), []string{"ud-4", "ud-1", "ud-2", "ud-3"}, nil, SteerStrict,
			[]GroupDestination{dest(0, "ud-1", "ud-4", DestinationUpgraded, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1)}},
		{"a node cordoned by someone else is no room",
			full(func() runtime.Object {
				n := destNode(4, 1, 8)
				n.Spec.Unschedulable = true
				return n
			}()), []string{"ud-4", "ud-1", "ud-2", "ud-3"}, nil, SteerStrict,
			[]GroupDestination{dest(0, "ud-1", "ud-1", DestinationOwnDomain, 0), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0)}},
		{"a nodeSelector on the domain pins a group to its own", objects(destNode(1, 1, 8), destNode(2, 1, 8), func() []runtime.Object {
			g := destGroup(0, 2, 4, "node-1-1")
			for _, o := range g {
				o.(*corev1.Pod).Spec.NodeSelector = map[string]string{topology.DefaultDomainLabel: "ud-1"}
			}
			return g
		}()), []string{"ud-2", "ud-1"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-1", DestinationOwnDomain, 0)}},
		// LWS's exclusive topology writes the leader's domain into the
		// workers' nodeSelector: a group recreated follows its new leader.
		{"a worker's nodeSelector on its leader's domain does not pin the group", objects(destNode(1, 1, 8), destNode(2, 1, 8), func() []runtime.Object {
			g := destGroup(0, 2, 4, "node-1-1")
			for _, o := range g {
				if p := o.(*corev1.Pod); p.Labels[topology.LWSWorkerIndexLabel] != "0" {
					p.Spec.NodeSelector = map[string]string{topology.DefaultDomainLabel: "ud-1"}
				}
			}
			return g
		}()), []string{"ud-2", "ud-1"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-2", DestinationUpgraded, 1)}},
		{"a domain outside the rollout is room", full(), []string{"ud-1", "ud-2"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-3", DestinationUpgraded, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 1)}},
		// 16-GPU nodes: room for a second group everywhere, but
		// exclusive topology lets no two groups share a domain.
		{"exclusive topology: a group cannot join another in its domain", objects(destNode(1, 1, 16), destNode(2, 1, 16), destNode(3, 1, 16),
			exclusive(destGroup(0, 2, 4, "node-1-1")), exclusive(destGroup(1, 2, 4, "node-2-1")), exclusive(destGroup(2, 2, 4, "node-3-1"))), natural, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-1", DestinationOwnDomain, 0), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0),
				dest(2, "ud-3", "ud-3", DestinationOwnDomain, 0)}},
		{"exclusive topology: without it the groups share domains", objects(destNode(1, 1, 16), destNode(2, 1, 16), destNode(3, 1, 16),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1"), destGroup(2, 2, 4, "node-3-1")), natural, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-2", DestinationDisruptedAgain, 1), dest(1, "ud-2", "ud-1", DestinationUpgraded, 2),
				dest(0, "ud-2", "ud-1", DestinationUpgraded, 1), dest(2, "ud-3", "ud-2", DestinationUpgraded, 2)}},
		{"exclusive topology: an empty upgraded domain has room for one group", objects(destNode(1, 1, 16), destNode(2, 1, 16),
			exclusive(destGroup(0, 2, 4, "node-1-1"))), []string{"ud-2", "ud-1"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-2", DestinationUpgraded, 1)}},
		{"exclusive topology: another workload's pods are no obstacle", objects(destNode(1, 1, 16), destNode(2, 1, 16),
			exclusive(destGroup(0, 2, 4, "node-1-1")), func() runtime.Object {
				p := withGPUs(readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "web", UID: "web", OwnerReferences: ownedBy("ReplicaSet", "web")},
					Spec: corev1.PodSpec{NodeName: "node-2-1"}}), 4)
				return p
			}()), []string{"ud-1"}, nil, SteerPreferUpgraded,
			[]GroupDestination{dest(0, "ud-1", "ud-2", DestinationUpgraded, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := destinationsOf(t, tc.objs, tc.order, tc.upgraded, tc.steering)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(GroupDestination{}, "Message"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("destinations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDestinationMessagesAndFindings pins what a user reads: a sentence
// per destination, and a finding for each group disrupted again or
// without room (an error only with Strict steering).
func TestDestinationMessagesAndFindings(t *testing.T) {
	type want struct {
		Messages []string
		Findings []topology.Finding
	}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		order    []string
		steering Steering
		want     want
	}{
		{"upgraded, disrupted again", objects(destNode(1, 1, 8), destNode(2, 1, 8), destNode(3, 1, 8), destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")),
			[]string{"ud-1", "ud-2", "ud-3"}, SteerPreferUpgraded, want{
				Messages: []string{
					"only to a domain not upgraded yet (ud-3): it will be disrupted again when ud-3 drains",
					"to upgraded domain ud-1 (room for 1 group)",
					"to upgraded domain ud-2 (room for 1 group)",
				},
				Findings: []topology.Finding{{Code: topology.FindingDisruptedAgain, Severity: udrain.SeverityWarning, Namespace: testNS, Group: "llm-0", Domains: []string{"ud-1", "ud-3"},
					Message: "group inference/llm-0, evicted from ud-1, can go only to a domain not upgraded yet (ud-3): it will be disrupted again when ud-3 drains; make room in an upgraded domain (a spare domain upgraded first), or steer strictly (SteerStrict) to make it wait for its own domain"}},
			}},
		{"strict waits; no room back home is an error", objects(destNode(1, 1, 6), destNode(2, 1, 8), destNode(3, 1, 8), destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")),
			[]string{"ud-1", "ud-2", "ud-3"}, SteerStrict, want{
				Messages: []string{
					"no room anywhere, not even back in its own domain ud-1 after the upgrade: pod inference/llm-0-1 fits no node there (resources, taints, node affinity); it stays Pending",
					"back to its own domain ud-2 after the upgrade: no upgraded domain has room, and Strict steering keeps it off ud-3 (not upgraded yet); it waits, Pending, through the drain and upgrade of ud-2",
				},
				Findings: []topology.Finding{{Code: topology.FindingNoRoom, Severity: udrain.SeverityError, Namespace: testNS, Group: "llm-0", Domains: []string{"ud-1"},
					Message: "group inference/llm-0, evicted from ud-1, finds no room anywhere, not even back in its own domain ud-1 after the upgrade: pod inference/llm-0-1 fits no node there (resources, taints, node affinity); it stays Pending; check the domain's nodes (GPUs advertised, taints) or make room elsewhere before the rollout"}},
			}},
		{"steering off, outside the rollout", objects(destNode(1, 1, 16), destNode(2, 1, 8), destNode(3, 1, 8), destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1")),
			[]string{"ud-2", "ud-1"}, SteerOff, want{
				Messages: []string{
					"to a domain not upgraded yet (ud-1), since steering is Off and nothing keeps it off there: it will be disrupted again when ud-1 drains",
					"to upgraded domain ud-2 (room for 1 group)",
					"to domain ud-3, outside this rollout (room for 1 group)",
				},
				Findings: []topology.Finding{{Code: topology.FindingDisruptedAgain, Severity: udrain.SeverityWarning, Namespace: testNS, Group: "llm-1", Domains: []string{"ud-2", "ud-1"},
					Message: "group inference/llm-1, evicted from ud-2, can go to a domain not upgraded yet (ud-1), since steering is Off and nothing keeps it off there: it will be disrupted again when ud-1 drains; make room in an upgraded domain (a spare domain upgraded first), or steer strictly (SteerStrict) to make it wait for its own domain"}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dests := destinationsOf(t, tc.objs, tc.order, nil, tc.steering)
			var got want
			for _, d := range dests {
				got.Messages = append(got.Messages, d.Message)
			}
			got.Findings = destinationFindings(dests, tc.steering)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// With Strict steering, a group that finds no room, not even back in its
// own domain (its node lost GPUs), stops the rollout before anything is
// touched; with the default steering it is a warning and the rollout's
// result says where each group goes.
func TestRolloutChecksDestinations(t *testing.T) {
	objs := func() []runtime.Object {
		return objects(destNode(1, 1, 6), destNode(2, 1, 8), destNode(3, 1, 8),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1"), leaderPDB(2))
	}
	t.Run("strict", func(t *testing.T) {
		ctx := testContext(t)
		fc := newFakeCluster(t, objs()...)
		d, _ := New(fc.client, Options{Backoff: slowBackoff})
		res, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Steering: SteerStrict, Order: OrderGiven, Domains: []string{"ud-1", "ud-2", "ud-3"}})
		var ce *topology.ContractError
		if !errors.As(err, &ce) || len(ce.Findings) != 1 || ce.Findings[0].Code != topology.FindingNoRoom || ce.Findings[0].Group != "llm-0" {
			t.Fatalf("err = %v, want a ContractError with llm-0's NoRoom finding", err)
		}
		if n := nodePatches(fc); n != 0 {
			t.Errorf("%d node patches, want none", n)
		}
		if ev := fc.evicted(); len(ev) != 0 {
			t.Errorf("evicted %v, want nothing", ev)
		}
		if len(res.Destinations) != 2 {
			t.Errorf("destinations = %+v, want llm-0 and llm-1", res.Destinations)
		}
	})
	t.Run("prefer upgraded, dry run", func(t *testing.T) {
		ctx := testContext(t)
		fc := newFakeCluster(t, objs()...)
		d, _ := New(fc.client, Options{Backoff: slowBackoff, Helper: &drain.Helper{DryRunStrategy: cmdutil.DryRunClient}})
		res, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Order: OrderGiven, Domains: []string{"ud-1", "ud-2", "ud-3"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []GroupDestination{dest(0, "ud-1", "ud-3", DestinationDisruptedAgain, 1), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0),
			dest(0, "ud-3", "ud-3", DestinationOwnDomain, 0)}
		if diff := cmp.Diff(want, res.Destinations, cmpopts.IgnoreFields(GroupDestination{}, "Message")); diff != "" {
			t.Errorf("destinations (-want +got):\n%s", diff)
		}
		var codes []topology.FindingCode
		for _, f := range res.Findings {
			codes = append(codes, f.Code)
		}
		if diff := cmp.Diff([]topology.FindingCode{topology.FindingDisruptedAgain}, codes); diff != "" {
			t.Errorf("finding codes (-want +got):\n%s", diff)
		}
	})
}

// pendingDomains are a plan's domains, each Pending.
func pendingDomains(names ...string) []RolloutDomain {
	out := make([]RolloutDomain, len(names))
	for i, n := range names {
		out[i] = RolloutDomain{Domain: n, State: StatePending}
	}
	return out
}

// TestPlanRollout: a rollout's plan, made without touching anything, has
// the order, the destinations and the findings the rollout would act on,
// and the contract's error with them; bad options and unknown domains get
// an error and no plan.
func TestPlanRollout(t *testing.T) {
	objs := func() []runtime.Object {
		return objects(destNode(1, 1, 6), destNode(2, 1, 8), destNode(3, 1, 8),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1"), leaderPDB(2))
	}
	all := []string{"ud-1", "ud-2", "ud-3"}
	for _, tc := range []struct {
		name      string
		opts      RolloutOptions
		want      *RolloutPlan
		wantCodes []topology.FindingCode
		wantErr   string
		// tainted: every node has gpuTaint, every pod tolerates it.
		tainted bool
	}{
		{
			// The spare ud-3 first: llm-0 (whose own node lost GPUs) finds
			// it upgraded, llm-1 comes back to its own domain.
			name: "defaults", opts: RolloutOptions{ID: "r1"},
			want: &RolloutPlan{ID: "r1", Parallel: 1, MaxInFlight: 1, Order: OrderSpareFirst, Steering: SteerAuto, Domains: pendingDomains("ud-3", "ud-1", "ud-2"),
				Destinations: []GroupDestination{dest(0, "ud-1", "ud-3", DestinationUpgraded, 1), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0)}},
		},
		{
			// The spare last: llm-0 can only go to ud-3 before its turn.
			name: "given order", opts: RolloutOptions{ID: "r1", Domains: all},
			want: &RolloutPlan{ID: "r1", Parallel: 1, MaxInFlight: 1, Order: OrderGiven, Steering: SteerAuto, Domains: pendingDomains(all...),
				Destinations: []GroupDestination{dest(0, "ud-1", "ud-3", DestinationDisruptedAgain, 1), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0),
					dest(0, "ud-3", "ud-3", DestinationOwnDomain, 0)}},
			wantCodes: []topology.FindingCode{topology.FindingDisruptedAgain},
		},
		{
			// Strict keeps llm-0 off the pending ud-3 and its own node has
			// no room: the plan says so, with the error Rollout stops on.
			name: "strict without room", opts: RolloutOptions{ID: "r1", Domains: all, Steering: SteerStrict},
			want: &RolloutPlan{ID: "r1", Parallel: 1, MaxInFlight: 1, Order: OrderGiven, Steering: SteerStrict, Domains: pendingDomains(all...),
				Destinations: []GroupDestination{dest(0, "ud-1", "", DestinationNoRoom, 0), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0)}},
			wantCodes: []topology.FindingCode{topology.FindingNoRoom},
			wantErr:   "placement contract violated (1 finding(s)); NoRoom: group inference/llm-0, evicted from ud-1, finds no room anywhere",
		},
		{
			// GPU nodes tainted, the groups tolerating the taint by key:
			// udrain's own pod cache keeps the tolerations, so the plan
			// is the defaults' (without them no node would take llm-0).
			name: "tainted GPU nodes, keyed tolerations", opts: RolloutOptions{ID: "r1"}, tainted: true,
			want: &RolloutPlan{ID: "r1", Parallel: 1, MaxInFlight: 1, Order: OrderSpareFirst, Steering: SteerAuto, Domains: pendingDomains("ud-3", "ud-1", "ud-2"),
				Destinations: []GroupDestination{dest(0, "ud-1", "ud-3", DestinationUpgraded, 1), dest(1, "ud-2", "ud-2", DestinationOwnDomain, 0)}},
		},
		{name: "unknown domain", opts: RolloutOptions{Domains: []string{"ud-9"}}, wantErr: `ud-9`},
		{name: "bad order", opts: RolloutOptions{Order: "Sideways"}, wantErr: `RolloutOptions.Order: "Sideways" is not an order`},
		{name: "in place, one at a time", opts: RolloutOptions{InPlace: true}, wantErr: `RolloutOptions.InPlace: takes domains at once`},
		{name: "in place, steering that lets a group land twice", opts: RolloutOptions{InPlace: true, Parallel: 2, Steering: SteerPreferUpgraded},
			wantErr: `RolloutOptions.InPlace: needs Steering Strict (what it sets when Steering is empty): with PreferUpgraded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := objs()
			if tc.tainted {
				for _, o := range in {
					switch o := o.(type) {
					case *corev1.Node:
						o.Spec.Taints = []corev1.Taint{gpuTaint}
					case *corev1.Pod:
						o.Spec.Tolerations = []corev1.Toleration{{Key: gpuTaint.Key, Operator: corev1.TolerationOpEqual, Value: gpuTaint.Value, Effect: gpuTaint.Effect}}
					}
				}
			}
			fc := newFakeCluster(t, in...)
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			got, err := d.PlanRollout(testContext(t), tc.opts)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if n, ev := nodePatches(fc), fc.evicted(); n != 0 || len(ev) != 0 {
				t.Errorf("%d node patches, evicted %v: a plan touches nothing", n, ev)
			}
			var codes []topology.FindingCode
			if got != nil {
				for _, f := range got.Findings {
					codes = append(codes, f.Code)
				}
				got.Findings = nil
			}
			// Each domain's Plan and Health: TestPlanRolloutDomains.
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(GroupDestination{}, "Message"), cmpopts.IgnoreFields(RolloutDomain{}, "Plan", "Health")); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCodes, codes); diff != "" {
				t.Errorf("finding codes (-want +got):\n%s", diff)
			}
			if ce := new(*topology.ContractError); tc.want != nil && tc.wantErr != "" && !errors.As(err, ce) {
				t.Errorf("err %T, want a *topology.ContractError", err)
			}
		})
	}
}

// TestPlanRolloutInPlace: with InPlace the plan is steered strictly,
// says InPlace, and starts a domain beside one whose upgrade would give
// its group room (the spare ud-3, which evicts nothing): without InPlace
// the room holds it back until then.
func TestPlanRolloutInPlace(t *testing.T) {
	objs := objects(destNode(1, 1, 8), destNode(2, 1, 8), destNode(3, 1, 8),
		destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1"), leaderPDB(2))
	for _, tc := range []struct {
		name string
		opts RolloutOptions
		// want: each domain's After and With, and HeldBy's reason.
		want         []string
		wantSteering Steering
	}{
		{"auto", RolloutOptions{ID: "r1", Parallel: ParallelAuto, Steering: SteerStrict},
			[]string{"ud-3 after - with []", "ud-1 after ud-3 with [] held Room", "ud-2 after ud-1 with [] held Budget"}, SteerStrict},
		{"in place", RolloutOptions{ID: "r1", Parallel: ParallelAuto, InPlace: true},
			[]string{"ud-3 after - with []", "ud-1 after - with [ud-3]", "ud-2 after ud-1 with [] held Budget"}, SteerStrict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, objs...)
			d, _ := New(fc.client, Options{Backoff: slowBackoff})
			plan, err := d.PlanRollout(testContext(t), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, scheduleLines(plan.Domains)); diff != "" {
				t.Errorf("schedule (-want +got):\n%s", diff)
			}
			if plan.Steering != tc.wantSteering || plan.InPlace != tc.opts.InPlace {
				t.Errorf("plan steering %s, in place %t; want %s, %t", plan.Steering, plan.InPlace, tc.wantSteering, tc.opts.InPlace)
			}
			if n, ev := nodePatches(fc), fc.evicted(); n != 0 || len(ev) != 0 {
				t.Errorf("%d node patches, evicted %v: a plan touches nothing", n, ev)
			}
		})
	}
}
