package eviction

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

func TestBudgetAllows(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	for _, tc := range []struct {
		name     string
		spec     policyv1.PodDisruptionBudgetSpec
		expected int
		allowed  int
		rule     string
	}{
		{"maxUnavailable", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(i(2))}, 4, 2, "maxUnavailable 2"},
		{"maxUnavailable ignores the count", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(i(2))}, 1, 2, "maxUnavailable 2"},
		{"maxUnavailable percent rounds up", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(s("30%"))}, 4, 2, "maxUnavailable 30% of 4"},
		{"minAvailable", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(i(3))}, 4, 1, "minAvailable 3 of 4"},
		{"minAvailable above the count", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(i(5))}, 4, 0, "minAvailable 5 of 4"},
		{"minAvailable percent rounds up what stays", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(s("50%"))}, 5, 2, "minAvailable 50% of 5"},
		{"neither", policyv1.PodDisruptionBudgetSpec{}, 4, 0, "neither minAvailable nor maxUnavailable"},
		{"bad percentage", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(s("lots"))}, 4, 0, "maxUnavailable lots (not a number or percentage)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed, rule := budgetAllows(tc.spec, tc.expected)
			if allowed != tc.allowed || rule != tc.rule {
				t.Errorf("budgetAllows = %d, %q; want %d, %q", allowed, rule, tc.allowed, tc.rule)
			}
		})
	}
}

// parCluster is a cluster for the parallelism's decisions: domains ud-1
// .. ud-<domains> of one node with nodeGPUs GPUs, each holding group
// llm-<d-1> of two pods of groupGPUs GPUs, leaders under the budget pdb;
// and a spare domain ud-9 of one node of spareGPUs GPUs.
type parCluster struct {
	domains             int
	nodeGPUs, groupGPUs int64
	spareGPUs           int64
	exclusive           bool
	pdb                 *policyv1.PodDisruptionBudget
}

func (c parCluster) objects() []runtime.Object {
	var objs []runtime.Object
	for d := 1; d <= c.domains; d++ {
		objs = append(objs, destNode(d, 1, c.nodeGPUs))
		g := destGroup(d-1, 2, c.groupGPUs/2, fmt.Sprintf("node-%d-1", d))
		if c.exclusive {
			g = exclusive(g)
		}
		objs = append(objs, g...)
	}
	objs = append(objs, destNode(9, 1, c.spareGPUs))
	if c.pdb != nil {
		objs = append(objs, c.pdb)
	}
	return objs
}

// budget is the PDB llm-leaders over the leaders of c's groups, with
// spec's rule and a status that counts all of them healthy.
func (c parCluster) budget(spec policyv1.PodDisruptionBudgetSpec) parCluster {
	pdb := kube.LeaderPDB("llm", c.domains, 1)
	pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = spec.MinAvailable, spec.MaxUnavailable
	c.pdb = pdb
	return c
}

// admissionOf builds the admission over objs with order's domains
// pending but those upgraded, and the demand of each pending domain from
// the pods on it.
func admissionOf(t *testing.T, objs []runtime.Object, order []string, upgraded ...string) (*admission, map[string]*demand) {
	t.Helper()
	return admissionSteered(t, objs, order, SteerPreferUpgraded, upgraded...)
}

// admissionSteered is admissionOf with the given steering.
func admissionSteered(t *testing.T, objs []runtime.Object, order []string, steering Steering, upgraded ...string) (*admission, map[string]*demand) {
	t.Helper()
	snap := snapshotOf(objs)
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: order, upgraded: map[string]bool{}, steering: steering}
	for _, u := range upgraded {
		in.upgraded[u] = true
	}
	a := newAdmission(in, snap.PDBs, nil)
	demands := map[string]*demand{}
	for _, name := range order {
		demands[name] = a.demandOn(name)
	}
	return a, demands
}

func holdSummary(hs []*BlockInfo) []string {
	var out []string
	for _, h := range hs {
		s := h.Domain + ":" + string(h.Reason)
		if h.PDB != "" {
			s += fmt.Sprintf(" %s %s allowed %d down %d needed %d", h.BudgetRef, h.Rule, h.Allowed, h.Down, h.Needed)
		}
		if h.Group != nil {
			s += " " + h.Group.Name
		}
		if h.To != "" {
			s += " to " + h.To
		}
		out = append(out, s)
	}
	return out
}

