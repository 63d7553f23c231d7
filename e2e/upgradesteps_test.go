package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
	"github.com/udrain/udrain/upgrade"
)

// stepPods records, from a watch, the pods of the Job step in ns: the
// node each ran on and whether it reached Succeeded; and the Jobs created.
type stepPods struct {
	mu        sync.Mutex
	succeeded map[string]int // node -> pods Succeeded there
	jobs      map[types.UID]string
}

func recordStepPods(t *testing.T, s *scenario) *stepPods {
	t.Helper()
	r := &stepPods{succeeded: map[string]int{}, jobs: map[types.UID]string{}}
	ctx := t.Context()
	pw, err := s.tt.Client.CoreV1().Pods(s.tt.Name).Watch(ctx, metav1.ListOptions{LabelSelector: udrain.UpgradeStepLabel})
	if err != nil {
		t.Fatal(err)
	}
	jw, err := s.tt.Client.BatchV1().Jobs(s.tt.Name).Watch(ctx, metav1.ListOptions{LabelSelector: udrain.UpgradeStepLabel})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[types.UID]bool{}
	go func() {
		defer pw.Stop()
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Status.Phase != corev1.PodSucceeded || seen[p.UID] {
				continue
			}
			seen[p.UID] = true
			r.mu.Lock()
			r.succeeded[p.Spec.NodeName]++
			r.mu.Unlock()
		}
	}()
	go func() {
		defer jw.Stop()
		for ev := range jw.ResultChan() {
			if j, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Added {
				r.mu.Lock()
				r.jobs[j.UID] = j.Name
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *stepPods) counts() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.succeeded {
		out[k] = v
	}
	return out, len(r.jobs)
}

// TestRolloutJobTemplateStep: a rollout whose upgrade step is a Job per
// node (package upgrade's Job) on the testbed, where the Job controller is
// real and kwok plays the pods (Running, then Succeeded, as hack/kwok's
// pod-complete Stage does for pods of Jobs). Every node of the pool gets
// one pod of the step that succeeds, bound to it while it is cordoned;
// every group is disrupted once; the Jobs are gone afterwards; the same
// rollout run again skips every domain and creates no Job.
func TestRolloutJobTemplateStep(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	rec := recordStepPods(t, s)
	tmpl := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "node-upgrade", Namespace: s.tt.Name},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32), // 0: a failed pod fails the domain
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "upgrade", Image: "registry.example.com/node-upgrader:1.37.2", Args: []string{"--node=$(UDRAIN_NODE)"}}},
			}},
		},
	}
	step, err := upgrade.Job(s.tt.Client, upgrade.JobOptions{Template: tmpl, RolloutID: "e2e-job", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Record whether the domain's nodes were cordoned while their Jobs
	// ran: the step must run on a drained domain.
	var mu sync.Mutex
	cordonedDuringStep := map[string]bool{}
	d := s.drainer(t, &eventLog{}, eviction.Options{})
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{
		ID: "e2e-job", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, dom topology.Domain) error {
			for _, n := range dom.Nodes {
				node, err := s.tt.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return err
				}
				mu.Lock()
				cordonedDuringStep[n] = node.Spec.Unschedulable
				mu.Unlock()
			}
			t0 := time.Now()
			err := step(ctx, dom)
			t.Logf("Job step of %s: %s, %v", dom.Name, time.Since(t0).Round(time.Millisecond), err)
			return err
		},
	})
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	t.Logf("rollout took %s", time.Since(start).Round(time.Millisecond))
	checkWholeRollout(t, s, start, "rollout with the Job step")
	if sum := report.SummarizeRollout(res); sum.DomainsDone != 3 || sum.GroupsDisrupted != 3 {
		t.Errorf("summary %+v, want 3 domains done and 3 groups disrupted", sum)
	}
	checkUpgradedAndUncordoned(t, s, "e2e-job")
	succeeded, jobs := rec.counts()
	for _, n := range s.nodeList {
		if succeeded[n.Name] != 1 {
			t.Errorf("node %s: %d pods of the step succeeded there, want 1", n.Name, succeeded[n.Name])
		}
		if !cordonedDuringStep[n.Name] {
			t.Errorf("node %s was not cordoned when its upgrade Job started", n.Name)
		}
	}
	if jobs != len(s.nodeList) {
		t.Errorf("%d Jobs created, want one per node (%d)", jobs, len(s.nodeList))
	}
	left, err := s.tt.Client.BatchV1().Jobs(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: udrain.UpgradeStepLabel})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d Jobs of the step left after the rollout, want 0", len(left.Items))
	}

	// The same rollout again: every domain is done, no Job is made.
	res, err = d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-job", Domains: s.domains(), RecoveryTimeout: time.Minute, Upgrade: step})
	if err != nil {
		t.Fatalf("rollout again: %v", err)
	}
	if sum := report.SummarizeRollout(res); sum.DomainsSkipped != 3 {
		t.Errorf("rollout again: summary %+v, want 3 domains skipped", sum)
	}
	if _, again := rec.counts(); again != jobs {
		t.Errorf("rollout again created %d Jobs", again-jobs)
	}
}

