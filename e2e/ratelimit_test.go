package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// TestRolloutAtALowQPSKeepsItsLease: a rollout on a client limited to 2
// requests a second (a platform team sparing a shared API server) keeps
// its Lease through an eviction burst of a domain. The client's rate
// limiter serves its waiters in turn: with the evictions of a domain
// (Options.Concurrency, 32) queued there, a renewal of the Lease waited 16
// s, more than the third of the Lease's duration it may take, and a
// rollout run so (udrain rollout --kube-api-qps 2) lost its Lease and
// stopped 20 s into its first domain. udrain now keeps no more of its
// writes in flight than the limiter serves in 2 s. The Lease here lasts 12
// s (a renewal every 4 s, each given 4 s): the domain's evictions, more
// than 60 at 2 a second, take several Lease durations.
func TestRolloutAtALowQPSKeepsItsLease(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	const replicas = 180 // about 60 a domain
	web := webDeployment(s.tt.Name, replicas)
	if _, err := s.tt.Client.AppsV1().Deployments(s.tt.Name).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeploymentReady(t, s, web.Name, replicas)
	dom := s.nodes.UD(0)
	onDomain, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evictable := 0
	domainOf := s.domainOf()
	for _, p := range onDomain.Items {
		if domainOf[p.Spec.NodeName] == dom {
			evictable++
		}
	}
	const (
		qps  = 2
		lock = 12 * time.Second
	)
	// The burst must outlast the Lease many times over for the test to
	// say anything: evictions at qps a second.
	if burst := time.Duration(evictable/qps) * time.Second; burst < 2*lock {
		t.Fatalf("only %d pods on %s (%s of evictions at %d QPS), want a burst of two Lease durations (%s) at least", evictable, dom, burst, qps, 2*lock)
	}
	cfg := rest.CopyConfig(s.tt.Config)
	cfg.QPS, cfg.Burst = qps, 1
	slow, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	d := hookedDrainerOn(t, s, slow, "udrain-events.txt", events, eviction.Options{}, nil)
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-low-qps", Domains: []string{dom}, RecoveryTimeout: 3 * time.Minute,
		LockDuration: lock, Upgrade: func(context.Context, topology.Domain) error { return nil }})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("rollout at %d QPS: %v (after %s)", qps, err, took.Round(time.Second))
	}
	if lost := events.ofType(eviction.EventLockLost); len(lost) > 0 {
		t.Errorf("the rollout reported its Lease lost: %v", lost[0].Err)
	}
	if len(res.Domains) != 1 || res.Domains[0].Drain == nil {
		t.Fatalf("rollout result %+v, want domain %s drained", res.Domains, dom)
	}
	if c := res.Domains[0].Drain.Pods; c.Phase1Evicted+c.Phase2Evicted != evictable {
		t.Errorf("%d pods evicted (%+v), want the domain's %d", c.Phase1Evicted+c.Phase2Evicted, c, evictable)
	}
	t.Logf("%d pods of %s evicted at %d QPS in %s with a Lease of %s", evictable, dom, qps, took.Round(time.Second), lock)
}
