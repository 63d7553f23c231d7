package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
)

func TestFleetShapes(t *testing.T) {
	full := FullFleet()
	if err := full.Validate(); err != nil {
		t.Fatalf("the full fleet: %v", err)
	}
	q := full.Quarter()
	if err := q.Validate(); err != nil {
		t.Fatalf("the quarter fleet: %v", err)
	}
	type counts struct{ Nodes, PerUD, Workloads, Groups, DaemonSetPods, DeploymentPods, Deployments, Pods int }
	of := func(f FleetShape) counts {
		return counts{f.Nodes, f.PerUD(), f.Workloads(), f.Groups, f.DaemonSetPods(), f.DeploymentPods(), f.Deployments(), f.Groups*f.Size + f.OrdinaryPods}
	}
	// Issue 15: 2,000 nodes in 20 domains, 250 groups of 8, 18,000
	// ordinary pods with the DaemonSet pods among them.
	if diff := cmp.Diff(counts{2000, 100, 13, 250, 4000, 14000, 140, 20000}, of(full)); diff != "" {
		t.Errorf("full fleet (-want +got):\n%s", diff)
	}
	// A quarter, each domain as large as in the full fleet.
	if diff := cmp.Diff(counts{500, 100, 13, 63, 1000, 3500, 35, 5004}, of(q)); diff != "" {
		t.Errorf("quarter fleet (-want +got):\n%s", diff)
	}
}

func TestFleetShapeValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*FleetShape)
		want   string
	}{
		{"nodes not a multiple of domains", func(f *FleetShape) { f.Nodes = 2001 }, "multiple of its domains"},
		{"fewer ordinary pods than DaemonSet pods", func(f *FleetShape) { f.OrdinaryPods = 3000 }, "fewer than the 4000 DaemonSet pods"},
		{"too many pods per node", func(f *FleetShape) { f.OrdinaryPods = 200000 }, "pods per node"},
		{"groups do not fit a domain", func(f *FleetShape) { f.Groups = 20 * 60 }, "do not fit in a domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FullFleet()
			tc.change(&f)
			err := f.Validate()
			var se *ShapeError
			if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want a ShapeError saying %q", err, tc.want)
			}
		})
	}
}

func TestNewFleetPool(t *testing.T) {
	type workloads struct {
		Count, Groups, First, Last, LastMinAvailable int
	}
	for _, tc := range []struct {
		name string
		f    FleetShape
		want workloads
	}{
		{"full", FullFleet(), workloads{13, 250, 20, 10, 9}},
		{"quarter", FullFleet().Quarter(), workloads{13, 63, 5, 3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewFleetPool("fleet", tc.f)
			last := p.Workloads[len(p.Workloads)-1]
			got := workloads{Count: len(p.Workloads), First: p.Workloads[0].Groups, Last: last.Groups,
				LastMinAvailable: last.PodDisruptionBudget().Spec.MinAvailable.IntValue()}
			for _, w := range p.Workloads {
				got.Groups += w.Groups
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("workloads (-want +got):\n%s", diff)
			}
			if ws := p.ObservedWorkloads(); ws[len(ws)-1].MinAvailable != tc.want.LastMinAvailable {
				t.Errorf("observed last workload %+v, want minAvailable %d", ws[len(ws)-1], tc.want.LastMinAvailable)
			}
			// Issue 22: placed by the scheduler alone. No group is pinned
			// to a domain, every workload is exclusive within itself, and
			// no pod selects a domain or tolerates every taint.
			for _, w := range p.Workloads {
				if !w.Exclusive || w.Domains != nil {
					t.Errorf("%s: Exclusive %v, Domains %v; want exclusive and no domains", w.Name, w.Exclusive, w.Domains)
				}
				sets, err := p.statefulSets(w)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range sets {
					if err := unpinned(s.Spec.Template.Spec, w.Name); err != nil {
						t.Errorf("%s: %v", s.Name, err)
					}
				}
			}
		})
	}
}

