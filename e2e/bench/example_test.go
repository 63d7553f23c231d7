package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/e2e/bench"
)

// Count what a client sends: install the counter on the rest.Config
// before the clientset is made.
func ExampleRequestCounter() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","items":[]}`)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	var counter bench.RequestCounter
	counter.Wrap(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		_, _ = client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	}
	for _, t := range counter.Snapshot() {
		fmt.Println(t.Request, t.Count)
	}
	// Output:
	// list nodes 3
}

// The verb and resource of a request, as the audit log and kubectl name
// them.
func ExampleClassifyRequest() {
	fmt.Println(bench.ClassifyRequest("POST", "/api/v1/namespaces/serving/pods/llm-0-0/eviction", ""))
	fmt.Println(bench.ClassifyRequest("GET", "/apis/policy/v1/poddisruptionbudgets", "true"))
	fmt.Println(bench.ClassifyRequest("GET", "/api/v1", ""))
	// Output:
	// create pods/eviction
	// watch poddisruptionbudgets.policy
	// discovery
}

// Read "go test -bench" output into results.
func ExampleParseGoBench() {
	out := `pkg: github.com/udrain/udrain/eviction
BenchmarkPlan/nodes=1000-2   	      20	  51396086 ns/op	 9760170 B/op	   82001 allocs/op
PASS
`
	results, err := bench.ParseGoBench(strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range results {
		ns, _ := b.Metric("ns/op")
		fmt.Printf("%s on %d CPUs: %s per op\n", b.Name, b.Procs, time.Duration(ns).Round(time.Millisecond))
	}
	// Output:
	// BenchmarkPlan/nodes=1000 on 2 CPUs: 51ms per op
}

// A benchmark shape says what it needs and whether it fits.
func ExampleShape_Validate() {
	s := bench.Shape{UDs: 3, PerUD: 4, Workloads: 1, Size: 8, GPUsPerPod: 4}
	fmt.Println(s.Nodes(), "nodes,", s.Groups(), "groups,", s.Pods(), "pods:", s.Validate())
	s.Workloads = 2
	err := s.Validate()
	var se *bench.ShapeError
	fmt.Println(errors.As(err, &se), err)
	// Output:
	// 12 nodes, 3 groups, 24 pods: <nil>
	// true 2 workloads x 8 pods per group do not fit in a domain of 4 nodes (8 pods of 4 GPUs): add nodes per domain or use fewer, smaller groups
}
