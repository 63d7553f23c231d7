package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/upgrade"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// changes lists the actions on the fake cluster that change something.
func changes(c *cluster) []string {
	var out []string
	for _, a := range c.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	return out
}

// TestRolloutUpgradeFlagsRefused: a step that cannot work is a usage error
// (exit code 2) with a message naming the flag, before anything changes.
func TestRolloutUpgradeFlagsRefused(t *testing.T) {
	pod := writeFile(t, "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n")
	noSh := func(string) (string, error) { return "", &execError{errors.New(`executable file not found in $PATH`)} }
	for name, tc := range map[string]struct {
		args     []string
		lookPath func(string) (string, error)
		want     string
		notShown string
	}{
		"no sh for the command": {args: []string{"--upgrade-command", "./upgrade.sh"}, lookPath: noSh,
			want: "invalid --upgrade-command: runs through sh, and no sh was found in PATH (executable file not found in $PATH); nothing was run: use an image with sh, or an upgrade step that needs no shell (see --upgrade-job-template, --upgrade-node-label, --upgrade-webhook)"},
		"two steps": {args: []string{"--upgrade-command", "true", "--upgrade-webhook", "https://h/"},
			want: "invalid --upgrade-command: set together with another upgrade step: a rollout runs one, pick it (see --upgrade-webhook)"},
		"done without request": {args: []string{"--upgrade-done-label", "d=1"},
			want: "go with --upgrade-node-label"},
		"request without done": {args: []string{"--upgrade-node-label", "k=1"},
			want: "--upgrade-node-label needs exactly one of --upgrade-done-label, --upgrade-done-annotation and --upgrade-done-condition (0 given)"},
		"two done signals": {args: []string{"--upgrade-node-label", "k=1", "--upgrade-done-label", "d=1", "--upgrade-done-condition", "Upgraded"},
			want: "(2 given)"},
		"request not KEY=VALUE": {args: []string{"--upgrade-node-label", "k", "--upgrade-done-label", "d=1"},
			want: `invalid --upgrade-node-label: "k": write KEY=VALUE`},
		"done annotation not KEY=VALUE": {args: []string{"--upgrade-node-label", "k=1", "--upgrade-done-annotation", "d"},
			want: `invalid --upgrade-done-annotation: annotation "d": write KEY=VALUE`},
		"bad label key": {args: []string{"--upgrade-node-label", "a b=1", "--upgrade-done-label", "d=1"},
			want: `--upgrade-node-label: "a b" is not a label key`},
		"done is the request": {args: []string{"--upgrade-node-label", "k=1", "--upgrade-done-label", "k=1"},
			want: "the done label is the requested label k itself"},
		"header without webhook": {args: []string{"--upgrade-webhook-header", "Authorization: Bearer x"},
			want: "--upgrade-webhook-header goes with --upgrade-webhook"},
		"header without colon": {args: []string{"--upgrade-webhook", "https://h/", "--upgrade-webhook-header", "Bearer s3cr3tvalue"},
			want: `--upgrade-webhook-header: write "Name: value"`, notShown: "s3cr3tvalue"},
		"webhook password not shown": {args: []string{"--upgrade-webhook", "ftp://admin:hunter22@h/"},
			want: "--upgrade-webhook: ftp://xxxxx@h/: use an http:// or https:// URL", notShown: "hunter22"},
		"timeout with the command": {args: []string{"--upgrade-command", "true", "--upgrade-timeout", "1m"},
			want: "--upgrade-timeout applies to"},
		"no template file": {args: []string{"--upgrade-job-template", "/nonexistent/job.yaml"},
			want: "--upgrade-job-template: open /nonexistent/job.yaml"},
		"template not a Job": {args: []string{"--upgrade-job-template", pod},
			want: `invalid --upgrade-job-template: apiVersion "v1", kind "Pod": want a batch/v1 Job`},
		"template bound to a node": {args: []string{"--upgrade-job-template", writeFile(t, "bound.yaml", strings.Replace(kube.JobTemplateYAML, "      containers:", "      nodeName: n1\n      containers:", 1))},
			want: "--upgrade-job-template: the template's pod is bound to node n1"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t)
			cfg, _ := testConfig(c.client)
			cfg.LookPath = tc.lookPath
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			r := run(t, ctx, cfg, append([]string{"rollout", "--ignore-daemonsets"}, tc.args...)...)
			if r.code != ExitUsage {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, ExitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr does not have %q:\n%s", tc.want, r.stderr)
			}
			if tc.notShown != "" && strings.Contains(r.stderr+r.stdout, tc.notShown) {
				t.Errorf("the output shows %q:\n%s%s", tc.notShown, r.stdout, r.stderr)
			}
			if got := changes(c); len(got) > 0 {
				t.Errorf("changed the cluster before refusing: %v", got)
			}
		})
	}
}

// execError stands for the *exec.Error of exec.LookPath.
type execError struct{ err error }

func (e *execError) Error() string { return "exec: \"sh\": " + e.err.Error() }
func (e *execError) Unwrap() error { return e.err }