// unpinned says what in a group pod's spec places it other than by the
// scheduler's choice among the pool's domains, or lets it ignore
// udrain's taint.
func unpinned(spec corev1.PodSpec, workload string) error {
	var errs []error
	for k := range spec.NodeSelector {
		if k != fixture.PoolLabel {
			errs = append(errs, fmt.Errorf("node selector on %s", k))
		}
	}
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		return errors.Join(append(errs, errors.New("no pod anti-affinity: not exclusive"))...)
	}
	if spec.Affinity.NodeAffinity != nil {
		errs = append(errs, fmt.Errorf("node affinity %v", spec.Affinity.NodeAffinity))
	}
	if len(spec.TopologySpreadConstraints) > 0 {
		errs = append(errs, fmt.Errorf("spread %v", spec.TopologySpreadConstraints))
	}
	for _, tol := range spec.Tolerations {
		if tol.Key == "" || tol.Operator == corev1.TolerationOpExists {
			errs = append(errs, fmt.Errorf("toleration %v: keyed, Equal tolerations only", tol))
		}
	}
	for _, term := range spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != fixture.UpgradeDomainLabel || !slices.ContainsFunc(term.LabelSelector.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool {
			return r.Key == fixture.LWSNameLabel && r.Operator == metav1.LabelSelectorOpIn && slices.Equal(r.Values, []string{workload})
		}) {
			errs = append(errs, fmt.Errorf("anti-affinity %v: not on the domain key within workload %s", term, workload))
		}
	}
	return errors.Join(errs...)
}

