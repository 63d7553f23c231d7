package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/metrics"
	"github.com/udrain/udrain/topology"
)

// A Recorder on a registry of the program's own, fed by a Drainer's
// events. A controller-runtime manager would pass metrics.Registry of
// sigs.k8s.io/controller-runtime/pkg/metrics instead, and serve nothing
// itself.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}
	opts := eviction.Options{OnEvent: rec.Record}
	_ = opts // eviction.New(client, opts) drains with metrics

	// What a drain of ud-1 reports, in short.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &topology.PodRef{Namespace: "inference", Name: "llm-0", UID: "u0"}
	for _, e := range []eviction.Event{
		{Time: t0, Type: eviction.EventPlanned, ID: "drain", Domain: "ud-1"},
		{Time: t0, Type: eviction.EventBlocked, ID: "drain", Domain: "ud-1", Pod: pod, Request: eviction.RequestBudgetRefused},
		{Time: t0.Add(30 * time.Second), Type: eviction.EventUnblocked, ID: "drain", Domain: "ud-1", Pod: pod},
		{Time: t0.Add(30 * time.Second), Type: eviction.EventEvicted, ID: "drain", Domain: "ud-1", Pod: pod, Request: eviction.RequestEvicted},
	} {
		rec.Record(context.Background(), e)
	}
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP udrain_eviction_requests_total Eviction (or deletion) requests sent, by the API server's answer.
# TYPE udrain_eviction_requests_total counter
udrain_eviction_requests_total{result="budget_refused"} 1
udrain_eviction_requests_total{result="error"} 0
udrain_eviction_requests_total{result="evicted"} 1
udrain_eviction_requests_total{result="gone"} 0
udrain_eviction_requests_total{result="namespace_terminating"} 0
udrain_eviction_requests_total{result="webhook_refused"} 0
`), metrics.EvictionRequests)
	fmt.Println("requests by result as expected:", err == nil)
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP udrain_domain_state 1 for the state each upgrade domain is in; one series per domain.
# TYPE udrain_domain_state gauge
udrain_domain_state{domain="ud-1",state="draining"} 1
`), metrics.DomainState)
	fmt.Println("ud-1 draining:", err == nil)
	// Output:
	// requests by result as expected: true
	// ud-1 draining: true
}
