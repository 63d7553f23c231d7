package bench

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/udrain/udrain/e2e/fixture"
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
	f := FullFleet()
	p := NewFleetPool("fleet", f)
	total := 0
	for _, w := range p.Workloads {
		total += w.Groups
	}
	last := p.Workloads[len(p.Workloads)-1]
	if total != 250 || len(p.Workloads) != 13 || last.Groups != 10 || p.Workloads[0].Groups != 20 {
		t.Errorf("%d workloads, %d groups, first %d, last %d; want 13, 250, 20, 10", len(p.Workloads), total, p.Workloads[0].Groups, last.Groups)
	}
	if mina := last.PodDisruptionBudget().Spec.MinAvailable.IntValue(); mina != 9 {
		t.Errorf("the last workload's PDB keeps %d leaders, want 9 of its 10", mina)
	}
	ws := p.ObservedWorkloads()
	if got := ws[len(ws)-1]; got.Groups != 10 || got.MinAvailable != 9 {
		t.Errorf("observed last workload %+v, want 10 groups, minAvailable 9", got)
	}
	// The remainder's 10 groups in every other of the 20 domains; the full
	// workloads left to their spread.
	if len(last.Domains) != 10 || last.Domains[0] != p.Nodes.UD(0) || last.Domains[1] != p.Nodes.UD(2) || last.Domains[9] != p.Nodes.UD(18) {
		t.Errorf("the last workload's domains %v, want every other of %s..%s", last.Domains, p.Nodes.UD(0), p.Nodes.UD(19))
	}
	if d := p.Workloads[0].Domains; d != nil {
		t.Errorf("a full workload is kept in domains %v, want its spread alone", d)
	}
	sets, err := last.StatefulSets()
	if err != nil {
		t.Fatal(err)
	}
	na := sets[2].Spec.Template.Spec.Affinity // group 1's leader
	if na == nil || na.NodeAffinity == nil || na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != p.Nodes.UD(2) {
		t.Errorf("group 1's leader (%s) affinity %+v, want required in %s", sets[2].Name, na, p.Nodes.UD(2))
	}
	q := NewFleetPool("fleet", f.Quarter()) // 3 groups in 5 domains
	if d := q.Workloads[len(q.Workloads)-1].Domains; len(d) != 3 || d[0] != q.Nodes.UD(0) || d[1] != q.Nodes.UD(1) || d[2] != q.Nodes.UD(3) {
		t.Errorf("the quick fleet's remainder in %v, want ud0, ud1, ud3", d)
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
