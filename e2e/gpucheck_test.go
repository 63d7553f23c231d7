package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

// TestRolloutStopsOnLostGPUs is the drill "a GPU node comes back from its
// upgrade without its GPUs", through `udrain rollout` as users run it (in
// process, app.Run). The first domain's upgrade step breaks one of its
// nodes as a bad driver rollout would: it taints the node
// (gpu-driver=broken:NoSchedule, which the device plugin DaemonSet does not
// tolerate), reboots the device plugin's pod away (deletes it; the
// DaemonSet controller does not bring it back), and the node stops
// advertising nvidia.com/gpu (allocatable 0). The rollout must stop at its
// GPU check with exit code 1 and an error that names the node, the GPUs
// lost and the device plugin's diagnosis (the untolerated taint and the
// toleration that fixes it); the domain stays cordoned and the other
// domains untouched (no node cordoned, no pod evicted). Once the node is
// fixed, the same command line resumes: it skips the upgraded domain, lets
// it recover, upgrades the others and completes; each group is disrupted
// exactly once over both runs.
func TestRolloutStopsOnLostGPUs(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	c := s.tt.Client
	plugin := createDevicePlugin(t, s)
	kubectl := testbedKubectl(t)
	dir := t.TempDir()
	broken := s.nodes.Name(0, 0)
	const taint = "gpu-driver=broken:NoSchedule"
	// The upgrade step breaks the first node of the first domain it
	// upgrades, once.
	upgrade := fmt.Sprintf(`if [ ! -e %[1]s/broke ]; then touch %[1]s/broke; n=${UDRAIN_NODES%%%%,*}
kubectl taint node "$n" %[2]s
kubectl -n %[3]s delete pod -l app=nvidia-device-plugin --field-selector spec.nodeName="$n" --wait=false
kubectl patch node "$n" --subresource=status --type=merge -p '{"status":{"allocatable":{"nvidia.com/gpu":"0"}}}'; fi`,
		dir, taint, s.tt.Name)
	args := []string{"rollout", "--domains", strings.Join(s.domains(), ","), "--upgrade-command", upgrade,
		"--ignore-daemonsets", "--gpu-check-grace", "10s", "--recovery-timeout", "3m", "-o", "json"}
	environ := func() []string {
		return append(os.Environ(), "KUBECONFIG="+s.tt.Testbed().Kubeconfig(), "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
	}

	start := time.Now()
	code, rep, stderr := runRollout(ctx, args, c, environ)
	firstRun := time.Since(start)
	s.tt.OnFailure("udrain-run1.log", func(w io.Writer) error { _, err := io.WriteString(w, stderr); return err })
	if code != app.ExitError || rep.Error == nil || rep.Result == nil {
		t.Fatalf("first run: exit code %d, error %+v; want exit code %d with a report\n%s", code, rep.Error, app.ExitError, stderr)
	}
	msg := rep.Error.Message
	t.Logf("first run stopped after %s with exit code %d: %s", firstRun.Round(time.Millisecond), code, msg)
	for _, want := range []string{
		string(eviction.StageGPUCheck), broken, "advertises 0 nvidia.com/gpu, had 8",
		"device plugin " + s.tt.Name + "/" + plugin.Name + " cannot run there", "gpu-driver", "tolerations",
		"fix the driver or the device plugin, then run the rollout again",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	var statuses []eviction.DomainState
	for _, d := range rep.Result.Domains {
		statuses = append(statuses, d.State)
	}
	if want := []eviction.DomainState{eviction.StateFailed, eviction.StatePending, eviction.StatePending}; !slices.Equal(statuses, want) {
		t.Errorf("first run's domains: %v, want %v", statuses, want)
	}
	// The domain stays cordoned; the others are untouched.
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		first := n.Labels[fixture.UpgradeDomainLabel] == s.nodes.UD(0)
		if cordoned := n.Spec.Unschedulable; cordoned != first {
			t.Errorf("node %s: cordoned %t after the GPU check stopped the rollout, want %t", n.Name, cordoned, first)
		}
	}
	o := s.observe(t, start)
	for _, e := range o.Evicted {
		if e.Domain != s.nodes.UD(0) {
			t.Errorf("pod %s of domain %s evicted in the first run; only %s may be", e.Name, e.Domain, s.nodes.UD(0))
		}
	}

	// The fix: the driver works again (the node advertises its GPUs) and
	// the taint is gone, so the device plugin runs there again.
	fixedAt := time.Now()
	run(t, kubectl, "taint", "node", broken, "gpu-driver-")
	patch := []byte(`{"status":{"allocatable":{"nvidia.com/gpu":"8"}}}`)
	if _, err := c.CoreV1().Nodes().Patch(ctx, broken, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	code, rep, stderr = runRollout(ctx, args, c, environ)
	s.tt.OnFailure("udrain-run2.log", func(w io.Writer) error { _, err := io.WriteString(w, stderr); return err })
	if code != app.ExitOK || rep.Result == nil || !rep.Result.Completed {
		t.Fatalf("second run, after the fix: exit code %d, error %+v\n%s", code, rep.Error, stderr)
	}
	statuses = statuses[:0]
	for _, d := range rep.Result.Domains {
		statuses = append(statuses, d.State)
	}
	if want := []eviction.DomainState{eviction.StateSkipped, eviction.StateDone, eviction.StateDone}; !slices.Equal(statuses, want) {
		t.Errorf("second run's domains: %v, want %v", statuses, want)
	}
	t.Logf("after the fix, the same command resumed and completed in %s (domains %v)", time.Since(fixedAt).Round(time.Millisecond), statuses)
	checkWholeRollout(t, s, start, "both runs")
	checkUpgradedAndUncordoned(t, s, rep.Result.ID)
}

// runRollout runs a udrain command line in process as users would run the
// binary, on client, with environ as the upgrade command's environment;
// it returns the exit code, the decoded JSON report and stderr.
func runRollout(ctx context.Context, args []string, client kubernetes.Interface, environ func() []string) (int, report.RolloutReport, string) {
	code, stdout, stderr := runCLI(ctx, args, client, environ)
	var r report.RolloutReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		return code, r, fmt.Sprintf("%s\n(stdout is no rollout report: %v)\n%s", stderr, err, stdout)
	}
	return code, r, stderr
}

// runCLI runs a udrain command line in process on client, with environ
// (nil: the process's) as an upgrade command's environment, and returns
// its exit code, stdout and stderr.
func runCLI(ctx context.Context, args []string, client kubernetes.Interface, environ func() []string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	cfg := app.Config{Name: "udrain", Environ: environ,
		NewClient: func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }}
	code := app.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr}, cfg)
	return code, stdout.String(), stderr.String()
}

// createDevicePlugin runs NVIDIA's device plugin DaemonSet on the pool's
// GPU nodes, tolerating only nvidia.com/gpu taints as its chart does, and
// waits until a pod of it is scheduled on every node.
func createDevicePlugin(t *testing.T, s *scenario) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"app": "nvidia-device-plugin"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-device-plugin", Namespace: s.tt.Name},
		Spec: appsv1.DaemonSetSpec{
			Selector: metav1.SetAsLabelSelector(labels),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{fixture.GPUPresentLabel: "true", fixture.PoolLabel: s.tt.Name},
					Tolerations: []corev1.Toleration{{
						Key: string(fixture.GPUResource), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}},
					Containers:                   []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
					AutomountServiceAccountToken: new(false),
				},
			},
		},
	}
	created, err := s.tt.Client.AppsV1().DaemonSets(s.tt.Name).Create(t.Context(), ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WaitForPods(t.Context(), s.tt.Client, s.tt.Name, k8slabels.SelectorFromSet(labels), fixture.PodsScheduled(s.nodes.UDs*s.nodes.PerUD)); err != nil {
		t.Fatal(err)
	}
	return created
}
