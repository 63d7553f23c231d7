package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/examples/internal/exampletest"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness/gate"
)

// gateManifest is manifest.yaml, each object decoded strictly (an unknown
// field fails).
type gateManifest struct {
	kinds          []string
	serviceAccount corev1.ServiceAccount
	role           rbacv1.ClusterRole
	binding        rbacv1.ClusterRoleBinding
	leaseRole      rbacv1.Role
	leaseBinding   rbacv1.RoleBinding
	deployment     appsv1.Deployment
	priorityClass  schedulingv1.PriorityClass
	pdb            policyv1.PodDisruptionBudget
	lws            exampletest.LWS
}

func parseGateManifest(t *testing.T) gateManifest {
	t.Helper()
	var m gateManifest
	for _, o := range exampletest.ReadObjects(t, "manifest.yaml") {
		m.kinds = append(m.kinds, o.GetKind())
		switch o.GetKind() {
		case "ServiceAccount":
			exampletest.Decode(t, o.Object, &m.serviceAccount)
		case "ClusterRole":
			exampletest.Decode(t, o.Object, &m.role)
		case "ClusterRoleBinding":
			exampletest.Decode(t, o.Object, &m.binding)
		case "Role":
			exampletest.Decode(t, o.Object, &m.leaseRole)
		case "RoleBinding":
			exampletest.Decode(t, o.Object, &m.leaseBinding)
		case "Deployment":
			exampletest.Decode(t, o.Object, &m.deployment)
		case "PriorityClass":
			exampletest.Decode(t, o.Object, &m.priorityClass)
		case "PodDisruptionBudget":
			exampletest.Decode(t, o.Object, &m.pdb)
		case "LeaderWorkerSet":
			if o.GetAPIVersion() != "leaderworkerset.x-k8s.io/v1" {
				t.Errorf("LeaderWorkerSet apiVersion %s, want leaderworkerset.x-k8s.io/v1", o.GetAPIVersion())
			}
			m.lws = exampletest.DecodeLWS(t, o)
		}
	}
	want := []string{"Namespace", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "PriorityClass", "LeaderWorkerSet", "PodDisruptionBudget"}
	if diff := cmp.Diff(want, m.kinds); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	return m
}

// TestManifestRBAC: the controller runs as a ServiceAccount bound to
// exactly the roles of readiness/gate/rbac.yaml: its ClusterRole
// cluster-wide, its Lease Role in the namespace of --lease-namespace.
func TestManifestRBAC(t *testing.T) {
	m := parseGateManifest(t)
	var want rbacv1.ClusterRole
	var wantLease rbacv1.Role
	objs := exampletest.ReadObjects(t, "../../readiness/gate/rbac.yaml")
	if len(objs) != 2 || objs[0].GetKind() != "ClusterRole" || objs[1].GetKind() != "Role" {
		t.Fatalf("readiness/gate/rbac.yaml holds %d objects, want its ClusterRole and its Role", len(objs))
	}
	exampletest.Decode(t, objs[0].Object, &want)
	exampletest.Decode(t, objs[1].Object, &wantLease)
	if diff := cmp.Diff(want.Rules, m.role.Rules); diff != "" || m.role.Name != want.Name {
		t.Errorf("ClusterRole %s differs from readiness/gate/rbac.yaml's %s (-want +got):\n%s", m.role.Name, want.Name, diff)
	}
	if diff := cmp.Diff(wantLease.Rules, m.leaseRole.Rules); diff != "" || m.leaseRole.Name != wantLease.Name || m.leaseRole.Namespace != wantLease.Namespace {
		t.Errorf("Role %s/%s differs from readiness/gate/rbac.yaml's %s/%s (-want +got):\n%s", m.leaseRole.Namespace, m.leaseRole.Name, wantLease.Namespace, wantLease.Name, diff)
	}
	sa := m.deployment.Spec.Template.Spec.ServiceAccountName
	wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: m.serviceAccount.Name, Namespace: m.serviceAccount.Namespace}}
	for _, b := range []struct {
		kind     string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
		wantRef  rbacv1.RoleRef
	}{
		{"ClusterRoleBinding", m.binding.RoleRef, m.binding.Subjects, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: m.role.Name}},
		{"RoleBinding", m.leaseBinding.RoleRef, m.leaseBinding.Subjects, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: m.leaseRole.Name}},
	} {
		if b.ref != b.wantRef {
			t.Errorf("%s refers to %+v, want %+v", b.kind, b.ref, b.wantRef)
		}
		if diff := cmp.Diff(wantSubject, b.subjects); diff != "" {
			t.Errorf("%s subjects (-want +got):\n%s", b.kind, diff)
		}
	}
	if m.leaseBinding.Namespace != m.leaseRole.Namespace {
		t.Errorf("the RoleBinding is in %q, its Role in %q", m.leaseBinding.Namespace, m.leaseRole.Namespace)
	}
	if sa != m.serviceAccount.Name || m.deployment.Namespace != m.serviceAccount.Namespace {
		t.Errorf("the Deployment %s/%s runs as %q, want the ServiceAccount %s/%s", m.deployment.Namespace, m.deployment.Name, sa, m.serviceAccount.Namespace, m.serviceAccount.Name)
	}
}

