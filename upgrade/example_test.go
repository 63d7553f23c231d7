package upgrade_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
	"github.com/udrain/udrain/upgrade"
)

// A Job per node runs the privileged upgrade; the rollout calls the step
// once per drained domain. Here the fake clientset plays the Job
// controller: every Job succeeds as soon as it is created.
func ExampleJob() {
	client := fake.NewClientset()
	client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		fmt.Printf("created %s on node %s\n", j.Name, j.Spec.Template.Spec.NodeName)
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		return true, j, client.Tracker().Create(batchv1.SchemeGroupVersion.WithResource("jobs"), j, j.Namespace)
	})
	template := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "kubelet-upgrade", Namespace: "udrain-system"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "upgrade", Image: "registry.example.com/kubelet-upgrader:1.37.2"}},
		}}},
	}
	step, err := upgrade.Job(client, upgrade.JobOptions{Template: template, RolloutID: "kubelet-1.37.2", Timeout: 30 * time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	// What the rollout does with it: eviction.RolloutOptions{Upgrade: step}.
	var _ eviction.UpgradeFunc = step
	err = step(context.Background(), topology.Domain{Name: "ud-1", Nodes: []string{"gpu-1", "gpu-2"}})
	fmt.Println("step:", err)
	left, _ := client.BatchV1().Jobs("udrain-system").List(context.Background(), metav1.ListOptions{})
	fmt.Println("Jobs left:", len(left.Items))
	// Output:
	// created kubelet-upgrade-6b9de137f1 on node gpu-1
	// created kubelet-upgrade-ca969cdb03 on node gpu-2
	// step: <nil>
	// Jobs left: 0
}

// The node label handshake: udrain asks for a version with a label and an
// agent on each node answers with another. Here the agent has answered
// already for one node, and answers for the other once asked. A node
// whose agent does not answer within Timeout fails the step with a
// *upgrade.TimeoutError naming it (its Pending).
func ExampleNodeLabel() {
	ctx := context.Background()
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{"example.com/kubelet-done": "1.37.2"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-2"}},
	)
	// gpu-2's agent: it upgrades its node once asked, and says so.
	w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || n.Name != "gpu-2" || n.Labels["example.com/kubelet-version"] == "" || n.Labels["example.com/kubelet-done"] != "" {
				continue
			}
			fmt.Println("gpu-2 asked for:", n.Labels["example.com/kubelet-version"])
			n.Labels["example.com/kubelet-done"] = n.Labels["example.com/kubelet-version"]
			if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				fmt.Println(err)
			}
		}
	}()
	step, err := upgrade.NodeLabel(client, upgrade.NodeLabelOptions{
		Key: "example.com/kubelet-version", Value: "1.37.2",
		Done:    upgrade.Signal{Kind: upgrade.SignalLabel, Key: "example.com/kubelet-done", Value: "1.37.2"},
		Timeout: 30 * time.Minute,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = step(ctx, topology.Domain{Name: "ud-1", Nodes: []string{"gpu-1", "gpu-2"}})
	fmt.Println("step:", err)
	// Output:
	// gpu-2 asked for: 1.37.2
	// step: <nil>
}

// The webhook step POSTs the domain to an upgrade service and retries what
// may pass on a second try; the credentials stay out of the error.
func ExampleWebhook() {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		var req upgrade.WebhookRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if calls == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Printf("upgrading %s: %v\n", req.Domain, req.Nodes)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	step, err := upgrade.Webhook(upgrade.WebhookOptions{
		URL: srv.URL + "/upgrade?token=s3cr3t", RolloutID: "kubelet-1.37.2",
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 3},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = step(context.Background(), topology.Domain{Name: "ud-1", Nodes: []string{"gpu-1", "gpu-2"}})
	fmt.Println("step:", err, "after", calls, "calls")
	// Output:
	// upgrading ud-1: [gpu-1 gpu-2]
	// step: <nil> after 2 calls
}

// A shell command per domain, its output prefixed with the domain, as
// "udrain rollout --upgrade-command" shows it. A failing command is a
// *CommandError with its exit status.
func ExampleCommand() {
	step, err := upgrade.Command(upgrade.CommandOptions{
		Command:   `echo "rebooting $UDRAIN_NODES"; test "$UDRAIN_DOMAIN" != ud-2`,
		RolloutID: "kubelet-1.37.2",
		Output: func(domain string) io.Writer {
			return writerFunc(func(line []byte) (int, error) { return fmt.Printf("[%s] %s", domain, line) })
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ud-1:", step(context.Background(), topology.Domain{Name: "ud-1", Nodes: []string{"gpu-1", "gpu-2"}}))
	err = step(context.Background(), topology.Domain{Name: "ud-2", Nodes: []string{"gpu-3"}})
	var failed *upgrade.CommandError
	if errors.As(err, &failed) {
		fmt.Println("ud-2: exit status", failed.ExitCode)
	}
	// Output:
	// [ud-1] rebooting gpu-1,gpu-2
	// ud-1: <nil>
	// [ud-2] rebooting gpu-3
	// ud-2: exit status 1
}

// Options hold the step a user picked (here as a command line's flags
// would give it); New builds it, or says what is wrong before anything
// runs.
func ExampleNew() {
	key, value, err := upgrade.ParseLabel("example.com/kubelet-version=1.37.2")
	if err != nil {
		fmt.Println(err)
		return
	}
	done, err := upgrade.ParseSignal(upgrade.SignalCondition, "KubeletUpgraded")
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := upgrade.Options{
		NodeLabel: &upgrade.NodeLabelOptions{Key: key, Value: value, Done: done},
		Webhook:   &upgrade.WebhookOptions{URL: "https://upgrader.example.com/"},
	}
	_, err = upgrade.New(fake.NewClientset(), opts)
	fmt.Println(err)
	opts.Webhook = nil
	step, err := upgrade.New(fake.NewClientset(), opts)
	fmt.Println(step != nil, err, "- waits for", done)
	// Output:
	// invalid upgrade.Options.NodeLabel: set together with another upgrade step: a rollout runs one, pick it (see upgrade.Options.Webhook)
	// true <nil> - waits for condition KubeletUpgraded=True
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
