package lwsservereadiness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/examples/internal/exampletest"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/topology"
)

func parseManifest(t *testing.T) (exampletest.LWS, policyv1.PodDisruptionBudget) {
	t.Helper()
	objs := exampletest.ReadObjects(t, "manifest.yaml")
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetAPIVersion()+" "+o.GetKind())
	}
	if diff := cmp.Diff([]string{"leaderworkerset.x-k8s.io/v1 LeaderWorkerSet", "policy/v1 PodDisruptionBudget"}, kinds); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	w := exampletest.DecodeLWS(t, objs[0])
	var pdb policyv1.PodDisruptionBudget
	exampletest.Decode(t, objs[1].Object, &pdb)
	if w.Namespace == "" || pdb.Namespace != w.Namespace {
		t.Errorf("namespaces: LeaderWorkerSet %q, PodDisruptionBudget %q; want one, set", w.Namespace, pdb.Namespace)
	}
	if w.Replicas < 2 || w.Size < 2 {
		t.Errorf("replicas %d, size %d: a multi-host workload of several groups has both at least 2", w.Replicas, w.Size)
	}
	return w, pdb
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
	sc := sidecar(t, w.Leader.Spec)
	args := append(append([]string(nil), sc.Command[1:]...), sc.Args...)
	cmd := parseCommand(t, args)
	if cmd.Name() != "serve-readiness" {
		t.Fatalf("the sidecar runs udrain %s, want serve-readiness", cmd.Name())
	}
	if fromLWS, _ := cmd.Flags().GetBool("from-lws-env"); !fromLWS {
		t.Errorf("the sidecar does not take its members from the LeaderWorkerSet environment (--from-lws-env)")
	}
	listen, _ := cmd.Flags().GetString("listen")

	leader := w.Pod(0, 0)
	env := containerEnv(t, sc, leader)
	want := map[string]string{
		readiness.EnvLeaderAddress: fmt.Sprintf("%s.%s.%s", leader.Name, w.Name, w.Namespace), // LWS: <leader pod>.<subdomain>.<namespace>
		readiness.EnvGroupSize:     fmt.Sprint(w.Size),
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
	var stderr testkit.SyncBuffer
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
	if m[1] != fmt.Sprint(w.Size) {
		t.Errorf("the sidecar checks %s members, want the group's %d", m[1], w.Size)
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
	sc := sidecar(t, w.Leader.Spec)
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
	for _, c := range append(append([]corev1.Container(nil), w.Leader.Spec.InitContainers...), w.Leader.Spec.Containers...) {
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
	if len(w.Leader.Spec.Containers) == 0 || w.Leader.Spec.Containers[0].LivenessProbe == nil {
		t.Error("the leader's serving container has no livenessProbe of its own")
	}
}

// TestSidecarMemoryLimit: the sidecar's memory limit holds the most that
// "udrain serve-readiness" with its flags, checking the group's members, can
// hold whatever its clients do (app.ServeReadinessMemory, which
// cmd/udrain's black-box test holds the process to under 3,000 hostile
// connections); its request is not above its limit.
func TestSidecarMemoryLimit(t *testing.T) {
	w, _ := parseManifest(t)
	sc := sidecar(t, w.Leader.Spec)
	cmd := parseCommand(t, append(append([]string(nil), sc.Command[1:]...), sc.Args...))
	var opts readiness.ServeOptions
	opts.MaxConnections, _ = cmd.Flags().GetInt("max-connections")
	opts.MaxHeaderBytes, _ = cmd.Flags().GetInt("max-header-bytes")
	limit, request := sc.Resources.Limits.Memory(), sc.Resources.Requests.Memory()
	if limit.IsZero() {
		t.Fatal("the sidecar has no memory limit")
	}
	if err := memoryLimitHolds(limit.Value(), opts, w.Size); err != nil {
		t.Error(err)
	}
	if request.Cmp(*limit) > 0 {
		t.Errorf("memory request %s is above the limit %s", request, limit)
	}
	// The check is not vacuous: the same limit cannot hold a sidecar that
	// keeps 2,000 connections open.
	if err := memoryLimitHolds(limit.Value(), readiness.ServeOptions{MaxConnections: 2000}, w.Size); err == nil {
		t.Errorf("a limit of %s holds 2,000 connections too: the bound checks nothing", limit)
	}
}

// memoryLimitHolds returns an error if limit is below what serve-readiness
// with opts and members can hold.
func memoryLimitHolds(limit int64, opts readiness.ServeOptions, members int) error {
	if need := app.ServeReadinessMemory(opts, members); limit < need {
		return fmt.Errorf("memory limit %d MiB is below the %d MiB that serve-readiness can hold with --max-connections %d, --max-header-bytes %d and %d members", limit>>20, need>>20, opts.MaxConnections, opts.MaxHeaderBytes, members)
	}
	return nil
}

// TestTopology: leaders spread over the upgrade domains; each worker
// requires the domain of its own group's leader.
func TestTopology(t *testing.T) {
	w, _ := parseManifest(t)
	exampletest.CheckTopology(t, w)
}

// TestContract places the groups as the constraints demand (one leader per
// domain, workers with their leader) and runs udrain's own contract audit:
// groups found with their leaders, the PDB selecting leaders only, no
// finding; a domain's drain takes one disruption, which the PDB allows.
func TestContract(t *testing.T) {
	w, pdb := parseManifest(t)
	nodes, pods := w.PlaceOneGroupPerDomain()
	groups := exampletest.Audit(t, nodes, pods, pdb, w.Replicas)
	for _, g := range groups {
		if g.Leader == nil || g.ExpectedSize() != w.Size {
			t.Errorf("group %s: leader %v, size %d; want a leader and size %d", g.ID, g.Leader, g.ExpectedSize(), w.Size)
		}
	}
	idx := topology.NewPDBIndex([]policyv1.PodDisruptionBudget{pdb})
	if len(idx.For(w.Pod(0, 0))) != 1 || len(idx.For(w.Pod(0, 1))) != 0 {
		t.Error("the PDB must select each leader, and no worker")
	}
	groupsPerDomain := (w.Replicas + len(nodes) - 1) / len(nodes)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != groupsPerDomain {
		t.Errorf("PDB maxUnavailable %v, want %d: the groups of one domain", pdb.Spec.MaxUnavailable, groupsPerDomain)
	}
}
