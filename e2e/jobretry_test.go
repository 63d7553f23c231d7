package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/e2e/fixture"
)

// TestRolloutJobPodKilledMidDomainRetries is issue 26's "killing the Job's
// pod mid-domain resumes in its retry", with what the testbed can run: the
// udrain binary with the command line of deploy/rollout's Job and its
// job-step component (the rendered upgrade Job template), one process per
// pod of the Job. The first is SIGKILLed as the upgrade Jobs of the second
// domain are created (its node drained, its upgrade under way), as a pod
// killed with its node would be. Then the Job's retries are played on the
// Job controller's schedule (10 s, 20 s, 40 s, ... after each failure), each
// a new process, hence a new Lease identity, as a new pod is: a retry
// before the dead holder's Lease expires must exit 1 (which the Job
// retries), never 2 or 4 (which its podFailurePolicy turns into a failed
// Job), and one within the rendered backoffLimit must take the Lease over
// and complete the rollout. It must not upgrade a node twice (one upgrade
// Job per node over all runs: the retry adopts the killed run's Jobs), and
// the independent pod recording must find each group disrupted once.
func TestRolloutJobPodKilledMidDomainRetries(t *testing.T) {
	t.Parallel()
	b := renderJobStep(t)
	if b.job == nil || b.template == "" || b.namespace == nil || b.job.Spec.BackoffLimit == nil {
		t.Fatalf("rendered: Job %v (with a backoffLimit), template %d bytes, namespace udrain-upgrade %v", b.job != nil, len(b.template), b.namespace != nil)
	}
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	bin := buildUdrain(t)
	if _, err := s.tt.Client.CoreV1().Namespaces().Create(ctx, b.namespace, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(b.template), 0o600); err != nil {
		t.Fatal(err)
	}
	const id = "e2e-job-retry"
	// The rendered Job's arguments, its ConfigMap's values expanded, with
	// what a pod here would see instead: the test's rollout ID, the
	// template's path.
	var args []string
	for _, a := range b.args(t) {
		switch {
		case a == b.config["udrain-rollout"]["rollout-id"]:
			a = id
		case strings.HasPrefix(a, "--upgrade-job-template="):
			a = "--upgrade-job-template=" + file
		}
		args = append(args, a)
	}
	if !strings.Contains(strings.Join(args, " "), "--upgrade-job-template="+file) {
		t.Fatalf("the rendered Job's args %q have no --upgrade-job-template", args)
	}
	args = append(args, "--kubeconfig", s.tt.Testbed().Kubeconfig(), "--domains", strings.Join(s.domains(), ","),
		"--recovery-timeout", "3m", "--upgrade-timeout", "2m", "-o", "json")

	// Every upgrade Job of this rollout, by node, from a watch of its own.
	jw, err := s.tt.Client.BatchV1().Jobs(b.namespace.Name).Watch(ctx, metav1.ListOptions{LabelSelector: udrain.UpgradeStepLabel})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	jobsByNode := map[string]map[types.UID]bool{}
	second := s.nodes.UD(1)
	inSecond := make(chan struct{})
	var once sync.Once
	go func() {
		defer jw.Stop()
		for ev := range jw.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added || j.Annotations[udrain.RolloutIDAnnotation] != id {
				continue
			}
			mu.Lock()
			node := j.Annotations[udrain.NodeAnnotation]
			if jobsByNode[node] == nil {
				jobsByNode[node] = map[types.UID]bool{}
			}
			jobsByNode[node][j.UID] = true
			mu.Unlock()
			if j.Annotations[udrain.DomainAnnotation] == second {
				once.Do(func() { close(inSecond) })
			}
		}
	}()

	start := time.Now()
	first := startUdrain(t, s.tt, bin, "pod-0", args)
	select {
	case <-inSecond:
	case <-first.done:
		t.Fatalf("the first run (%q) ended (exit code %d) before the upgrade of %s:\n%s%s", args, first.code, second, first.stderr(), first.out)
	case <-time.After(4 * time.Minute):
		t.Fatalf("the first run never reached the upgrade of %s:\n%s", second, first.stderr())
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	killedAt := time.Now()
	nodes, err := s.tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fixture.UpgradeDomainLabel + "=" + second})
	if err != nil {
		t.Fatal(err)
	}
	cordoned := 0
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			cordoned++
		}
	}
	if cordoned == 0 {
		t.Fatalf("killed the first run outside %s: none of its nodes is cordoned", second)
	}
	t.Logf("killed the first run %s after its start, in the upgrade of %s (%d node(s) cordoned)", killedAt.Sub(start).Round(time.Millisecond), second, cordoned)

	// The Job's retries, on the Job controller's back-off.
	limit := int(*b.job.Spec.BackoffLimit)
	delay := 10 * time.Second
	var done *udrainProcess
	var codes []int
	for attempt := 1; attempt <= limit && done == nil; attempt++ {
		time.Sleep(delay)
		delay = min(2*delay, 6*time.Minute)
		p := startUdrain(t, s.tt, bin, fmt.Sprintf("pod-%d", attempt), args)
		<-p.done
		codes = append(codes, p.code)
		switch p.code {
		case app.ExitOK:
			done = p
		case app.ExitError:
			t.Logf("retry %d, %s after the kill: exit 1 (the Job retries): %s", attempt, time.Since(killedAt).Round(time.Millisecond), lastLine(p.stderr()))
		default:
			t.Fatalf("retry %d: exit code %d, which the Job's podFailurePolicy makes final or the Job does not expect:\n%s", attempt, p.code, p.stderr())
		}
	}
	if done == nil {
		t.Fatalf("no retry within the Job's backoffLimit (%d) completed the rollout: exit codes %v", limit, codes)
	}
	t.Logf("retry %d completed the rollout %s after the kill; exit codes %v", len(codes), time.Since(killedAt).Round(time.Millisecond), codes)
	if r := done.report(t); r.Result == nil || r.Result.Status == nil || !r.Result.Status.Completed {
		t.Errorf("the completing retry's report: %+v, want a completed rollout", r.Result)
	}
	checkWholeRollout(t, s, start, "rollout Job killed mid-domain and retried")
	checkUpgradedAndUncordoned(t, s, id)
	mu.Lock()
	defer mu.Unlock()
	for _, n := range s.nodeList {
		if got := len(jobsByNode[n.Name]); got != 1 {
			t.Errorf("node %s: %d upgrade Job(s) created over all runs, want 1", n.Name, got)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
