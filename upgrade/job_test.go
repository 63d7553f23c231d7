package upgrade

import (
	"context"
	"errors"
	"fmt"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

var testDomain = topology.Domain{Name: "ud-1", Nodes: []string{"n1", "n2"}}

func testTemplate() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "kubelet-upgrade", Namespace: "ops", Labels: map[string]string{"app": "upgrade"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "upgrade", Image: "example.com/upgrader:1", Env: []corev1.EnvVar{{Name: "VERSION", Value: "1.37.2"}, {Name: EnvNode, Value: "stale"}}}},
		}}},
	}
}

func TestJobFor(t *testing.T) {
	got := JobFor(testTemplate(), "r1", testDomain, "n2")
	name := JobName("kubelet-upgrade", "r1", "ud-1", "n2")
	step := stepValue("r1", "ud-1")
	want := testTemplate()
	want.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: "ops",
		Labels:      map[string]string{"app": "upgrade", udrain.UpgradeStepLabel: step},
		Annotations: map[string]string{udrain.RolloutIDAnnotation: "r1", udrain.DomainAnnotation: "ud-1", udrain.NodeAnnotation: "n2"}}
	want.Spec.Template.Labels = map[string]string{udrain.UpgradeStepLabel: step}
	want.Spec.Template.Spec.NodeName = "n2"
	want.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	want.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "1.37.2"},
		{Name: EnvNode, Value: "n2"}, {Name: EnvDomain, Value: "ud-1"}, {Name: EnvNodes, Value: "n1,n2"}, {Name: EnvRolloutID, Value: "r1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JobFor (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(testTemplate(), testTemplate()); diff != "" {
		t.Fatal(diff)
	}
}

// TestJobForReadBack: a template saved from a cluster (kubectl get job -o
// yaml) loses what the Job controller set, or the API server would refuse
// the copy (a selector naming the old Job's UID).
func TestJobForReadBack(t *testing.T) {
	tmpl := testTemplate()
	tmpl.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "old"}}
	tmpl.Spec.Template.Labels = map[string]string{batchv1.ControllerUidLabel: "old", batchv1.JobNameLabel: "old", "controller-uid": "old", "job-name": "old", "app": "upgrade"}
	tmpl.Status.Succeeded = 1
	got := JobFor(tmpl, "r1", testDomain, "n1")
	if got.Spec.Selector != nil || got.Status.Succeeded != 0 {
		t.Errorf("selector %v, status %+v: want both cleared", got.Spec.Selector, got.Status)
	}
	if diff := cmp.Diff(map[string]string{"app": "upgrade", udrain.UpgradeStepLabel: stepValue("r1", "ud-1")}, got.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
}

func TestJobName(t *testing.T) {
	long := "a-very-long-template-name-that-goes-on-and-on-and-on-and-on-and-on"
	for _, tc := range []struct {
		prefix  string
		wantLen int
	}{
		{"up", 13},
		{long, 63},
		{strings.Repeat("a", 51) + "-b", 62}, // cut after a dash: the dash goes
	} {
		got := JobName(tc.prefix, "r", "d", "n")
		if len(got) != tc.wantLen {
			t.Errorf("JobName(%q) = %q (%d characters), want %d", tc.prefix, got, len(got), tc.wantLen)
		}
	}
	if JobName("p", "r", "d", "n1") == JobName("p", "r", "d", "n2") || JobName("p", "r1", "d", "n") == JobName("p", "r2", "d", "n") {
		t.Error("JobName does not tell nodes or rollouts apart")
	}
}