// TestRolloutNodeLabelHandshake: a rollout whose upgrade step is the node
// label handshake, with the node agent played by a goroutine: it upgrades
// a node (1s) when it sees the version asked for, then sets the done
// label. Every node is asked while cordoned, answers, and the rollout
// completes with each group disrupted once.
func TestRolloutNodeLabelHandshake(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	const (
		requestKey = "upgrade.e2e.udrain.dev/kubelet-version"
		doneKey    = "upgrade.e2e.udrain.dev/kubelet-done"
		version    = "1.37.2"
	)
	var mu sync.Mutex
	askedWhileCordoned := map[string]bool{}
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		runNodeAgent(agentCtx, t, s, requestKey, doneKey, version, func(n *corev1.Node) {
			mu.Lock()
			askedWhileCordoned[n.Name] = n.Spec.Unschedulable
			mu.Unlock()
		})
	}()
	step, err := upgrade.NodeLabel(s.tt.Client, upgrade.NodeLabelOptions{
		Key: requestKey, Value: version,
		Done:    upgrade.Signal{Kind: upgrade.SignalLabel, Key: doneKey, Value: version},
		Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := s.drainer(t, &eventLog{}, eviction.Options{})
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-label", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute, Upgrade: step})
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	t.Logf("rollout took %s", time.Since(start).Round(time.Millisecond))
	for _, dom := range res.Domains {
		t.Logf("domain %s: upgrade step %s", dom.Domain, dom.Upgrade.Duration().Round(time.Millisecond))
	}
	stopAgent()
	<-agentDone
	checkWholeRollout(t, s, start, "rollout with the node label handshake")
	checkUpgradedAndUncordoned(t, s, "e2e-label")
	checkTargetVersion(t, s, requestKey, version)
	checkTargetVersion(t, s, doneKey, version)
	mu.Lock()
	defer mu.Unlock()
	for _, n := range s.nodeList {
		cordoned, asked := askedWhileCordoned[n.Name]
		if !asked || !cordoned {
			t.Errorf("node %s: asked %t, cordoned then %t; want asked while cordoned", n.Name, asked, cordoned)
		}
	}
}

// runNodeAgent plays the node agents of the pool until ctx ends: a node
// labelled requestKey=version and not yet doneKey=version is "upgraded"
// for a second, then labelled doneKey=version. asked is called with the
// node as it was when the agent saw the request.
func runNodeAgent(ctx context.Context, t *testing.T, s *scenario, requestKey, doneKey, version string, asked func(*corev1.Node)) {
	working := map[string]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		w, err := s.tt.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("agent: %v", err)
			}
			return
		}
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || n.Labels[requestKey] != version || n.Labels[doneKey] == version || working[n.Name] {
				continue
			}
			working[n.Name] = true
			asked(n.DeepCopy())
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
					return
				}
				patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{doneKey: version}}})
				if _, err := s.tt.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("agent: %v", err)
				}
			}(n.Name)
		}
		w.Stop()
	}
}

// jobStepBundle is deploy/rollout with its job-step component, rendered
// by kubectl kustomize: the rollout Job, the upgrade Job template of its
// ConfigMap, the udrain-upgrade namespace and the verbs its Role grants on
// Jobs there.
type jobStepBundle struct {
	job       *batchv1.Job
	config    map[string]map[string]string // the data of every ConfigMap, by name
	template  string
	cmName    string
	namespace *corev1.Namespace
	jobVerbs  []string
}

func renderJobStep(t *testing.T) jobStepBundle {
	t.Helper()
	kubectl := testbedKubectl(t)
	dir := t.TempDir()
	root, err := filepath.Abs("../deploy/rollout")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	overlay := "resources:\n- " + rel + "\ncomponents:\n- " + filepath.Join(rel, "job-step") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	config := map[string]map[string]string{}
	var (
		job       *batchv1.Job
		template  string
		cmName    string
		namespace *corev1.Namespace
		jobVerbs  []string
	)
	for _, doc := range strings.Split(run(t, kubectl, "kustomize", dir), "\n---\n") {
		var meta struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch {
		case meta.Kind == "Job":
			job = &batchv1.Job{}
			if err := yaml.UnmarshalStrict([]byte(doc), job); err != nil {
				t.Fatal(err)
			}
		case meta.Kind == "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict([]byte(doc), &cm); err != nil {
				t.Fatal(err)
			}
			config[cm.Name] = cm.Data
			if strings.HasPrefix(meta.Name, "udrain-upgrade-job-") {
				template, cmName = cm.Data["job.yaml"], cm.Name
			}
		case meta.Kind == "Namespace" && meta.Name == "udrain-upgrade":
			namespace = &corev1.Namespace{}
			if err := yaml.UnmarshalStrict([]byte(doc), namespace); err != nil {
				t.Fatal(err)
			}
		case meta.Kind == "Role" && meta.Name == "udrain-upgrade-jobs" && meta.Namespace == "udrain-upgrade":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatal(err)
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.Resources, "jobs") && slices.Contains(rule.APIGroups, "batch") {
					jobVerbs = append(jobVerbs, rule.Verbs...)
				}
			}
		}
	}
	return jobStepBundle{job: job, config: config, template: template, cmName: cmName, namespace: namespace, jobVerbs: jobVerbs}
}

