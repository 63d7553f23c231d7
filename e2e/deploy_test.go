package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/readiness/gate"
)

// The kustomize bases users apply, and what they create.
const (
	namespaceBase = "../deploy/namespace"
	gateBase      = "../deploy/readiness-gate"
	rolloutBase   = "../deploy/rollout"
	udrainNS      = "udrain-system"
	// gateLeaseNS holds the readiness gate's Lease alone.
	gateLeaseNS    = "udrain-readiness-gate"
	gateAccount    = "udrain-readiness-gate"
	drainerAccount = "udrain"
	rolloutConfig  = "udrain-rollout"
)

// bundle is what a base renders to, decoded strictly.
type bundle struct {
	deployment *appsv1.Deployment
	pdb        *policyv1.PodDisruptionBudget
	job        *batchv1.Job
	configMap  *corev1.ConfigMap
	kinds      []string
}

// TestDeployBundles renders deploy/readiness-gate and deploy/rollout with
// kubectl kustomize, applies them after deploy/namespace with kubectl
// apply -k, and checks what the API server accepted: every object; the
// Deployment's and the Job's pods under Pod Security "restricted",
// enforced on their namespace. Then
// it runs the pods' command lines in process as their ServiceAccounts (a
// client holding only the account's token): two replicas of the
// readiness-gate controller elect a leader and make a workload's groups
// healthy; the rollout Job's command line, with the ID and upgrade command
// of its ConfigMap, upgrades every domain, and when interrupted mid-way,
// resumes on the retry without upgrading a domain twice. At the end, kubectl
// delete -k of the two bases leaves the namespace, which is deploy/namespace's
// alone, in place.
func TestDeployBundles(t *testing.T) {
	tt := bed.ForTest(t)
	ctx := t.Context()
	kubectl := testbedKubectl(t)
	gateB := render(t, kubectl, gateBase)
	rolloutB := render(t, kubectl, rolloutBase)
	checkRendered(t, gateB, rolloutB)

	// The testbed made udrain-system (rollouts keep their Lease there):
	// applying deploy/namespace labels it for Pod Security, as a user
	// applies it once before the other bases.
	for _, base := range []string{namespaceBase, gateBase, rolloutBase} {
		run(t, kubectl, "apply", "-k", base)
	}
	t.Cleanup(func() {
		for _, base := range []string{rolloutBase, gateBase} {
			cmd := exec.Command(kubectl, "--kubeconfig", bed.Kubeconfig(), "delete", "-k", base, "--ignore-not-found", "--wait=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Logf("kubectl delete -k %s: %v\n%s", base, err, out)
			}
		}
		// Deleting the bases leaves the namespace, and the Leases of the
		// next tests' rollouts, in place: no base but deploy/namespace
		// holds it (--wait=false: a namespace in a base would be
		// terminating by now).
		ns, err := tt.Client.CoreV1().Namespaces().Get(context.WithoutCancel(t.Context()), udrainNS, metav1.GetOptions{})
		if err != nil || ns.DeletionTimestamp != nil {
			t.Errorf("after kubectl delete -k %s and %s, namespace %s: %v, deleting %v; want it left in place", rolloutBase, gateBase, udrainNS, err, err == nil && ns.DeletionTimestamp != nil)
		}
	})

	t.Run("restricted", func(t *testing.T) {
		ns, err := tt.Client.CoreV1().Namespaces().Get(ctx, udrainNS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Fatalf("namespace %s enforces %q, want restricted", udrainNS, ns.Labels["pod-security.kubernetes.io/enforce"])
		}
		// The admission enforces it: a pod that is not restricted is refused.
		bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-restricted", Namespace: udrainNS},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fixture.DefaultImage}}}}
		_, err = tt.Client.CoreV1().Pods(udrainNS).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
			t.Fatalf("a pod without a security context in %s: %v, want refused by PodSecurity", udrainNS, err)
		}
		// The controllers' pods are admitted: the ReplicaSet made both
		// replicas, the Job its pod.
		for _, w := range []struct {
			what     string
			selector map[string]string
			want     int
		}{
			{"the Deployment's replicas", gateB.deployment.Spec.Selector.MatchLabels, int(*gateB.deployment.Spec.Replicas)},
			{"the Job's pod", rolloutB.job.Spec.Template.Labels, 1},
		} {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := fixture.WaitForPods(wctx, tt.Client, udrainNS, k8slabels.SelectorFromSet(w.selector), fixture.PodsCreated(w.want))
			cancel()
			if err != nil {
				events, _ := tt.Client.CoreV1().Events(udrainNS).List(ctx, metav1.ListOptions{})
				t.Errorf("%s (%d) were not created in %s: %v; events: %s", w.what, w.want, udrainNS, err, eventsString(events))
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// A workload whose leaders wait for the readiness gate, on the test's
	// own nodes.
	gpu := fixture.H100()
	s := &scenario{tt: tt, nodes: fixture.Nodes{Pool: tt.Name, UDs: 2, PerUD: 1, GPU: &gpu}}
	if _, err := s.nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	s.lws = fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: 2, Size: 2, Pool: tt.Name, GPUsPerPod: 4,
		ReadyDelay: time.Second, TerminateDelay: 500 * time.Millisecond, GracePeriodSeconds: 5}
	if err := s.lws.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}

	// The controller's replicas run until the test ends: the rollout needs
	// them to tell when the groups are whole again.
	c := gateB.deployment.Spec.Template.Spec.Containers[0]
	gateClient := tokenClient(t, tt, udrainNS, gateAccount)
	for i := range int(*gateB.deployment.Spec.Replicas) {
		pod := fmt.Sprintf("udrain-readiness-gate-%d", i)
		args := expandArgs(t, c, map[string]string{"metadata.namespace": udrainNS, "metadata.name": pod}, nil)
		runInProcess(t, tt, pod, args, gateClient)
	}
	t.Run("readiness-gate", func(t *testing.T) {
		s.waitHealthy(t, 3*time.Minute)
		lease, err := tt.Client.CoordinationV1().Leases(gateLeaseNS).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || !strings.HasPrefix(*lease.Spec.HolderIdentity, "udrain-readiness-gate-") {
			t.Errorf("Lease %s/%s: %v, want held by a replica", gateLeaseNS, gate.DefaultLeaseName, err)
		}
		// Issue 24: the drainer's account (deploy/rbac) may write every
		// Lease of udrain-system, for the rollouts' locks, and none of the
		// gate's: it could otherwise take the gate's leadership over.
		for _, c := range []struct {
			ns   string
			want bool
		}{{udrainNS, true}, {gateLeaseNS, false}} {
			for _, verb := range []string{"get", "update"} {
				review, err := tt.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User:               "system:serviceaccount:" + udrainNS + ":" + drainerAccount,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: gate.DefaultLeaseName},
				}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if review.Status.Allowed != c.want {
					t.Errorf("the drainer's account may %s Lease %s/%s: %v, want %v", verb, c.ns, gate.DefaultLeaseName, review.Status.Allowed, c.want)
				}
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("rollout", func(t *testing.T) {
		dir := t.TempDir()
		log, mark := filepath.Join(dir, "upgraded"), filepath.Join(dir, "interrupted")
		// The second domain's first upgrade hangs, so that the first try
		// is interrupted there, as a Job's pod evicted or killed would be.
		command := fmt.Sprintf(`echo "$UDRAIN_DOMAIN" >>%s; if [ "$UDRAIN_DOMAIN" = %s ] && [ ! -e %s ]; then touch %s; exec sleep 600; fi`,
			log, s.nodes.UD(1), mark, mark)
		cm, err := tt.Client.CoreV1().ConfigMaps(udrainNS).Get(ctx, rolloutConfig, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["upgrade-command"] = command
		if cm, err = tt.Client.CoreV1().ConfigMaps(udrainNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		args := expandArgs(t, rolloutB.job.Spec.Template.Spec.Containers[0], map[string]string{"metadata.namespace": udrainNS}, cm)
		client := tokenClient(t, tt, udrainNS, drainerAccount)

		// Each try is bounded, so that a rollout that hangs shows its output.
		first, cancel := context.WithTimeout(ctx, 3*time.Minute)
		go func() {
			_ = wait.PollUntilContextCancel(first, 100*time.Millisecond, true, func(context.Context) (bool, error) {
				_, err := os.Stat(mark)
				return err == nil, nil
			})
			cancel()
		}()
		if code, stderr := runCommand(first, args, client); code != app.ExitInterrupted {
			t.Fatalf("first try: exit code %d, want %d (interrupted during %s's upgrade):\n%s", code, app.ExitInterrupted, s.nodes.UD(1), stderr)
		}
		cancel()
		second, cancel2 := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel2()
		if code, stderr := runCommand(second, args, client); code != app.ExitOK {
			t.Fatalf("the retry: exit code %d, want 0:\n%s", code, stderr)
		} else {
			t.Logf("the retry:\n%s", stderr)
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{s.nodes.UD(0), s.nodes.UD(1), s.nodes.UD(1)}
		if got := strings.Fields(string(data)); !slices.Equal(got, want) {
			t.Errorf("upgrade commands ran for %q, want %q: the first domain once (the retry resumes after it), the second twice", got, want)
		}
		checkUpgradedAndUncordoned(t, s, cm.Data["rollout-id"])
		s.waitHealthy(t, time.Minute)
	})
}

// testbedKubectl returns the kubectl built with the testbed's binaries.
func testbedKubectl(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("../hack/testbed-binaries.sh").Output()
	if err != nil {
		t.Fatalf("hack/testbed-binaries.sh: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "kubectl")
}

// run runs kubectl on the testbed and returns its output.
func run(t *testing.T, kubectl string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", bed.Kubeconfig()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// render runs kubectl kustomize on a base and decodes what it prints.
func render(t *testing.T, kubectl, base string) bundle {
	t.Helper()
	var b bundle
	for _, doc := range strings.Split(run(t, kubectl, "kustomize", base), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		b.kinds = append(b.kinds, meta.Kind)
		var into any
		switch meta.Kind {
		case "Deployment":
			b.deployment = &appsv1.Deployment{}
			into = b.deployment
		case "PodDisruptionBudget":
			b.pdb = &policyv1.PodDisruptionBudget{}
			into = b.pdb
		case "Job":
			b.job = &batchv1.Job{}
			into = b.job
		case "ConfigMap":
			b.configMap = &corev1.ConfigMap{}
			into = b.configMap
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("%s: %s: %v", base, meta.Kind, err)
		}
	}
	slices.Sort(b.kinds)
	return b
}

// checkRendered: each base holds what it needs beside deploy/namespace (and
// not udrain-system, which kubectl delete -k of the base would delete), and
// its pods ask for what the image and the namespace require.
func checkRendered(t *testing.T, gateB, rolloutB bundle) {
	t.Helper()
	for _, c := range []struct {
		base string
		b    bundle
		want []string
	}{
		// The Namespace is the gate's Lease's alone (udrain-readiness-gate).
		{gateBase, gateB, []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "Namespace", "PodDisruptionBudget", "PriorityClass", "Role", "RoleBinding", "ServiceAccount"}},
		{rolloutBase, rolloutB, []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Job", "Role", "RoleBinding", "ServiceAccount"}},
	} {
		if !slices.Equal(c.b.kinds, c.want) {
			t.Errorf("%s renders %v, want %v", c.base, c.b.kinds, c.want)
		}
	}
	if gateB.deployment == nil || rolloutB.job == nil {
		t.FailNow()
	}
	d := gateB.deployment
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("the controller runs %v replicas, want 2", d.Spec.Replicas)
	}
	if gateB.pdb == nil || !k8slabels.SelectorFromSet(gateB.pdb.Spec.Selector.MatchLabels).Matches(k8slabels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget does not select the controller's pods")
	}
	for name, spec := range map[string]corev1.PodSpec{"the Deployment": d.Spec.Template.Spec, "the Job": rolloutB.job.Spec.Template.Spec} {
		c := spec.Containers[0]
		if !strings.HasPrefix(c.Image, "ghcr.io/udrain/udrain:v") || len(c.Command) != 0 {
			t.Errorf("%s runs %s %q, want a release of udrain's image and its entrypoint", name, c.Image, c.Command)
		}
		r := c.Resources
		if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
			t.Errorf("%s's container asks for %v, limited to %v: want CPU and memory requests and a memory limit", name, r.Requests, r.Limits)
		}
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s's container may write its root file system", name)
		}
	}
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs is the container's command line as the kubelet runs it:
// $(VAR) replaced by the container's variables, taken from the pod's
// fields (fieldRef paths in fields) or the ConfigMap cm.
func expandArgs(t *testing.T, c corev1.Container, fields map[string]string, cm *corev1.ConfigMap) []string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := fields[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				t.Fatalf("%s: no value for field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil && cm != nil && e.ValueFrom.ConfigMapKeyRef.Name == cm.Name:
			v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]
			if !ok {
				t.Fatalf("%s: ConfigMap %s has no key %s", e.Name, cm.Name, e.ValueFrom.ConfigMapKeyRef.Key)
			}
			env[e.Name] = v
		default:
			t.Fatalf("%s: cannot resolve %+v", e.Name, e.ValueFrom)
		}
	}
	args := append(slices.Clone(c.Command), c.Args...)
	for i, a := range args {
		args[i] = envRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
	}
	return args
}

// runCommand runs a udrain command line in process on client and returns
// its exit code and stderr.
func runCommand(ctx context.Context, args []string, client kubernetes.Interface) (int, string) {
	var stderr bytes.Buffer
	cfg := app.Config{Name: "udrain", NewClient: func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }}
	code := app.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stderr, ErrOut: &stderr}, cfg)
	return code, stderr.String()
}

// runInProcess runs a long-running udrain command line (a controller) in
// process until the test ends; it must then exit 0.
func runInProcess(t *testing.T, tt *testbed.Test, name string, args []string, client kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	// A file takes the writes of the command's goroutines as they come.
	out, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	logged := func() string {
		data, _ := os.ReadFile(out.Name())
		return string(data)
	}
	done := make(chan int, 1)
	go func() {
		cfg := app.Config{Name: "udrain", NewClient: func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil },
			// Replicas in one process cannot share the pod's port
			// (--health-address :8081): each gets one of its own.
			Listen: func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }}
		done <- app.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: out}, cfg)
	}()
	tt.OnFailure(name+".log", func(w io.Writer) error { _, err := io.WriteString(w, logged()); return err })
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != app.ExitOK {
			t.Errorf("udrain %s (%s): exit code %d after SIGTERM, want 0:\n%s", strings.Join(args, " "), name, code, logged())
		}
		out.Close()
	})
}

func eventsString(l *corev1.EventList) string {
	if l == nil {
		return "none"
	}
	var b strings.Builder
	for _, e := range l.Items {
		fmt.Fprintf(&b, "\n  %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
	return b.String()
}
