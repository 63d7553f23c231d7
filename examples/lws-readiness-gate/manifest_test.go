package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/topology"
)

// manifestGroupKeyLabel is the label LeaderWorkerSet gives every pod of a
// group, with a value unique to the group.
const manifestGroupKeyLabel = "leaderworkerset.sigs.k8s.io/group-key"

// gateManifest is manifest.yaml, each object decoded strictly (an unknown
// field fails).
type gateManifest struct {
	kinds          []string
	serviceAccount corev1.ServiceAccount
	role           rbacv1.ClusterRole
	binding        rbacv1.ClusterRoleBinding
	deployment     appsv1.Deployment
	pdb            policyv1.PodDisruptionBudget

	lwsName, lwsNamespace string
	replicas, size        int
	leader, worker        corev1.PodTemplateSpec
}

// readManifestObjects returns the objects of a multi-document YAML file.
func readManifestObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, u)
	}
}

func decodeManifestObject(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, into, true); err != nil {
		t.Fatalf("manifest.yaml: %T: %v", into, err)
	}
}

func parseGateManifest(t *testing.T) gateManifest {
	t.Helper()
	var m gateManifest
	for _, o := range readManifestObjects(t, "manifest.yaml") {
		m.kinds = append(m.kinds, o.GetKind())
		switch o.GetKind() {
		case "ServiceAccount":
			decodeManifestObject(t, o.Object, &m.serviceAccount)
		case "ClusterRole":
			decodeManifestObject(t, o.Object, &m.role)
		case "ClusterRoleBinding":
			decodeManifestObject(t, o.Object, &m.binding)
		case "Deployment":
			decodeManifestObject(t, o.Object, &m.deployment)
		case "PodDisruptionBudget":
			decodeManifestObject(t, o.Object, &m.pdb)
		case "LeaderWorkerSet":
			if o.GetAPIVersion() != "leaderworkerset.x-k8s.io/v1" {
				t.Errorf("LeaderWorkerSet apiVersion %s, want leaderworkerset.x-k8s.io/v1", o.GetAPIVersion())
			}
			m.lwsName, m.lwsNamespace = o.GetName(), o.GetNamespace()
			spec := o.Object["spec"].(map[string]any)
			replicas, _, _ := unstructured.NestedInt64(spec, "replicas")
			size, _, _ := unstructured.NestedInt64(spec, "leaderWorkerTemplate", "size")
			m.replicas, m.size = int(replicas), int(size)
			for name, into := range map[string]*corev1.PodTemplateSpec{"leaderTemplate": &m.leader, "workerTemplate": &m.worker} {
				tpl, ok, _ := unstructured.NestedMap(spec, "leaderWorkerTemplate", name)
				if !ok {
					t.Fatalf("the LeaderWorkerSet has no spec.leaderWorkerTemplate.%s", name)
				}
				decodeManifestObject(t, tpl, into)
			}
		}
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "LeaderWorkerSet", "PodDisruptionBudget"}
	if diff := cmp.Diff(want, m.kinds); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	return m
}

// lwsPodFrom is the pod LeaderWorkerSet makes for member worker of group g.
func (m gateManifest) lwsPodFrom(g, worker int) *corev1.Pod {
	tpl := m.worker
	name := fmt.Sprintf("%s-%d-%d", m.lwsName, g, worker)
	if worker == 0 {
		tpl, name = m.leader, fmt.Sprintf("%s-%d", m.lwsName, g)
	}
	l := labels.Merge(tpl.Labels, labels.Set{
		topology.LWSNameLabel: m.lwsName, topology.LWSGroupIndexLabel: fmt.Sprint(g),
		topology.LWSWorkerIndexLabel: fmt.Sprint(worker), manifestGroupKeyLabel: fmt.Sprintf("key-%d", g),
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.lwsNamespace, UID: types.UID(name), Labels: l,
			Annotations: map[string]string{topology.LWSSizeAnnotation: fmt.Sprint(m.size)}},
		Spec: *tpl.Spec.DeepCopy(),
	}
}