// args are the rollout container's arguments with $(VAR) expanded from its
// env as the kubelet does (values, and keys of the rendered ConfigMaps).
func (b jobStepBundle) args(t *testing.T) []string {
	t.Helper()
	c := b.job.Spec.Template.Spec.Containers[0]
	var pairs []string
	for _, e := range c.Env {
		v := e.Value
		if r := e.ValueFrom; r != nil {
			if r.ConfigMapKeyRef == nil {
				continue // the pod's own fields: none that the args use
			}
			data, ok := b.config[r.ConfigMapKeyRef.Name]
			if !ok {
				t.Fatalf("env %s names ConfigMap %s, which the bundle does not have", e.Name, r.ConfigMapKeyRef.Name)
			}
			v = data[r.ConfigMapKeyRef.Key]
		}
		pairs = append(pairs, "$("+e.Name+")", v)
	}
	expand := strings.NewReplacer(pairs...)
	var out []string
	for _, a := range c.Args {
		out = append(out, expand.Replace(a))
	}
	return out
}

// TestRolloutJobStepComponent renders deploy/rollout with the job-step
// component, checks that the rollout Job is pointed at the mounted
// template and that the template lands in the privileged udrain-upgrade
// namespace with RBAC for Jobs there, then runs the rollout's command line
// in process (as the admin: the ServiceAccount's rights are not exercised
// here) with the rendered template over the test's pool: each node's Job
// runs in udrain-upgrade and succeeds, and the rollout completes.
func TestRolloutJobStepComponent(t *testing.T) {
	t.Parallel()
	b := renderJobStep(t)
	job, template, cmName, namespace, jobVerbs := b.job, b.template, b.cmName, b.namespace, b.jobVerbs
	if job == nil || template == "" || namespace == nil {
		t.Fatalf("rendered: Job %v, template %d bytes, namespace udrain-upgrade %v", job != nil, len(template), namespace != nil)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--upgrade-job-template=/etc/udrain/upgrade/job.yaml") {
		t.Errorf("the rollout Job's args %q do not name the template", c.Args)
	}
	mounted := false
	for _, v := range job.Spec.Template.Spec.Volumes {
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && m.MountPath == "/etc/udrain/upgrade" && v.ConfigMap != nil && v.ConfigMap.Name == cmName {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the template ConfigMap %s is not mounted at /etc/udrain/upgrade: volumes %+v, mounts %+v", cmName, job.Spec.Template.Spec.Volumes, c.VolumeMounts)
	}
	if got := namespace.Labels["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("udrain-upgrade enforces %q, want privileged", got)
	}
	slices.Sort(jobVerbs)
	if want := []string{"create", "delete", "get", "list", "watch"}; !slices.Equal(jobVerbs, want) {
		t.Errorf("the Role grants %v on Jobs, want %v", jobVerbs, want)
	}

	// The command line of the rendered Job, with the rendered template.
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	if _, err := s.tt.Client.CoreV1().Namespaces().Create(ctx, namespace, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(template), 0o600); err != nil {
		t.Fatal(err)
	}
	pods, err := s.tt.Client.CoreV1().Pods("udrain-upgrade").Watch(ctx, metav1.ListOptions{LabelSelector: udrain.UpgradeStepLabel})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	succeeded := map[string]bool{}
	go func() {
		defer pods.Stop()
		for ev := range pods.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodSucceeded {
				mu.Lock()
				succeeded[p.Spec.NodeName] = true
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	code, out := runCommand(ctx, []string{"rollout", "--ignore-daemonsets", "--id", "e2e-component", "--domains", strings.Join(s.domains(), ","),
		"--recovery-timeout", "3m", "--upgrade-job-template", file, "--upgrade-timeout", "2m"}, s.tt.Client)
	if code != app.ExitOK {
		t.Fatalf("udrain rollout --upgrade-job-template: exit code %d:\n%s", code, out)
	}
	t.Logf("rollout took %s", time.Since(start).Round(time.Millisecond))
	checkWholeRollout(t, s, start, "rollout with the rendered Job template")
	checkUpgradedAndUncordoned(t, s, "e2e-component")
	mu.Lock()
	defer mu.Unlock()
	for _, n := range s.nodeList {
		if !succeeded[n.Name] {
			t.Errorf("no pod of the step succeeded on node %s in udrain-upgrade", n.Name)
		}
	}
}

// TestRolloutJobStepFailsThenResumes: the upgrade Jobs of the first domain
// fail (their pods are annotated udrain.dev/kwok-fail, which hack/kwok's
// pod-fail Stage turns into a failed container), so the rollout stops
// there with a *upgrade.JobFailedError carrying the Job controller's
// reason, the domain cordoned and the failed Jobs left for their logs. The
// same rollout run again with the cause fixed (the template without the
// annotation) deletes the failed Jobs, creates them again, and completes:
// each group disrupted once over both runs.
func TestRolloutJobStepFailsThenResumes(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	rec := recordStepPods(t, s)
	tmpl := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "node-upgrade", Namespace: s.tt.Name},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"udrain.dev/kwok-fail": "true"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "upgrade", Image: "registry.example.com/node-upgrader:1.37.2"}}},
			},
		},
	}
	failing, err := upgrade.Job(s.tt.Client, upgrade.JobOptions{Template: tmpl, RolloutID: "e2e-job-fail", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d := s.drainer(t, &eventLog{}, eviction.Options{})
	start := time.Now()
	_, err = d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-job-fail", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute, Upgrade: failing})
	var failed *upgrade.JobFailedError
	var de *eviction.DomainError
	if !errors.As(err, &failed) || !errors.As(err, &de) || de.Stage != eviction.StageUpgrade || de.Domain != s.nodes.UD(0) {
		t.Fatalf("rollout: %v; want a DomainError at the upgrade of %s unwrapping to a JobFailedError", err, s.nodes.UD(0))
	}
	t.Logf("first run stopped: %v", err)
	if failed.Reason != "BackoffLimitExceeded" || failed.Domain != s.nodes.UD(0) {
		t.Errorf("JobFailedError %+v, want reason BackoffLimitExceeded in %s", failed, s.nodes.UD(0))
	}
	if n, err := s.tt.Client.CoreV1().Nodes().Get(ctx, failed.Node, metav1.GetOptions{}); err != nil || !n.Spec.Unschedulable {
		t.Errorf("node %s of the failed domain: %v, unschedulable %v; want cordoned", failed.Node, err, n != nil && n.Spec.Unschedulable)
	}
	if _, err := s.tt.Client.BatchV1().Jobs(s.tt.Name).Get(ctx, failed.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the failed Job %s is not left for its logs: %v", failed.Name, err)
	}

	// The cause is fixed later: by then every Job of the domain has
	// failed (a Job still running would be waited for, not made again).
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := s.tt.Client.BatchV1().Jobs(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: udrain.UpgradeStepLabel})
		if err != nil {
			return false, err
		}
		for _, j := range l.Items {
			failedNow := false
			for _, c := range j.Status.Conditions {
				failedNow = failedNow || c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue
			}
			if !failedNow {
				return false, nil
			}
		}
		return len(l.Items) == s.nodes.PerUD, nil
	})
	if err != nil {
		t.Fatalf("waiting for both Jobs of the first domain to fail: %v", err)
	}
	fixed := tmpl.DeepCopy()
	fixed.Spec.Template.Annotations = nil
	step, err := upgrade.Job(s.tt.Client, upgrade.JobOptions{Template: fixed, RolloutID: "e2e-job-fail", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-job-fail", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute, Upgrade: step})
	if err != nil {
		t.Fatalf("rollout resumed: %v", err)
	}
	t.Logf("both runs took %s", time.Since(start).Round(time.Millisecond))
	if sum := report.SummarizeRollout(res); sum.DomainsDone != 3 {
		t.Errorf("resumed: summary %+v, want 3 domains done", sum)
	}
	checkWholeRollout(t, s, start, "rollout with a failed Job step, resumed")
	checkUpgradedAndUncordoned(t, s, "e2e-job-fail")
	succeeded, jobs := rec.counts()
	for _, n := range s.nodeList {
		if succeeded[n.Name] != 1 {
			t.Errorf("node %s: %d pods of the step succeeded there, want 1", n.Name, succeeded[n.Name])
		}
	}
	// One Job per node, plus those of the first domain made again.
	if want := len(s.nodeList) + s.nodes.PerUD; jobs != want {
		t.Errorf("%d Jobs created over both runs, want %d", jobs, want)
	}
}
