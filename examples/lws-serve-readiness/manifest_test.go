package lwsservereadiness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/topology"
)

// lwsGroupKeyLabel is the label LeaderWorkerSet gives every pod of a group,
// with a value unique to the group.
const lwsGroupKeyLabel = "leaderworkerset.sigs.k8s.io/group-key"

// lws is the LeaderWorkerSet of the manifest, its pod templates decoded
// strictly (an unknown field fails).
type lws struct {
	name, namespace string
	replicas, size  int
	leader, worker  corev1.PodTemplateSpec
}

// loadManifest returns the manifest's objects, in order.
func loadManifest(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("manifest.yaml")
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
			t.Fatalf("manifest.yaml: %v", err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("manifest.yaml: %v", err)
		}
		out = append(out, u)
	}
}

// decodeStrict converts an object of the manifest into a typed one.
func decodeStrict(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, into, true); err != nil {
		t.Fatalf("manifest.yaml: %T: %v", into, err)
	}
}

func parseManifest(t *testing.T) (lws, policyv1.PodDisruptionBudget) {
	t.Helper()
	objs := loadManifest(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetAPIVersion()+" "+o.GetKind())
	}
	if diff := cmp.Diff([]string{"leaderworkerset.x-k8s.io/v1 LeaderWorkerSet", "policy/v1 PodDisruptionBudget"}, kinds); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	w := lws{name: objs[0].GetName(), namespace: objs[0].GetNamespace()}
	spec := objs[0].Object["spec"].(map[string]any)
	replicas, _, _ := unstructured.NestedInt64(spec, "replicas")
	size, _, _ := unstructured.NestedInt64(spec, "leaderWorkerTemplate", "size")
	w.replicas, w.size = int(replicas), int(size)
	for name, into := range map[string]*corev1.PodTemplateSpec{"leaderTemplate": &w.leader, "workerTemplate": &w.worker} {
		tpl, ok, _ := unstructured.NestedMap(spec, "leaderWorkerTemplate", name)
		if !ok {
			t.Fatalf("the LeaderWorkerSet has no spec.leaderWorkerTemplate.%s", name)
		}
		decodeStrict(t, tpl, into)
	}
	var pdb policyv1.PodDisruptionBudget
	decodeStrict(t, objs[1].Object, &pdb)
	if w.namespace == "" || pdb.Namespace != w.namespace {
		t.Errorf("namespaces: LeaderWorkerSet %q, PodDisruptionBudget %q; want one, set", w.namespace, pdb.Namespace)
	}
	if w.replicas < 2 || w.size < 2 {
		t.Errorf("replicas %d, size %d: a multi-host workload of several groups has both at least 2", w.replicas, w.size)
	}
	return w, pdb
}

// pod is the pod LeaderWorkerSet makes from a template for member worker
// of group g: its labels, annotations and names.
func (w lws) pod(g, worker int) *corev1.Pod {
	tpl := w.worker
	name := fmt.Sprintf("%s-%d-%d", w.name, g, worker)
	if worker == 0 {
		tpl, name = w.leader, fmt.Sprintf("%s-%d", w.name, g)
	}
	l := labels.Merge(tpl.Labels, labels.Set{
		topology.LWSNameLabel: w.name, topology.LWSGroupIndexLabel: fmt.Sprint(g),
		topology.LWSWorkerIndexLabel: fmt.Sprint(worker), lwsGroupKeyLabel: fmt.Sprintf("key-%d", g),
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.namespace, UID: types.UID(name), Labels: l,
			Annotations: map[string]string{topology.LWSSizeAnnotation: fmt.Sprint(w.size)}},
		Spec: *tpl.Spec.DeepCopy(),
	}
}

// sidecar returns the leader's native sidecar that runs udrain.
func sidecar(t *testing.T, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	for _, c := range spec.InitContainers {
		if len(c.Command) > 0 && c.Command[0] == "udrain" {
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Fatalf("init container %s runs udrain without restartPolicy: Always; it must keep serving (a native sidecar)", c.Name)
			}
			return c
		}
	}
	t.Fatal("the leader template has no init container running udrain")
	return corev1.Container{}
}

// parseCommand parses a udrain command line with the CLI's own command
// tree, so that a renamed or removed flag fails here.
func parseCommand(t *testing.T, args []string) *cobra.Command {
	t.Helper()
	root := app.NewCommand(genericiooptions.NewTestIOStreamsDiscard(), app.Config{Name: "udrain"})
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("udrain %q: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("udrain %q: %v", args, err)
	}
	if cmd.Flags().NArg() > 0 {
		t.Fatalf("udrain %q: unexpected arguments %q", args, cmd.Flags().Args())
	}
	return cmd
}