// TestAdmissionNext pins which domains a rollout starts at once, and why
// it holds the others: by the budgets' spec (not their status), by the
// upgraded room, by the limit.
func TestAdmissionNext(t *testing.T) {
	i := intstr.FromInt32
	maxUnavailable := func(n int32) policyv1.PodDisruptionBudgetSpec {
		return policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(i(n))}
	}
	minAvailable := func(n int32) policyv1.PodDisruptionBudgetSpec {
		return policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(i(n))}
	}
	// Four full domains (one 8-GPU group each) and a spare with room for
	// two groups: the upgraded room takes two domains' groups.
	roomy := parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 16}
	order := []string{"ud-1", "ud-2", "ud-3", "ud-4"}
	for _, tc := range []struct {
		name  string
		objs  []runtime.Object
		order []string
		// upgraded domains; flights are in flight (pending is the rest
		// of order), recovering those uncordoned.
		upgraded, flights, recovering []string
		limit                         int
		serial                        bool
		// steering is SteerPreferUpgraded if empty; inPlace is
		// RolloutOptions.InPlace.
		steering Steering
		inPlace  bool
		// change edits the cluster after the flights' demands are taken.
		change    func([]runtime.Object) []runtime.Object
		wantStart []string
		wantHolds []string
	}{
		{
			name: "a budget allowing two down starts two", objs: roomy.budget(maxUnavailable(2)).objects(), order: order, upgraded: []string{"ud-9"},
			wantStart: []string{"ud-1", "ud-2"},
			wantHolds: []string{"ud-3:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1", "ud-4:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1"},
		},
		{
			name: "minAvailable three of four starts one", objs: roomy.budget(minAvailable(3)).objects(), order: order, upgraded: []string{"ud-9"},
			wantStart: []string{"ud-1"},
			wantHolds: []string{"ud-2:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1", "ud-3:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1", "ud-4:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1"},
		},
		{
			name: "a group down elsewhere counts", objs: roomy.budget(maxUnavailable(2)).objects(), order: order, upgraded: []string{"ud-9"},
			change: func(objs []runtime.Object) []runtime.Object {
				for _, o := range objs {
					if p, ok := o.(*corev1.Pod); ok && p.Name == "llm-3-1" {
						kube.Ready(false)(p)
					}
				}
				return objs
			},
			wantStart: []string{"ud-1", "ud-4"},
			wantHolds: []string{"ud-2:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1", "ud-3:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1"},
		},
		{
			// The budget's status counts three leaders (the fourth
			// group's controller is gone with its pods) and allows two
			// more disruptions: its spec allows two down in all, and two
			// are, in the flights.
			name: "the spec counts, not a status that counts wrong", objs: roomy.budget(maxUnavailable(2)).objects(), order: order, upgraded: []string{"ud-9"},
			flights: []string{"ud-1", "ud-2"},
			change: func(objs []runtime.Object) []runtime.Object {
				var out []runtime.Object
				for _, o := range objs {
					if p, ok := o.(*corev1.Pod); ok && (p.Labels[topology.LWSGroupIndexLabel] == "0" || p.Labels[topology.LWSGroupIndexLabel] == "1") {
						continue // evicted, and their controllers with them
					}
					if b, ok := o.(*policyv1.PodDisruptionBudget); ok {
						b.Status.ExpectedPods, b.Status.CurrentHealthy, b.Status.DesiredHealthy, b.Status.DisruptionsAllowed = 2, 2, 0, 2
					}
					out = append(out, o)
				}
				return out
			},
			wantHolds: []string{"ud-3:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1", "ud-4:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1"},
		},
		{
			name: "a recovering flight whose group is whole again counts no more", objs: roomy.budget(minAvailable(3)).objects(), order: order, upgraded: []string{"ud-9"},
			flights: []string{"ud-1"}, recovering: []string{"ud-1"},
			wantStart: []string{"ud-2"},
			wantHolds: []string{"ud-3:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1", "ud-4:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1"},
		},
		{
			name: "a recovering flight whose group is down still counts", objs: roomy.budget(minAvailable(3)).objects(), order: order, upgraded: []string{"ud-9"},
			flights: []string{"ud-1"}, recovering: []string{"ud-1"},
			change: func(objs []runtime.Object) []runtime.Object {
				for _, o := range objs {
					if p, ok := o.(*corev1.Pod); ok && p.Name == "llm-0" {
						kube.Ready(false)(p)
					}
				}
				return objs
			},
			wantHolds: []string{"ud-2:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1", "ud-3:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1", "ud-4:Budget inference/llm-leaders minAvailable 3 of 4 allowed 1 down 1 needed 1"},
		},
		{
			name: "the limit", objs: roomy.budget(maxUnavailable(4)).objects(), order: order, upgraded: []string{"ud-9"}, limit: 2,
			wantStart: []string{"ud-1", "ud-2"},
			wantHolds: []string{"ud-3:Limit", "ud-4:Limit"},
		},
		{
			// The spare takes one group: the second domain's group would
			// wait for its own domain, though the first domain has room
			// for it once it is done.
			name: "the upgraded room", objs: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 8}.budget(maxUnavailable(4)).objects(),
			order: order, upgraded: []string{"ud-9"},
			wantStart: []string{"ud-1"},
			wantHolds: []string{"ud-2:Room llm-1", "ud-3:Room llm-2", "ud-4:Room llm-3"},
		},
		{
			// In place, exclusive groups: the budget alone holds; the
			// second domain's group, kept out of the spare by the first's,
			// waits for its own domain.
			name: "in place, exclusive groups: the upgraded room holds nothing back", objs: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 8, exclusive: true}.budget(maxUnavailable(2)).objects(),
			order: order, upgraded: []string{"ud-9"}, steering: SteerStrict, inPlace: true,
			wantStart: []string{"ud-1", "ud-2"},
			wantHolds: []string{"ud-3:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1", "ud-4:Budget inference/llm-leaders maxUnavailable 2 allowed 2 down 2 needed 1"},
		},
		{
			// In place, groups nothing keeps apart: the second domain's
			// group would wait, but its pods fit in the spare by the room
			// kept for the first's: the scheduler may split it there.
			name: "in place, groups that could split: the room they could split holds", objs: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 8}.budget(maxUnavailable(2)).objects(),
			order: order, upgraded: []string{"ud-9"}, steering: SteerStrict, inPlace: true,
			wantStart: []string{"ud-1"},
			wantHolds: []string{"ud-2:Room llm-1 to ud-9", "ud-3:Room llm-2 to ud-9", "ud-4:Room llm-3 to ud-9"},
		},
		{
			// Strict steering without InPlace: room holds as before.
			name: "strict, not in place: the upgraded room holds", objs: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 8}.budget(maxUnavailable(2)).objects(),
			order: order, upgraded: []string{"ud-9"}, steering: SteerStrict,
			wantStart: []string{"ud-1"},
			wantHolds: []string{"ud-2:Room llm-1", "ud-3:Room llm-2", "ud-4:Room llm-3"},
		},
		{
			// Domains with room for a second group: the second domain's
			// group would land on ud-3, still to drain.
			name: "the upgraded room, pending domains with room", objs: parCluster{domains: 4, nodeGPUs: 16, groupGPUs: 8, spareGPUs: 8}.budget(maxUnavailable(4)).objects(),
			order: order, upgraded: []string{"ud-9"},
			wantStart: []string{"ud-1"},
			wantHolds: []string{"ud-2:Room llm-1 to ud-3", "ud-3:Room llm-2 to ud-2", "ud-4:Room llm-3 to ud-2"},
		},
		{
			// No spare at all: every group waits for its own domain
			// whatever runs beside it; room holds nothing back.
			name: "no upgraded room anyway", objs: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8}.budget(maxUnavailable(4)).objects(),
			order:     order,
			wantStart: []string{"ud-1", "ud-2", "ud-3", "ud-4"},
		},
		{
			name: "with nothing in flight the first starts anyway", objs: roomy.budget(maxUnavailable(0)).objects(), order: order, upgraded: []string{"ud-9"},
			wantStart: []string{"ud-1"},
			wantHolds: []string{"ud-2:Budget inference/llm-leaders maxUnavailable 0 allowed 0 down 0 needed 1", "ud-3:Budget inference/llm-leaders maxUnavailable 0 allowed 0 down 0 needed 1", "ud-4:Budget inference/llm-leaders maxUnavailable 0 allowed 0 down 0 needed 1"},
		},
		{
			name: "serial takes the first once nothing is in flight", objs: roomy.budget(maxUnavailable(4)).objects(), order: order, upgraded: []string{"ud-9"}, serial: true,
			wantStart: []string{"ud-1"},
		},
		{
			name: "serial waits for the flight", objs: roomy.budget(maxUnavailable(4)).objects(), order: order, upgraded: []string{"ud-9"}, serial: true,
			flights: []string{"ud-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The flights' demands are those of their plans, taken before
			// their drain.
			steering := tc.steering
			if steering == "" {
				steering = SteerPreferUpgraded
			}
			_, before := admissionSteered(t, tc.objs, tc.order, steering, tc.upgraded...)
			objs := tc.objs
			if tc.change != nil {
				objs = tc.change(objs)
			}
			a, now := admissionSteered(t, objs, tc.order, steering, tc.upgraded...)
			a.inPlace = tc.inPlace
			var flights []*flight
			var pending []*demand
			for _, name := range tc.order {
				switch {
				case contains(tc.flights, name):
					f := &flight{demand: before[name], recovering: contains(tc.recovering, name)}
					flights = append(flights, f)
					if f.recovering {
						a.sim.setState(a.sim.domains[name], simUpgraded)
					} else {
						a.sim.setState(a.sim.domains[name], simDraining)
					}
				case !contains(tc.upgraded, name):
					pending = append(pending, now[name])
				}
			}
			started, holds := a.next(pending, flights, tc.limit, tc.serial)
			var names []string
			for _, s := range started {
				names = append(names, s.demand.domain)
			}
			if diff := cmp.Diff(tc.wantStart, names, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("started (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHolds, holdSummary(holds), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("holds (-want +got):\n%s", diff)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSchedule pins the plan's simulation of a parallel rollout: when
// each domain starts, where its groups go, and the most in flight.
func TestSchedule(t *testing.T) {
	i := intstr.FromInt32
	maxUnavailable := func(n int32) policyv1.PodDisruptionBudgetSpec {
		return policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(i(n))}
	}
	order := []string{"ud-9", "ud-1", "ud-2", "ud-3", "ud-4"}
	for _, tc := range []struct {
		name      string
		c         parCluster
		limit     int
		serial    bool
		inPlace   bool // with SteerStrict
		wantSched []string
		wantPeak  int
		wantDests []string
	}{
		{
			name: "two at once, the spare first", c: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 16}.budget(maxUnavailable(2)),
			// The spare starts alone: the first domain's group would wait
			// for its own domain while the spare is not upgraded.
			wantSched: []string{"ud-9 after - with []", "ud-1 after ud-9 with [] held Room", "ud-2 after ud-9 with [ud-1] held Room", "ud-3 after ud-1 with [ud-2] held Budget", "ud-4 after ud-2 with [ud-3] held Budget"},
			wantPeak:  2,
			wantDests: []string{"llm-0 ud-1>ud-9 UpgradedDomain", "llm-1 ud-2>ud-9 UpgradedDomain", "llm-2 ud-3>ud-1 UpgradedDomain", "llm-3 ud-4>ud-2 UpgradedDomain"},
		},
		{
			name: "serial", c: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 16}.budget(maxUnavailable(2)), serial: true,
			wantSched: []string{"ud-9 after - with []", "ud-1 after ud-9 with []", "ud-2 after ud-1 with []", "ud-3 after ud-2 with []", "ud-4 after ud-3 with []"},
			wantPeak:  1,
			wantDests: []string{"llm-0 ud-1>ud-9 UpgradedDomain", "llm-1 ud-2>ud-9 UpgradedDomain", "llm-2 ud-3>ud-1 UpgradedDomain", "llm-3 ud-4>ud-2 UpgradedDomain"},
		},
		{
			// Exclusive groups and one spare: each group takes the room
			// of the domain upgraded last; one domain at a time.
			name: "exclusive groups, one spare", c: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 16, exclusive: true}.budget(maxUnavailable(2)),
			wantSched: []string{"ud-9 after - with []", "ud-1 after ud-9 with [] held Room", "ud-2 after ud-1 with [] held Room", "ud-3 after ud-2 with [] held Room", "ud-4 after ud-3 with [] held Room"},
			wantPeak:  1,
			wantDests: []string{"llm-0 ud-1>ud-9 UpgradedDomain", "llm-1 ud-2>ud-1 UpgradedDomain", "llm-2 ud-3>ud-2 UpgradedDomain", "llm-3 ud-4>ud-3 UpgradedDomain"},
		},
		{
			// The same in place: the budget's two at once; the groups
			// the spare cannot take wait for their own domain.
			name: "exclusive groups, one spare, in place", c: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8, spareGPUs: 16, exclusive: true}.budget(maxUnavailable(2)), inPlace: true,
			// The spare starts with them (it evicts nothing): the first
			// two domains' groups wait for their own; the third's takes
			// the spare.
			wantSched: []string{"ud-9 after - with []", "ud-1 after - with [ud-9]", "ud-2 after - with [ud-9 ud-1]", "ud-3 after ud-1 with [ud-2] held Budget", "ud-4 after ud-2 with [ud-3] held Budget"},
			wantPeak:  3,
			wantDests: []string{"llm-0 ud-1>ud-1 OwnDomain", "llm-2 ud-3>ud-9 UpgradedDomain", "llm-1 ud-2>ud-2 OwnDomain", "llm-3 ud-4>ud-4 OwnDomain"},
		},
		{
			name: "no spare: all four at once, each group waits for its own domain", c: parCluster{domains: 4, nodeGPUs: 8, groupGPUs: 8}.budget(maxUnavailable(4)),
			wantSched: []string{"ud-9 after - with []", "ud-1 after - with [ud-9]", "ud-2 after - with [ud-9 ud-1]", "ud-3 after - with [ud-9 ud-1 ud-2]", "ud-4 after - with [ud-9 ud-1 ud-2 ud-3]"},
			wantPeak:  5,
			wantDests: []string{"llm-0 ud-1>ud-1 OwnDomain", "llm-1 ud-2>ud-2 OwnDomain", "llm-2 ud-3>ud-3 OwnDomain", "llm-3 ud-4>ud-4 OwnDomain"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.c.objects()
			snap := snapshotOf(objs)
			layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: order, upgraded: map[string]bool{}, plans: map[string]*Plan{}, steering: SteerPreferUpgraded}
			if tc.inPlace {
				in.steering = SteerStrict
			}
			for _, name := range order {
				if in.plans[name], err = NewPlan(name, snap, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			a := newAdmission(in, snap.PDBs, nil)
			a.inPlace = tc.inPlace
			sched, dests, peak, _ := a.schedule(in, tc.limit, tc.serial)
			if diff := cmp.Diff(tc.wantSched, scheduleLines(sched)); diff != "" {
				t.Errorf("schedule (-want +got):\n%s", diff)
			}
			if peak != tc.wantPeak {
				t.Errorf("peak = %d, want %d", peak, tc.wantPeak)
			}
			var gotDests []string
			for _, d := range dests {
				gotDests = append(gotDests, fmt.Sprintf("%s %s>%s %s", d.Group.Name, d.From, d.To, d.Kind))
			}
			if diff := cmp.Diff(tc.wantDests, gotDests); diff != "" {
				t.Errorf("destinations (-want +got):\n%s", diff)
			}
		})
	}
}

