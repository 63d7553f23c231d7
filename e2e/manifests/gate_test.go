package manifests

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestReadinessGateDeploymentForProduction: deploy/readiness-gate runs the
// controller as a production Deployment should: probes on the controller's
// /healthz and /readyz at the port of its --health-address, its two
// replicas required on different nodes, replaced one at a time without a
// surge (which the required spread could not place on two nodes), and a
// priority class of the base's own that outranks workloads without
// preempting them.
func TestReadinessGateDeploymentForProduction(t *testing.T) {
	var (
		d  *appsv1.Deployment
		pc []schedulingv1.PriorityClass
	)
	for _, u := range kustomize(t, filepath.Join(repoRoot, "deploy/readiness-gate")) {
		switch u.GetKind() {
		case "Deployment":
			d = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, d, true); err != nil {
				t.Fatal(err)
			}
		case "PriorityClass":
			var p schedulingv1.PriorityClass
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &p, true); err != nil {
				t.Fatal(err)
			}
			pc = append(pc, p)
		}
	}
	if d == nil {
		t.Fatal("deploy/readiness-gate renders no Deployment")
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]

	// Probes on the health listener.
	port := flagValue(c.Args, "--health-address")
	if !strings.HasPrefix(port, ":") {
		t.Fatalf("the controller runs with --health-address %q, want :PORT", port)
	}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: none, want GET %s", p.what, p.path)
			continue
		}
		if got := p.probe.HTTPGet.Path; got != p.path {
			t.Errorf("%s gets %s, want %s", p.what, got, p.path)
		}
		if got := containerPort(c, p.probe.HTTPGet.Port); ":"+got != port {
			t.Errorf("%s probes port %s, want the --health-address port %s", p.what, got, port)
		}
	}

	// Two replicas, never on one node.
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if !requiredAcrossNodes(spec, labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the replicas are not required on different nodes: affinity %+v, topologySpreadConstraints %+v", spec.Affinity, spec.TopologySpreadConstraints)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxSurge == nil || ru.MaxSurge.IntValue() != 0 {
		t.Errorf("strategy %+v: want a rolling update without surge (a third replica needs a third node)", d.Spec.Strategy)
	}

	// A priority class of its own, above workloads, not preempting.
	if spec.PriorityClassName == "" {
		t.Fatal("no priorityClassName")
	}
	i := slices.IndexFunc(pc, func(p schedulingv1.PriorityClass) bool { return p.Name == spec.PriorityClassName })
	if i < 0 {
		t.Fatalf("priorityClassName %s: the base renders no such PriorityClass (system-cluster-critical is kube-system's only, in many clusters)", spec.PriorityClassName)
	}
	p := pc[i]
	if p.Value < 1_000_000 || p.Value > 1_000_000_000 || p.GlobalDefault {
		t.Errorf("PriorityClass %s: value %d, globalDefault %v; want a high value a user class may have (up to 1000000000), not the default", p.Name, p.Value, p.GlobalDefault)
	}
	if p.PreemptionPolicy == nil || *p.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("PriorityClass %s preempts (%v): a preempted member breaks its group behind its budget", p.Name, p.PreemptionPolicy)
	}
}

// flagValue returns the value of flag in args ("--flag value" or
// "--flag=value"); "" if absent.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// containerPort resolves a probe's port, by number or by name.
func containerPort(c corev1.Container, port intstr.IntOrString) string {
	if port.Type == intstr.Int {
		return port.String()
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	return "(no port named " + port.StrVal + ")"
}

// requiredAcrossNodes says whether the scheduler must keep the pods of own
// on different nodes: a required anti-affinity on the hostname that selects
// them, or a hostname spread of skew 1 that does not schedule otherwise.
func requiredAcrossNodes(spec corev1.PodSpec, own labels.Set) bool {
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.TopologyKey == corev1.LabelHostname && term.LabelSelector != nil &&
				labels.SelectorFromSet(term.LabelSelector.MatchLabels).Matches(own) && len(term.LabelSelector.MatchExpressions) == 0 {
				return true
			}
		}
	}
	for _, c := range spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule && c.MaxSkew == 1 &&
			c.LabelSelector != nil && labels.SelectorFromSet(c.LabelSelector.MatchLabels).Matches(own) {
			return true
		}
	}
	return false
}
