package gate_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/topology"
)

// member returns a running pod of LeaderWorkerSet group vllm-0 of size 4.
func member(worker string, ready bool) *corev1.Pod {
	name := "vllm-0"
	if worker != "0" {
		name += "-" + worker
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "inference", Name: name,
			Labels: map[string]string{
				topology.LWSNameLabel:        "vllm",
				topology.LWSGroupIndexLabel:  "0",
				topology.LWSWorkerIndexLabel: worker,
			},
			Annotations: map[string]string{topology.LWSSizeAnnotation: "4"},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.ContainersReady, Status: status},
			{Type: corev1.PodReady, Status: status},
		}},
	}
	if worker == "0" {
		// The leader opts in; its Ready waits for the gate.
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate.ConditionType}}
		pod.Status.Conditions[1].Status = corev1.ConditionFalse
	}
	return pod
}

// Example runs the controller against a (fake) cluster in which one worker
// of a group is not ready, and prints the condition it sets on the leader.
func Example() {
	client := fake.NewClientset([]runtime.Object{
		member("0", true), member("1", true), member("2", false), member("3", true),
	}...)

	changes := make(chan gate.Change, 8)
	c, err := gate.New(client, gate.Options{
		Namespace: "inference",
		OnChange:  func(ch gate.Change) { changes <- ch },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	select {
	case ch := <-changes:
		fmt.Println(ch)
	case <-time.After(10 * time.Second):
		fmt.Println("no change within 10s")
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}

	leader, err := client.CoreV1().Pods("inference").Get(context.Background(), "vllm-0", metav1.GetOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cond := gate.CurrentCondition(leader)
	fmt.Printf("%s %s %s\n", cond.Type, cond.Status, cond.Reason)
	// Output:
	// inference/vllm-0: udrain.dev/group-ready=False MemberNotReady: vllm-0-2 not ready; 3/4 members healthy
	// udrain.dev/group-ready False MemberNotReady
}

// ExampleOptions_pods embeds the controller in a program that watches pods
// already: it reads them from the program's informer factory and starts no
// list or watch of its own.
func ExampleOptions_pods() {
	client := fake.NewClientset([]runtime.Object{
		member("0", true), member("1", true), member("2", true), member("3", true),
	}...)
	factory := informers.NewSharedInformerFactory(client, 0)
	changes := make(chan gate.Change, 8)
	c, err := gate.New(client, gate.Options{
		Pods:      factory.Core().V1().Pods().Informer(), // the program's
		Namespace: "inference",
		OnChange:  func(ch gate.Change) { changes <- ch },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	factory.Start(ctx.Done()) // the program starts its informers, as it always did

	select {
	case ch := <-changes:
		fmt.Println(ch)
	case <-time.After(10 * time.Second):
		fmt.Println("no change within 10s")
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	factory.Shutdown()
	// Output:
	// inference/vllm-0: udrain.dev/group-ready=True GroupReady: 4/4 members healthy
}

// ExampleConditionFor computes a group's condition without a cluster.
func ExampleConditionFor() {
	pods := []*corev1.Pod{member("0", true), member("1", true), member("2", true)} // worker 3 is gone
	for _, g := range topology.FindGroups(pods) {
		cond := gate.ConditionFor(&g, time.Now())
		fmt.Printf("%s: %s %s: %s\n", g.ID, cond.Status, cond.Reason, cond.Message)
	}
	// Output:
	// inference/vllm-0: False MemberMissing: vllm-0-3 missing; 3/4 members healthy
}

// ExampleOptions shows the options of a controller that runs in several
// replicas, on one LeaderWorkerSet's pods.
func ExampleOptions() {
	opts := gate.Options{
		Namespace: "inference",
		Selector:  topology.LWSNameLabel + "=vllm",
		LeaderElection: &gate.LeaderElection{
			Namespace: "udrain-system", // the controller's own namespace
			Identity:  "replica-a",     // e.g. the pod name, from the downward API
		},
	}
	_, err := gate.New(fake.NewClientset(), opts)
	fmt.Println(err)

	opts.Selector = "app in (vllm"
	_, err = gate.New(fake.NewClientset(), opts)
	fmt.Println(err)
	// Output:
	// <nil>
	// invalid gate.Options.Selector: unable to parse requirement: found '', expected: ',' or ')'; write it as for kubectl -l, e.g. leaderworkerset.sigs.k8s.io/name=vllm
}

// ExampleController_HealthHandler serves the controller's health checks,
// as a livenessProbe (/healthz) and a readinessProbe (/readyz) see them.
func ExampleController_HealthHandler() {
	client := fake.NewClientset(member("0", true), member("1", true), member("2", true), member("3", true))
	c, err := gate.New(client, gate.Options{Namespace: "inference"})
	if err != nil {
		fmt.Println(err)
		return
	}
	health := httptest.NewServer(c.HealthHandler()) // e.g. on :8081, a listener of its own
	defer health.Close()
	get := func(path string) string {
		resp, err := http.Get(health.URL + path)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		verdict, _, _ := strings.Cut(string(body), "\n") // then the state, with the age of the last sync
		return fmt.Sprintf("%s %d %s", path, resp.StatusCode, verdict)
	}
	fmt.Println(get("/readyz"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); c.Readyz() != nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println(get("/healthz"))
	fmt.Println(get("/readyz"))
	cancel()
	<-done
	// Output:
	// /readyz 503 NotRunning: the controller is not running (Run was not called, or has returned)
	// /healthz 200 ok
	// /readyz 200 ok
}