// scheduleLines are the domains' After, With and HeldBy's reason, one
// line each.
func scheduleLines(sched []RolloutDomain) []string {
	var out []string
	for _, s := range sched {
		line := fmt.Sprintf("%s after %s with %v", s.Domain, orDash(s.After), s.With)
		if s.HeldBy != nil {
			line += " held " + string(s.HeldBy.Reason)
		}
		out = append(out, line)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var (
	_ = health.BudgetRef{}
	_ = types.NamespacedName{}
)

// exclusiveFleet is issue 35's fleet as the harness deploys it: domains
// of 100 8-GPU nodes, the last spares empty and upgraded; per domain one
// group of each of 12 workloads (8 pods of 4 GPUs, two a node), each
// exclusive within its workload on the domain key (LeaderWorkerSet's
// exclusive topology, scoped to the workload): a domain holds at most one
// group of a workload. Each workload's budget allows 4 groups down.
func exclusiveFleet(domains, spares int) (*Snapshot, []string) {
	const perDomain, workloads, size = 100, 12, 8
	const groupKey = "leaderworkerset.sigs.k8s.io/group-key"
	snap, order := gpuFleetNodes(domains, spares, perDomain)
	four := resource.MustParse("4")
	for w := range workloads {
		lws := fmt.Sprintf("llm%d", w)
		for d := range domains {
			key := fmt.Sprintf("%s-%d", lws, d)
			for m := range size {
				p := readyPod(kube.LWSPod(lws, d, m, size, kube.OnNode(fleetNode(d, w*4+m/2))))
				p.Labels[groupKey] = key
				p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": four}}}}
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: groupKey, Operator: metav1.LabelSelectorOpExists},
						{Key: groupKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{key}},
						{Key: topology.LWSNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{lws}},
					}},
					TopologyKey: topology.DefaultDomainLabel,
				}}}}
				snap.Pods = append(snap.Pods, p)
			}
		}
		mu := intstr.FromInt32(4)
		pdb := kube.LeaderPDB(lws, domains, 4)
		pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = nil, &mu
		snap.PDBs = append(snap.PDBs, *pdb)
	}
	return snap, order
}