// containerEnv resolves c's environment as the kubelet would in pod p:
// values with $(VAR) references to earlier variables, and downward API
// fields.
func containerEnv(t *testing.T, c corev1.Container, p *corev1.Pod) map[string]string {
	t.Helper()
	env := map[string]string{}
	field := regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']+)'\]$`)
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			v := e.Value
			for k, val := range env {
				v = strings.ReplaceAll(v, "$("+k+")", val)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil:
			path := e.ValueFrom.FieldRef.FieldPath
			switch m := field.FindStringSubmatch(path); {
			case path == "metadata.name":
				env[e.Name] = p.Name
			case path == "metadata.namespace":
				env[e.Name] = p.Namespace
			case m != nil && m[1] == "labels":
				env[e.Name] = p.Labels[m[2]]
			case m != nil:
				env[e.Name] = p.Annotations[m[2]]
			default:
				t.Fatalf("env %s: field %s not handled by this test", e.Name, path)
			}
		default:
			t.Fatalf("env %s: only values and fieldRefs are handled by this test", e.Name)
		}
	}
	return env
}

// TestSidecarServesGroupReadiness: the sidecar's command line is a valid
// "udrain serve-readiness --from-lws-env" whose environment, as the kubelet
// builds it in a leader pod, names the group's members; run in-process with
// that environment, it serves on the port its flags say.
func TestSidecarServesGroupReadiness(t *testing.T) {
	w, _ := parseManifest(t)
	sc := sidecar(t, w.leader.Spec)
	args := append(append([]string(nil), sc.Command[1:]...), sc.Args...)
	cmd := parseCommand(t, args)
	if cmd.Name() != "serve-readiness" {
		t.Fatalf("the sidecar runs udrain %s, want serve-readiness", cmd.Name())
	}
	if fromLWS, _ := cmd.Flags().GetBool("from-lws-env"); !fromLWS {
		t.Errorf("the sidecar does not take its members from the LeaderWorkerSet environment (--from-lws-env)")
	}
	listen, _ := cmd.Flags().GetString("listen")

	leader := w.pod(0, 0)
	env := containerEnv(t, sc, leader)
	want := map[string]string{
		readiness.EnvLeaderAddress: fmt.Sprintf("%s.%s.%s", leader.Name, w.name, w.namespace), // LWS: <leader pod>.<subdomain>.<namespace>
		readiness.EnvGroupSize:     fmt.Sprint(w.size),
		readiness.EnvWorkerIndex:   "0",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("in leader pod %s, the sidecar's %s is %q, want %q", leader.Name, k, env[k], v)
		}
	}

	var listened string
	cfg := app.Config{
		Name:      "udrain",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Listen: func(network, address string) (net.Listener, error) {
			listened = address
			return net.Listen("tcp", "127.0.0.1:0")
		},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: io.Discard, ErrOut: &stderr}, cfg)
	}()
	serving := regexp.MustCompile(`serving the readiness of (\d+) members on (http://\S+)/readyz`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; m = serving.FindStringSubmatch(stderr.String()) {
		select {
		case code := <-done:
			t.Fatalf("udrain %q exited %d before serving:\n%s", args, code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("udrain %q does not say it serves:\n%s", args, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m[1] != fmt.Sprint(w.size) {
		t.Errorf("the sidecar checks %s members, want the group's %d", m[1], w.size)
	}
	if listened != listen {
		t.Errorf("it listened on %q, want --listen %q", listened, listen)
	}
	resp, err := http.Get(m[2] + "/healthz") // /readyz would dial the members
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %s", resp.Status)
	}
	cancel()
	if code := <-done; code != app.ExitOK {
		t.Errorf("exit code %d after SIGTERM-like cancel, want 0:\n%s", code, stderr.String())
	}
}

// TestProbes: the leader's readiness is the sidecar's /readyz on the port
// it listens on, with a timeout above the checker's own deadline; no
// livenessProbe looks at group health.
func TestProbes(t *testing.T) {
	w, _ := parseManifest(t)
	sc := sidecar(t, w.leader.Spec)
	cmd := parseCommand(t, append(append([]string(nil), sc.Command[1:]...), sc.Args...))
	listen, _ := cmd.Flags().GetString("listen")
	checkTimeout, _ := cmd.Flags().GetDuration("check-timeout")
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("--listen %q: %v", listen, err)
	}

	p := sc.ReadinessProbe
	switch {
	case p == nil || p.HTTPGet == nil:
		t.Fatal("the sidecar has no HTTP readinessProbe: the pod's readiness would not include the group's health")
	case p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != port:
		t.Errorf("the sidecar's readinessProbe gets :%s%s, want :%s/readyz (its --listen)", p.HTTPGet.Port.String(), p.HTTPGet.Path, port)
	case time.Duration(p.TimeoutSeconds)*time.Second <= checkTimeout:
		t.Errorf("readinessProbe timeoutSeconds %d is not above the checker's deadline %s (--check-timeout)", p.TimeoutSeconds, checkTimeout)
	}
	for _, c := range append(append([]corev1.Container(nil), w.leader.Spec.InitContainers...), w.leader.Spec.Containers...) {
		lp := c.LivenessProbe
		if lp == nil || lp.HTTPGet == nil {
			continue
		}
		if strings.HasPrefix(lp.HTTPGet.Path, "/readyz") {
			t.Errorf("container %s's livenessProbe gets %s: group health must never restart the leader", c.Name, lp.HTTPGet.Path)
		}
		if c.Name != sc.Name && lp.HTTPGet.Port.String() == port {
			t.Errorf("container %s's livenessProbe looks at the sidecar's port %s, not at its own process", c.Name, port)
		}
	}
	if len(w.leader.Spec.Containers) == 0 || w.leader.Spec.Containers[0].LivenessProbe == nil {
		t.Error("the leader's serving container has no livenessProbe of its own")
	}
}

// TestTopology: leaders spread over the upgrade domains; each worker
// requires the domain of its own group's leader.
func TestTopology(t *testing.T) {
	w, _ := parseManifest(t)
	leaders := labels.Set(w.pod(1, 0).Labels)
	worker := labels.Set(w.pod(1, 1).Labels)

	var spread *corev1.TopologySpreadConstraint
	for i, c := range w.leader.Spec.TopologySpreadConstraints {
		if c.TopologyKey == topology.DefaultDomainLabel {
			spread = &w.leader.Spec.TopologySpreadConstraints[i]
		}
	}
	if spread == nil {
		t.Fatalf("the leaders have no topology spread constraint over %s", topology.DefaultDomainLabel)
	}
	sel, err := metav1.LabelSelectorAsSelector(spread.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if spread.MaxSkew != 1 || spread.WhenUnsatisfiable != corev1.DoNotSchedule || !sel.Matches(leaders) || sel.Matches(worker) {
		t.Errorf("leader spread %+v: want maxSkew 1, DoNotSchedule, selecting the leaders only", spread)
	}

	a := w.worker.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("the workers have no required pod affinity: a group could span domains")
	}
	term := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	sel, err = metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if term.TopologyKey != topology.DefaultDomainLabel || !sel.Matches(leaders) || !cmp.Equal(term.MatchLabelKeys, []string{lwsGroupKeyLabel}) {
		t.Errorf("worker affinity %+v: want the domain (%s) of a leader with the same %s", term, topology.DefaultDomainLabel, lwsGroupKeyLabel)
	}
}

// TestContract places the groups as the constraints demand (one leader per
// domain, workers with their leader) and runs udrain's own contract audit:
// groups found with their leaders, the PDB selecting leaders only, no
// finding; a domain's drain takes one disruption, which the PDB allows.
func TestContract(t *testing.T) {
	w, pdb := parseManifest(t)
	var nodes []corev1.Node
	var pods []*corev1.Pod
	for g := range w.replicas {
		node := fmt.Sprintf("gpu-%d", g)
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{topology.DefaultDomainLabel: fmt.Sprintf("ud-%d", g)}}})
		for i := range w.size {
			p := w.pod(g, i)
			p.Spec.NodeName = node
			pods = append(pods, p)
		}
	}
	layout, err := topology.BuildLayout(nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups := topology.FindGroups(pods, topology.DefaultGroupers()...)
	if len(groups) != w.replicas {
		t.Fatalf("%d groups found, want %d", len(groups), w.replicas)
	}
	for _, g := range groups {
		if g.Leader == nil || g.ExpectedSize() != w.size {
			t.Errorf("group %s: leader %v, size %d; want a leader and size %d", g.ID, g.Leader, g.ExpectedSize(), w.size)
		}
	}
	r := topology.Audit(topology.AuditInput{Layout: layout, Groups: groups, PDBs: []policyv1.PodDisruptionBudget{pdb}, Pods: pods})
	if len(r.Findings) > 0 {
		t.Errorf("audit findings: %+v", r.Findings)
	}
	idx := topology.NewPDBIndex([]policyv1.PodDisruptionBudget{pdb})
	if len(idx.For(w.pod(0, 0))) != 1 || len(idx.For(w.pod(0, 1))) != 0 {
		t.Error("the PDB must select each leader, and no worker")
	}
	groupsPerDomain := (w.replicas + len(nodes) - 1) / len(nodes)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != groupsPerDomain {
		t.Errorf("PDB maxUnavailable %v, want %d: the groups of one domain", pdb.Spec.MaxUnavailable, groupsPerDomain)
	}
}

// syncBuffer is a buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