// TestManifestControllerIsTheDeployBase: the example's controller is
// deploy/readiness-gate's Deployment and PriorityClass, object for object
// (probes, required spread, priority, resources), so that the example runs
// the production controller and the two never drift apart.
func TestManifestControllerIsTheDeployBase(t *testing.T) {
	m := parseGateManifest(t)
	var dep appsv1.Deployment
	var prio schedulingv1.PriorityClass
	for _, f := range []struct {
		file string
		into any
	}{{"../../deploy/readiness-gate/deployment.yaml", &dep}, {"../../deploy/readiness-gate/priorityclass.yaml", &prio}} {
		objs := exampletest.ReadObjects(t, f.file)
		if len(objs) != 1 {
			t.Fatalf("%s holds %d objects, want 1", f.file, len(objs))
		}
		exampletest.Decode(t, objs[0].Object, f.into)
	}
	if diff := cmp.Diff(dep, m.deployment); diff != "" {
		t.Errorf("the example's Deployment differs from deploy/readiness-gate/deployment.yaml (-deploy +example):\n%s", diff)
	}
	if diff := cmp.Diff(prio, m.priorityClass); diff != "" {
		t.Errorf("the example's PriorityClass differs from deploy/readiness-gate/priorityclass.yaml (-deploy +example):\n%s", diff)
	}
	spec := m.deployment.Spec.Template.Spec
	c := spec.Containers[0]
	if spec.PriorityClassName != m.priorityClass.Name || c.LivenessProbe == nil || c.ReadinessProbe == nil ||
		spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil || len(spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Errorf("the controller has priority %q (the manifest's class: %q), probes %v/%v, affinity %+v; want the class, both probes and a required spread",
			spec.PriorityClassName, m.priorityClass.Name, c.LivenessProbe != nil, c.ReadinessProbe != nil, spec.Affinity)
	}
}