// With a domain in flight whose drain has not evicted anything yet, the
// admission takes its groups' pods off it (they leave, evicted yet or
// not): once it is done, it is empty upgraded room. A domain whose groups
// find no upgraded room now, but would there once the flight is done, is
// held back by room, not started with its groups Pending through its
// drain and upgrade (issue 35's fleet started three such domains beside
// the first: their groups were down five minutes). With room for two
// domains' groups (two spares), the second starts at once. In place
// (one spare), the budgets alone hold: three start beside ud-0.
func TestAdmissionCountsAFlightsDomainEmpty(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spares  int
		inPlace bool // with SteerStrict
		started []string
		held    string
		heldBy  BlockReason
	}{
		{"one spare", 1, false, nil, "ud-1", BlockRoom},
		{"two spares", 2, false, []string{"ud-1"}, "ud-2", BlockRoom},
		// In place: the budgets' four groups of each workload down, the
		// groups the spare cannot take (it holds one of each workload)
		// waiting for their own domain.
		{"one spare, in place", 1, true, []string{"ud-1", "ud-2", "ud-3"}, "ud-4", BlockBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, order := exclusiveFleet(6, tc.spares)
			layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			upgraded := map[string]bool{}
			for _, name := range order[6:] {
				upgraded[name] = true
			}
			in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: order, upgraded: upgraded, steering: SteerAuto, known: newRequestCache()}
			if tc.inPlace {
				in.steering = SteerStrict
			}
			a := newAdmission(in, snap.PDBs, nil)
			a.sim.noRoom, a.inPlace = true, tc.inPlace
			f := &flight{demand: a.demandOn("ud-0")}
			a.fly(f)
			a.reserve([]*flight{f})
			var pending []*demand
			for _, name := range order[1:6] {
				pending = append(pending, a.demandOn(name))
			}
			admitted, holds := a.next(pending, []*flight{f}, 0, false)
			var started []string
			for _, ad := range admitted {
				started = append(started, ad.demand.domain)
				if len(ad.back) > 0 && !tc.inPlace {
					t.Errorf("%s started with %d groups waiting, Pending, for its own upgrade", ad.demand.domain, len(ad.back))
				}
			}
			if diff := cmp.Diff(tc.started, started); diff != "" {
				t.Errorf("domains started beside ud-0 (-want +got):\n%s", diff)
			}
			if len(holds) == 0 || holds[0].Domain != tc.held || holds[0].Reason != tc.heldBy {
				t.Fatalf("holds %v, want %s held first by %s", holds, tc.held, tc.heldBy)
			}
			t.Logf("%s: %s", holds[0].Domain, holds[0].Message)
		})
	}
}