func TestJobConfigErrors(t *testing.T) {
	noNS := testTemplate()
	noNS.Namespace = ""
	bound := testTemplate()
	bound.Spec.Template.Spec.NodeName = "n1"
	noContainers := testTemplate()
	noContainers.Spec.Template.Spec.Containers = nil
	badName := testTemplate()
	badName.Name = "Upper_Case"
	for name, tc := range map[string]struct {
		opts  JobOptions
		field string
	}{
		"no template":   {JobOptions{RolloutID: "r"}, "upgrade.JobOptions.Template"},
		"no namespace":  {JobOptions{Template: noNS, RolloutID: "r"}, "upgrade.JobOptions.Template"},
		"bound to node": {JobOptions{Template: bound, RolloutID: "r"}, "upgrade.JobOptions.Template"},
		"no containers": {JobOptions{Template: noContainers, RolloutID: "r"}, "upgrade.JobOptions.Template"},
		"bad name":      {JobOptions{Template: badName, RolloutID: "r"}, "upgrade.JobOptions.Template"},
		"no rollout ID": {JobOptions{Template: testTemplate()}, "upgrade.JobOptions.RolloutID"},
		"negative":      {JobOptions{Template: testTemplate(), RolloutID: "r", Timeout: -time.Second}, "upgrade.JobOptions.Timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Job(fake.NewClientset(), tc.opts)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("err = %v, want a ConfigError for %s", err, tc.field)
			}
		})
	}
}

// finished returns j with a terminal condition.
func finished(j *batchv1.Job, typ batchv1.JobConditionType, reason, msg string) *batchv1.Job {
	j = j.DeepCopy()
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg})
	return j
}

// jobController plays the Job controller on client: a created Job gets
// the condition outcome returns for its node at once (none: it runs on).
// It returns the names of the Jobs created so far.
func jobController(client *fake.Clientset, outcome func(node string) (batchv1.JobConditionType, string)) func() []string {
	var mu sync.Mutex
	var created []string
	client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		j.UID = types.UID("uid-" + j.Name + "-" + time.Now().Format(time.RFC3339Nano))
		if typ, reason := outcome(j.Annotations[udrain.NodeAnnotation]); typ != "" {
			j = finished(j, typ, reason, "from the test")
		}
		if err := client.Tracker().Create(batchv1.SchemeGroupVersion.WithResource("jobs"), j, j.Namespace); err != nil {
			return true, nil, err
		}
		if j.Spec.Template.Spec.NodeName != j.Annotations[udrain.NodeAnnotation] {
			return true, nil, fmt.Errorf("job %s for node %s bound to %q", j.Name, j.Annotations[udrain.NodeAnnotation], j.Spec.Template.Spec.NodeName)
		}
		mu.Lock()
		defer mu.Unlock()
		created = append(created, j.Name)
		return true, j, nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(created)
		slices.Sort(out)
		return out
	}
}