func TestExclusiveWithin(t *testing.T) {
	w := fixture.LWS{Namespace: "ns", Name: "llm", Groups: 2, Size: 2, Exclusive: true}
	sets, err := w.StatefulSets()
	if err != nil {
		t.Fatal(err)
	}
	leader, worker := sets[0].Spec.Template.Spec, sets[1].Spec.Template.Spec
	spread, err := fixture.LWS{Namespace: "ns", Name: "llm", Groups: 2, Size: 1}.StatefulSets()
	if err != nil {
		t.Fatal(err)
	}
	scope := metav1.LabelSelectorRequirement{Key: fixture.LWSNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"llm"}}
	scoped := func(spec corev1.PodSpec) *corev1.Affinity {
		a := spec.Affinity.DeepCopy()
		term := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
		term.LabelSelector.MatchExpressions = append(term.LabelSelector.MatchExpressions, scope)
		return a
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want *corev1.Affinity
	}{
		// The anti-affinity to other groups gains the workload; the
		// affinity to the own group (and a worker's to its leader) stays.
		{"leader", leader, scoped(leader)},
		{"worker", worker, scoped(worker)},
		{"no affinity", corev1.PodSpec{}, nil},
		{"spread leader", spread[0].Spec.Template.Spec, spread[0].Spec.Template.Spec.Affinity},
		{"anti-affinity on another label", corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: metav1.SetAsLabelSelector(map[string]string{"app": "x"}), TopologyKey: "k"}}}}},
			&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: metav1.SetAsLabelSelector(map[string]string{"app": "x"}), TopologyKey: "k"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := *tc.spec.DeepCopy()
			exclusiveWithin(&spec, "llm")
			if diff := cmp.Diff(tc.want, spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFleetSchedulerConfig: only the new-score-all mode's cluster gets a
// scheduler configuration of its own, and the file asks kube-scheduler
// to score every node.
func TestFleetSchedulerConfig(t *testing.T) {
	for _, m := range []FleetMode{FleetOld, FleetNew, FleetStrict} {
		if c := m.SchedulerConfig(); c != "" {
			t.Errorf("%s: scheduler config %q, want the testbed's default", m, c)
		}
	}
	c := FleetNewScoreAll.SchedulerConfig()
	data, err := os.ReadFile(filepath.Join("..", "..", c))
	if err != nil {
		t.Fatalf("%s: %v", FleetNewScoreAll, err)
	}
	var cfg struct {
		APIVersion               string `json:"apiVersion"`
		Kind                     string `json:"kind"`
		PercentageOfNodesToScore *int   `json:"percentageOfNodesToScore"`
		LeaderElection           struct {
			LeaderElect *bool `json:"leaderElect"`
		} `json:"leaderElection"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	if cfg.APIVersion != "kubescheduler.config.k8s.io/v1" || cfg.Kind != "KubeSchedulerConfiguration" {
		t.Errorf("%s: %s %s, want kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (kwokctl refuses others)", c, cfg.APIVersion, cfg.Kind)
	}
	if cfg.PercentageOfNodesToScore == nil || *cfg.PercentageOfNodesToScore != 100 {
		t.Errorf("%s: percentageOfNodesToScore %v, want 100", c, cfg.PercentageOfNodesToScore)
	}
	if le := cfg.LeaderElection.LeaderElect; le == nil || *le {
		t.Errorf("%s: leaderElect %v, want false (the testbed runs one scheduler)", c, le)
	}
}

func TestFleetModes(t *testing.T) {
	domains := []string{"p-ud0", "p-ud1", "p-ud2"}
	for _, tc := range []struct {
		in      string
		want    []FleetMode
		wantErr string
	}{
		{"old,new", []FleetMode{FleetOld, FleetNew}, ""},
		{"new", []FleetMode{FleetNew}, ""},
		{" old ", []FleetMode{FleetOld}, ""},
		{"old,new,strict", []FleetMode{FleetOld, FleetNew, FleetStrict}, ""},
		{"new,new-score-all", []FleetMode{FleetNew, FleetNewScoreAll}, ""},
		{"new,new", nil, "given twice"},
		{"steered", nil, `unknown fleet mode "steered"`},
		{"", nil, "unknown fleet mode"},
	} {
		got, err := ParseFleetModes(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseFleetModes(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFleetModes(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseFleetModes(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, tc := range []struct {
		mode FleetMode
		want DrainerJob
	}{
		// The old behaviour: no taint, natural order.
		{FleetOld, DrainerJob{Domains: domains, RolloutID: "bench", Order: eviction.OrderGiven, Steering: eviction.SteerOff}},
		// udrain's default steering, its order, still limited to the pool.
		{FleetNew, DrainerJob{Domains: domains, RolloutID: "bench", Order: eviction.OrderSpareFirst}},
		// The same order, pending domains closed to new pods.
		{FleetStrict, DrainerJob{Domains: domains, RolloutID: "bench", Order: eviction.OrderSpareFirst, Steering: eviction.SteerStrict}},
		// udrain's default, as new: only the cluster's scheduler differs.
		{FleetNewScoreAll, DrainerJob{Domains: domains, RolloutID: "bench", Order: eviction.OrderSpareFirst}},
	} {
		if diff := cmp.Diff(tc.want, tc.mode.Job(domains)); diff != "" {
			t.Errorf("%s: job (-want +got):\n%s", tc.mode, diff)
		}
		// Whatever the mode asks, the library must take.
		if err := (eviction.RolloutOptions{Domains: domains, Order: tc.want.Order, Steering: tc.want.Steering}).Validate(); err != nil {
			t.Errorf("%s: the rollout options are refused: %v", tc.mode, err)
		}
	}
}

func TestPoolAddSpare(t *testing.T) {
	f := FullFleet().Quarter()
	p := NewFleetPool("p", f)
	c := fake.NewClientset()
	// The pool's own nodes are not needed to add a spare domain after them.
	spare, err := p.AddSpare(t.Context(), c, 8)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p-ud0", "p-ud1", "p-ud2", "p-ud3", "p-ud4", "p-ud5"}, p.Domains()); diff != "" {
		t.Errorf("domains (-want +got):\n%s", diff)
	}
	nodes, err := c.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: fixture.UpgradeDomainLabel + "=p-ud5"})
	if err != nil {
		t.Fatal(err)
	}
	type spareState struct {
		Spare                      string
		SpareNodes, NodeList, UDOf int
		FirstNode, ItsDomain       string
		Cordoned, Tainted          bool
	}
	got := spareState{Spare: spare, SpareNodes: len(nodes.Items), NodeList: len(p.NodeList), UDOf: len(p.UDOf),
		FirstNode: p.NodeList[0].Name, ItsDomain: p.UDOf[p.NodeList[0].Name], Cordoned: p.NodeList[0].Spec.Unschedulable, Tainted: len(p.NodeList[0].Spec.Taints) > 0}
	if diff := cmp.Diff(spareState{"p-ud5", 100, 100, 100, "p-ud5-0", "p-ud5", false, false}, got); diff != "" {
		t.Errorf("spare (-want +got):\n%s", diff)
	}
	if _, err := p.AddSpare(t.Context(), c, 8); err != nil {
		t.Errorf("a second spare: %v", err)
	}
	if d := p.Domains(); len(d) != 7 || d[6] != "p-ud6" {
		t.Errorf("domains %v, want p-ud6 last of 7", d)
	}
	// Creating a node that exists is an error: a spare is new capacity.
	q := NewFleetPool("p", f)
	if _, err := q.AddSpare(t.Context(), c, 8); err == nil || !strings.Contains(err.Error(), "create spare node p-ud5-") {
		t.Errorf("a spare over existing nodes: %v, want the create error", err)
	}
}

func TestPerOrdinaryPod(t *testing.T) {
	f := FullFleet() // 14,000 Deployment pods
	for _, tc := range []struct {
		evictions int
		want      float64
	}{{14000, 1}, {21422, 1.5301428571428572}, {0, 0}, {-1, 0}} {
		if got := perOrdinaryPod(tc.evictions, f); got != tc.want {
			t.Errorf("perOrdinaryPod(%d) = %v, want %v", tc.evictions, got, tc.want)
		}
	}
	f.OrdinaryPods = f.DaemonSetPods()
	if got := perOrdinaryPod(5, f); got != 0 {
		t.Errorf("no Deployment pods: %v, want 0", got)
	}
}

func TestOrdinaryObjects(t *testing.T) {
	f := FullFleet()
	f.OrdinaryPods = 4000 + 250 // a last Deployment of 50
	deps, dss := OrdinaryObjects("fleet", f)
	replicas, namespaces := 0, map[string]bool{}
	for _, d := range deps {
		replicas += int(*d.Spec.Replicas)
		namespaces[d.Namespace] = true
		if d.Spec.Template.Spec.NodeSelector[fixture.PoolLabel] != "fleet" {
			t.Errorf("%s/%s is not kept on the pool's nodes", d.Namespace, d.Name)
		}
	}
	if replicas != 250 || len(deps) != 3 || *deps[2].Spec.Replicas != 50 || len(namespaces) != 3 {
		t.Errorf("%d Deployments in %d namespaces with %d replicas (last %d); want 3, 3, 250 (50)", len(deps), len(namespaces), replicas, *deps[len(deps)-1].Spec.Replicas)
	}
	if len(dss) != 2 || dss[0].Namespace != "fleet-system" {
		t.Errorf("DaemonSets %d in %q, want 2 in fleet-system", len(dss), dss[0].Namespace)
	}
	a := dss[0].Spec.Template.Annotations
	if a[fixture.TerminateDelayAnnotation] != "3000ms" || a[fixture.ReadyDelayAnnotation] != "1000ms" {
		t.Errorf("kwok delays %v, want termination 3000ms, ready 1000ms", a)
	}
	if _, ok := a[fixture.StartReadyAnnotation]; !ok {
		t.Errorf("annotations %v: the full fleet's ordinary pods do not start in one kwok step", a)
	}
	f.OrdinaryStartReady = false
	deps, _ = OrdinaryObjects("fleet", f)
	if _, ok := deps[0].Spec.Template.Annotations[fixture.StartReadyAnnotation]; ok {
		t.Errorf("OrdinaryStartReady false: annotations %v, want a two-step start", deps[0].Spec.Template.Annotations)
	}
}

func TestInstantTermination(t *testing.T) {
	for _, tc := range []struct {
		delay time.Duration
		want  map[string]string
	}{
		{0, map[string]string{fixture.TerminateDelayAnnotation: "0ms"}},
		{3 * time.Second, nil},
	} {
		var tpl corev1.PodTemplateSpec
		instantTermination(&tpl, tc.delay)
		if diff := cmp.Diff(tc.want, tpl.Annotations); diff != "" {
			t.Errorf("delay %s (-want +got):\n%s", tc.delay, diff)
		}
	}
}