// TestRolloutJobStep: a rollout with --upgrade-job-template creates one
// Job per node of each domain, bound to the node, in the lock namespace
// (the template has none), waits for them and cleans them up; a pod of
// the step on a node of the domain is not evicted.
func TestRolloutJobStep(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	// A pod of the step left running on gpu-3 by a stopped run.
	stepPod := lwsPod("leftover", 0, 0, "gpu-3")
	stepPod.Name, stepPod.Labels = "kubelet-upgrade-x", map[string]string{udrain.UpgradeStepLabel: "abc"}
	stepPod.OwnerReferences = controller("Job", "kubelet-upgrade-x")
	if err := c.client.Tracker().Add(stepPod); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var jobs []string
	c.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		mu.Lock()
		jobs = append(jobs, j.Namespace+" "+j.Spec.Template.Spec.NodeName+" "+j.Annotations[udrain.DomainAnnotation])
		mu.Unlock()
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		return true, j, c.client.Tracker().Create(batchv1.SchemeGroupVersion.WithResource("jobs"), j, j.Namespace)
	})
	tmpl := writeFile(t, "job.yaml", kube.JobTemplateYAML)
	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-job-template", tmpl, "--upgrade-timeout", "1m", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	slices.Sort(jobs)
	want := []string{"udrain-system cpu-1 ud-1", "udrain-system gpu-1 ud-1", "udrain-system gpu-2 ud-1", "udrain-system gpu-3 ud-2", "udrain-system gpu-4 ud-2"}
	if diff := cmp.Diff(want, jobs); diff != "" {
		t.Errorf("Jobs created (namespace node domain; -want +got):\n%s", diff)
	}
	left, err := c.client.BatchV1().Jobs("udrain-system").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d Jobs left after the rollout, want 0", len(left.Items))
	}
	for _, e := range c.evicted() {
		if strings.Contains(e, "kubelet-upgrade-x") {
			t.Errorf("the step's own pod was evicted: %v", c.evicted())
		}
	}
	var res report.RolloutReport
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.UpgradeStep != "job template "+tmpl || res.UpgradeCommand != "" || !res.Result.Completed {
		t.Errorf("report: step %q command %q completed %t", res.UpgradeStep, res.UpgradeCommand, res.Result.Completed)
	}
	if res.Result.ID != eviction.RolloutIDOf("topology.udrain.dev/upgrade-domain", "--upgrade-job-template\x00"+kube.JobTemplateYAML) {
		t.Errorf("rollout ID %s is not the default one of the template", res.Result.ID)
	}
}

// TestRolloutJobStepFails: a failed Job stops the rollout with exit code
// 1, naming the Job and its reason, the domain left cordoned.
func TestRolloutJobStepFails(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	c.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		st := batchv1.JobComplete
		if j.Spec.Template.Spec.NodeName == "gpu-2" {
			st = batchv1.JobFailed
		}
		j.Status.Conditions = []batchv1.JobCondition{{Type: st, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
		return true, j, c.client.Tracker().Create(batchv1.SchemeGroupVersion.WithResource("jobs"), j, j.Namespace)
	})
	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-job-template", writeFile(t, "job.yaml", kube.JobTemplateYAML))
	if r.code != ExitError {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, ExitError, r.stderr)
	}
	name := upgrade.JobName("kubelet-upgrade", eviction.RolloutIDOf("topology.udrain.dev/upgrade-domain", "--upgrade-job-template\x00"+kube.JobTemplateYAML), "ud-1", "gpu-2")
	if want := "upgrade Job udrain-system/" + name + " for node gpu-2 of domain ud-1 failed: BackoffLimitExceeded"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not have %q:\n%s", want, r.stderr)
	}
	if n := c.node(t, "gpu-2"); !n.Spec.Unschedulable {
		t.Error("gpu-2 was uncordoned although its upgrade failed")
	}
}

// TestRolloutNodeLabelStep: the nodes get the requested label; nodes that
// report done already pass at once.
func TestRolloutNodeLabelStep(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	for _, n := range []string{"cpu-1", "gpu-1", "gpu-2", "gpu-3", "gpu-4"} {
		node := c.node(t, n)
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: "KubeletUpgraded", Status: corev1.ConditionTrue})
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-node-label", "example.com/kubelet=1.37.2", "--upgrade-done-condition", "KubeletUpgraded")
	if r.code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "(upgrade step: node label example.com/kubelet=1.37.2 until condition KubeletUpgraded=True) completed") {
		t.Errorf("stdout does not name the step:\n%s", r.stdout)
	}
	for _, n := range []string{"cpu-1", "gpu-1", "gpu-2", "gpu-3", "gpu-4"} {
		if got := c.node(t, n).Labels["example.com/kubelet"]; got != "1.37.2" {
			t.Errorf("node %s: requested version %q, want 1.37.2", n, got)
		}
	}
}

// TestRolloutWebhookStep: one POST per domain, with the header; the URL's
// credentials do not appear in the output.
func TestRolloutWebhookStep(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req upgrade.WebhookRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		got = append(got, req.Domain+" "+strings.Join(req.Nodes, ",")+" "+r.Header.Get("X-Api-Key"))
		mu.Unlock()
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://admin:hunter22@", 1) + "/upgrade"
	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-webhook", url, "--upgrade-webhook-header", "X-Api-Key: k3y-value")
	if r.code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	if diff := cmp.Diff([]string{"ud-1 cpu-1,gpu-1,gpu-2 k3y-value", "ud-2 gpu-3,gpu-4 k3y-value"}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if strings.Contains(r.stdout+r.stderr, "hunter22") {
		t.Errorf("the output shows the password:\n%s\n%s", r.stdout, r.stderr)
	}
}