// TestManifestControllerSetsTheGate runs the Deployment's command line, as
// parsed by udrain's own command tree, against a fake cluster holding one
// group made from the LeaderWorkerSet's templates: the controller must
// select the group's pods and set the gate the leader declares.
func TestManifestControllerSetsTheGate(t *testing.T) {
	m := parseGateManifest(t)
	d := m.deployment
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want the controller", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("the Deployment runs %q, want the image's entrypoint, udrain", c.Command)
	}
	// $(VAR) from the pod's fields as the kubelet expands them, and the
	// health checks on a free port of this machine.
	fields := map[string]string{"metadata.namespace": d.Namespace, "metadata.name": d.Name + "-0"}
	var pairs []string
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			t.Fatalf("env %s is not a pod field", e.Name)
		}
		pairs = append(pairs, "$("+e.Name+")", fields[e.ValueFrom.FieldRef.FieldPath])
	}
	expand := strings.NewReplacer(pairs...)
	var args []string
	for i, a := range c.Args {
		if i > 0 && c.Args[i-1] == "--health-address" {
			a = "127.0.0.1:0"
		}
		args = append(args, expand.Replace(a))
	}
	root := app.NewCommand(genericiooptions.NewTestIOStreamsDiscard(), app.Config{Name: "udrain"})
	cmd, rest, err := root.Find(args)
	if err != nil || cmd.Name() != "readiness-gate-controller" {
		t.Fatalf("udrain %q: %v (command %s), want readiness-gate-controller", args, err, cmd.Name())
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("udrain %q: %v", args, err)
	}
	leaseNS, _ := cmd.Flags().GetString("lease-namespace")
	if replicas := d.Spec.Replicas; replicas != nil && *replicas > 1 && leaseNS == "" {
		t.Errorf("%d replicas without --lease-namespace: they would all write", *replicas)
	}
	// The Lease must be the one the Role grants, in the Role's namespace.
	leaseName, _ := cmd.Flags().GetString("lease-name")
	if leaseNS != m.leaseRole.Namespace {
		t.Errorf("--lease-namespace %q, but the Lease Role is in %q", leaseNS, m.leaseRole.Namespace)
	}
	for _, r := range m.leaseRole.Rules {
		if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, leaseName) {
			t.Errorf("the Lease Role grants %v on %v, not the controller's Lease %q", r.Verbs, r.ResourceNames, leaseName)
		}
	}

	leader, worker := m.lws.Pod(0, 0), m.lws.Pod(0, 1)
	running := func(p *corev1.Pod, ready bool) *corev1.Pod {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Spec.NodeName = "gpu-0"
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: st}}}
		return p
	}
	client := fake.NewClientset(running(leader, false), running(worker, true))
	cfg := app.Config{
		Name:      "udrain",
		NewClient: func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil },
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stderr testkit.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: io.Discard, ErrOut: &stderr}, cfg)
	}()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(leader.Namespace).Get(ctx, leader.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := gate.CurrentCondition(p)
		return c != nil && c.Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("the controller did not set %s=True on leader %s: %v\n%s", gate.ConditionType, leader.Name, err, stderr.String())
	}
	cancel()
	if code := <-done; code != app.ExitOK {
		t.Errorf("exit code %d after cancel, want 0:\n%s", code, stderr.String())
	}
}

// TestManifestGatedLeaders: the leaders, and only they, wait for the gate;
// every member has a readinessProbe of its own (the controller reads the
// members' Ready), and no livenessProbe depends on the group.
func TestManifestGatedLeaders(t *testing.T) {
	m := parseGateManifest(t)
	if !gate.DeclaresGate(m.lws.Pod(0, 0)) {
		t.Errorf("the leader template does not declare the readiness gate %s", gate.ConditionType)
	}
	if gate.DeclaresGate(m.lws.Pod(0, 1)) {
		t.Errorf("the worker template declares the gate %s: workers would never be Ready", gate.ConditionType)
	}
	for name, tpl := range map[string]corev1.PodTemplateSpec{"leader": m.lws.Leader, "worker": m.lws.Worker} {
		for _, c := range tpl.Spec.Containers {
			if c.ReadinessProbe == nil {
				t.Errorf("%s container %s has no readinessProbe: it would count as Ready as soon as it runs", name, c.Name)
			}
		}
		if len(tpl.Spec.InitContainers) > 0 {
			t.Errorf("%s template has init containers; this flavour needs no sidecar", name)
		}
	}
	lp := m.lws.Leader.Spec.Containers[0].LivenessProbe
	if lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/health" {
		t.Errorf("the leader's livenessProbe %+v: want its own /health", lp)
	}
}

// TestManifestContract: leaders spread over the domains, workers follow
// their own leader; placed so, udrain's audit finds nothing, and the PDB
// selects the leaders only and allows a domain's groups to go.
func TestManifestContract(t *testing.T) {
	m := parseGateManifest(t)
	exampletest.CheckTopology(t, m.lws)
	nodes, pods := m.lws.PlaceOneGroupPerDomain()
	exampletest.Audit(t, nodes, pods, m.pdb, m.lws.Replicas)
	if m.pdb.Namespace != m.lws.Namespace || m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB %s/%s maxUnavailable %v: want 1 (one group per domain), in the workload's namespace %s", m.pdb.Namespace, m.pdb.Name, m.pdb.Spec.MaxUnavailable, m.lws.Namespace)
	}
}