func TestJobStep(t *testing.T) {
	tmpl := testTemplate()
	nameOf := func(node string) string { return JobName("kubelet-upgrade", "r1", "ud-1", node) }
	existing := func(node string, typ batchv1.JobConditionType) *batchv1.Job {
		j := JobFor(tmpl, "r1", testDomain, node)
		j.UID = "old-" + types.UID(node)
		if typ != "" {
			j = finished(j, typ, "Old", "from an earlier run")
		}
		return j
	}
	foreign := existing("n1", "")
	foreign.Annotations[udrain.RolloutIDAnnotation] = "r0"
	succeed := func(string) (batchv1.JobConditionType, string) { return batchv1.JobComplete, "" }

	for name, tc := range map[string]struct {
		existing []runtime.Object
		outcome  func(node string) (batchv1.JobConditionType, string)
		timeout  time.Duration
		// seen are the nodes whose Jobs the step has seen succeed when
		// the timeout passes (on a fake clock: a slow machine takes its
		// time).
		seen []string
		// wantErr checks the error; nil means success.
		wantErr     func(error) bool
		wantCreated []string
		wantLeft    []string
	}{
		"every node succeeds": {
			outcome:     succeed,
			wantCreated: []string{nameOf("n1"), nameOf("n2")},
		},
		"a node fails": {
			outcome: func(n string) (batchv1.JobConditionType, string) {
				if n == "n2" {
					return batchv1.JobFailed, "BackoffLimitExceeded"
				}
				return batchv1.JobComplete, ""
			},
			wantErr: func(err error) bool {
				var jf *JobFailedError
				return errors.As(err, &jf) && jf.Node == "n2" && jf.Reason == "BackoffLimitExceeded" && jf.Name == nameOf("n2") && jf.Namespace == "ops"
			},
			wantCreated: []string{nameOf("n1"), nameOf("n2")},
			// Failed Jobs stay for their logs; nothing is cleaned up
			// while the domain has not succeeded.
			wantLeft: []string{nameOf("n1"), nameOf("n2")},
		},
		"resumed: a Job that succeeded counts as done": {
			existing:    []runtime.Object{existing("n1", batchv1.JobComplete)},
			outcome:     succeed,
			wantCreated: []string{nameOf("n2")},
		},
		"resumed: a Job that failed is made again": {
			existing:    []runtime.Object{existing("n1", batchv1.JobFailed)},
			outcome:     succeed,
			wantCreated: []string{nameOf("n1"), nameOf("n2")},
		},
		"a Job of another rollout under the name": {
			existing: []runtime.Object{foreign},
			outcome:  succeed,
			wantErr: func(err error) bool {
				var c *JobConflictError
				return errors.As(err, &c) && c.Name == nameOf("n1")
			},
			wantLeft: []string{nameOf("n1")},
		},
		"timeout": {
			outcome: func(n string) (batchv1.JobConditionType, string) {
				if n == "n1" {
					return batchv1.JobComplete, ""
				}
				return "", ""
			},
			timeout: 200 * time.Millisecond,
			seen:    []string{"n1"},
			wantErr: func(err error) bool {
				var te *TimeoutError
				return errors.As(err, &te) && slices.Equal(te.Pending, []string{"n2"}) && errors.Is(err, context.DeadlineExceeded)
			},
			wantCreated: []string{nameOf("n1"), nameOf("n2")},
			wantLeft:    []string{nameOf("n1"), nameOf("n2")},
		},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(tc.existing...)
			created := jobController(client, tc.outcome)
			clk := clocktesting.NewFakeClock(time.Now())
			step, err := Job(client, JobOptions{Template: tmpl, RolloutID: "r1", Timeout: tc.timeout, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			ctx, log := newStepLog(t, ctx)
			done := make(chan error, 1)
			go func() { done <- step(ctx, testDomain) }()
			if tc.timeout > 0 {
				for _, n := range tc.seen {
					log.waitFor(t, `"msg"="Upgrade Job succeeded"`, `"node"="`+n+`"`)
				}
				clk.Step(tc.timeout)
			}
			err = <-done
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("step: %v", err)
			}
			slices.Sort(tc.wantCreated)
			slices.Sort(tc.wantLeft)
			if diff := cmp.Diff(tc.wantCreated, created()); diff != "" {
				t.Errorf("Jobs created (-want +got):\n%s", diff)
			}
			list, err := client.BatchV1().Jobs("ops").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, j := range list.Items {
				left = append(left, j.Name)
			}
			slices.Sort(left)
			if diff := cmp.Diff(tc.wantLeft, left); diff != "" {
				t.Errorf("Jobs left (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJobStepWaitsOnTheWatch: Jobs that finish after the step started
// waiting are seen on the watch, and deleted with propagation Background.
func TestJobStepWaitsOnTheWatch(t *testing.T) {
	client := fake.NewClientset()
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("jobs", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	step, err := Job(client, JobOptions{Template: testTemplate(), RolloutID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- step(t.Context(), testDomain) }()
	select {
	case <-watching:
	case err := <-done:
		t.Fatalf("the step returned before any Job finished: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the step returned before any Job finished: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	for _, n := range testDomain.Nodes {
		j, err := client.BatchV1().Jobs("ops").Get(t.Context(), JobName("kubelet-upgrade", "r1", "ud-1", n), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.BatchV1().Jobs("ops").UpdateStatus(t.Context(), finished(j, batchv1.JobComplete, "", ""), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the step did not see the Jobs complete")
	}
	var deletes int
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "jobs" {
			deletes++
			if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("Job %s deleted with propagation %v, want Background", d.GetName(), p)
			}
		}
	}
	if deletes != 2 {
		t.Errorf("%d Jobs deleted, want 2", deletes)
	}
}