// TestManifestRBAC: the controller runs as a ServiceAccount bound to
// exactly the rules of readiness/gate/rbac.yaml.
func TestManifestRBAC(t *testing.T) {
	m := parseGateManifest(t)
	var want rbacv1.ClusterRole
	objs := readManifestObjects(t, "../../readiness/gate/rbac.yaml")
	if len(objs) != 1 {
		t.Fatalf("readiness/gate/rbac.yaml holds %d objects, want its ClusterRole", len(objs))
	}
	decodeManifestObject(t, objs[0].Object, &want)
	if diff := cmp.Diff(want.Rules, m.role.Rules); diff != "" || m.role.Name != want.Name {
		t.Errorf("ClusterRole %s differs from readiness/gate/rbac.yaml's %s (-want +got):\n%s", m.role.Name, want.Name, diff)
	}
	b := m.binding
	sa := m.deployment.Spec.Template.Spec.ServiceAccountName
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != m.role.Name {
		t.Errorf("ClusterRoleBinding refers to %s %s, want ClusterRole %s", b.RoleRef.Kind, b.RoleRef.Name, m.role.Name)
	}
	wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: m.serviceAccount.Name, Namespace: m.serviceAccount.Namespace}}
	if diff := cmp.Diff(wantSubject, b.Subjects); diff != "" {
		t.Errorf("ClusterRoleBinding subjects (-want +got):\n%s", diff)
	}
	if sa != m.serviceAccount.Name || m.deployment.Namespace != m.serviceAccount.Namespace {
		t.Errorf("the Deployment %s/%s runs as %q, want the ServiceAccount %s/%s", m.deployment.Namespace, m.deployment.Name, sa, m.serviceAccount.Namespace, m.serviceAccount.Name)
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
	if len(c.Command) == 0 || c.Command[0] != "udrain" {
		t.Fatalf("the Deployment runs %q, want udrain", c.Command)
	}
	args := append(append([]string(nil), c.Command[1:]...), c.Args...)
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

	leader, worker := m.lwsPodFrom(0, 0), m.lwsPodFrom(0, 1)
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
	var stderr syncBuffer
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
	if !gate.DeclaresGate(m.lwsPodFrom(0, 0)) {
		t.Errorf("the leader template does not declare the readiness gate %s", gate.ConditionType)
	}
	if gate.DeclaresGate(m.lwsPodFrom(0, 1)) {
		t.Errorf("the worker template declares the gate %s: workers would never be Ready", gate.ConditionType)
	}
	for name, tpl := range map[string]corev1.PodTemplateSpec{"leader": m.leader, "worker": m.worker} {
		for _, c := range tpl.Spec.Containers {
			if c.ReadinessProbe == nil {
				t.Errorf("%s container %s has no readinessProbe: it would count as Ready as soon as it runs", name, c.Name)
			}
		}
		if len(tpl.Spec.InitContainers) > 0 {
			t.Errorf("%s template has init containers; this flavour needs no sidecar", name)
		}
	}
	lp := m.leader.Spec.Containers[0].LivenessProbe
	if lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/health" {
		t.Errorf("the leader's livenessProbe %+v: want its own /health", lp)
	}
}

// TestManifestContract: leaders spread over the domains, workers follow
// their own leader; placed so, udrain's audit finds nothing, and the PDB
// selects the leaders only and allows a domain's groups to go.
func TestManifestContract(t *testing.T) {
	m := parseGateManifest(t)
	leaders, workerLabels := labels.Set(m.lwsPodFrom(1, 0).Labels), labels.Set(m.lwsPodFrom(1, 1).Labels)
	var spread *corev1.TopologySpreadConstraint
	for i, c := range m.leader.Spec.TopologySpreadConstraints {
		if c.TopologyKey == topology.DefaultDomainLabel {
			spread = &m.leader.Spec.TopologySpreadConstraints[i]
		}
	}
	if spread == nil {
		t.Fatalf("the leaders have no topology spread constraint over %s", topology.DefaultDomainLabel)
	}
	sel, err := metav1.LabelSelectorAsSelector(spread.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if spread.MaxSkew != 1 || spread.WhenUnsatisfiable != corev1.DoNotSchedule || !sel.Matches(leaders) || sel.Matches(workerLabels) {
		t.Errorf("leader spread %+v: want maxSkew 1, DoNotSchedule, selecting the leaders only", spread)
	}
	a := m.worker.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("the workers have no required pod affinity: a group could span domains")
	}
	term := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if sel, err = metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil {
		t.Fatal(err)
	}
	if term.TopologyKey != topology.DefaultDomainLabel || !sel.Matches(leaders) || !cmp.Equal(term.MatchLabelKeys, []string{manifestGroupKeyLabel}) {
		t.Errorf("worker affinity %+v: want the domain of a leader with the same %s", term, manifestGroupKeyLabel)
	}

	var nodes []corev1.Node
	var pods []*corev1.Pod
	for g := range m.replicas {
		node := fmt.Sprintf("gpu-%d", g)
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{topology.DefaultDomainLabel: fmt.Sprintf("ud-%d", g)}}})
		for i := range m.size {
			p := m.lwsPodFrom(g, i)
			p.Spec.NodeName = node
			pods = append(pods, p)
		}
	}
	layout, err := topology.BuildLayout(nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups := topology.FindGroups(pods, topology.DefaultGroupers()...)
	if len(groups) != m.replicas {
		t.Fatalf("%d groups found, want %d", len(groups), m.replicas)
	}
	r := topology.Audit(topology.AuditInput{Layout: layout, Groups: groups, PDBs: []policyv1.PodDisruptionBudget{m.pdb}, Pods: pods})
	if len(r.Findings) > 0 {
		t.Errorf("audit findings: %+v", r.Findings)
	}
	if m.pdb.Namespace != m.lwsNamespace || m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB %s/%s maxUnavailable %v: want 1 (one group per domain), in the workload's namespace %s", m.pdb.Namespace, m.pdb.Name, m.pdb.Spec.MaxUnavailable, m.lwsNamespace)
	}
}
