package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

// preflightCluster is lwsCluster(2, 1, 2) with a group of two more
// namespaces, ns-a and ns-b, on ud-1's node (each with a budget over its
// leader): the drain of ud-1 sends three dry runs, one a namespace.
func preflightCluster(t *testing.T) *fakeCluster {
	t.Helper()
	objs := lwsCluster(2, 1, 2)
	for _, ns := range []string{"ns-a", "ns-b"} {
		for w := range 2 {
			objs = append(objs, runtime.Object(kube.LWSPod("app", 0, w, 2, kube.InNamespace(ns), kube.OnNode("node-1-1"),
				kube.WithUID(types.UID(fmt.Sprintf("%s-%d", ns, w))), kube.OwnedByStatefulSets)))
		}
		pdb := kube.LeaderPDB("app", 1, 1)
		pdb.Namespace = ns
		objs = append(objs, pdb)
	}
	return newFakeCluster(t, objs...)
}

// The preflight's dry runs go out together: one at a time, each waits
// behind every eviction of the other domains in flight in the client's
// rate limiter (a domain of the fleet waited 24 s before its cordon). The
// Evictor holds each dry run until all three have arrived; sent one at a
// time, each gives up waiting after 2 s and one is seen in flight.
func TestPreflightSendsItsDryRunsTogether(t *testing.T) {
	ctx := testContext(t)
	fc := preflightCluster(t)
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	api := EvictionAPI(fc.client)
	// The Evictor, not the fake clientset, holds the dry runs: the fake
	// answers one request at a time.
	hold := func(ctx context.Context, p PlannedPod, opts metav1.DeleteOptions) error {
		if len(opts.DryRun) > 0 {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			if inFlight == 3 {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(2 * time.Second):
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
		}
		return api(ctx, p, opts)
	}
	d, err := New(fc.client, Options{Evictor: hold})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Drain(ctx, "ud-1", DrainOptions{}); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if most != 3 {
		t.Errorf("at most %d dry runs in flight at once, want 3 (one a namespace, sent together)", most)
	}
}

// Sent together, the dry runs still report what one at a time in the
// plan's order would: the first namespace's refusal, even when a later
// namespace's refusal answers first; nothing is cordoned or evicted.
func TestPreflightReportsTheFirstRefusalInPlanOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused []string
	}{
		{"none", nil},
		{"the first namespace", []string{testNS}},
		{"a later namespace", []string{"ns-b"}},
		{"two, the later answering first", []string{"ns-a", "ns-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := preflightCluster(t)
			d, err := New(fc.client, Options{Backoff: wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := d.Plan(ctx, "ud-1")
			if err != nil {
				t.Fatal(err)
			}
			// The pod whose refusal is reported: the plan's first pod of
			// a refused namespace.
			var want *topology.PodRef
			for _, p := range plan.Pods() {
				if slices.Contains(tc.refused, p.Namespace) {
					want = &p.PodRef
					break
				}
			}
			fc.onEvict = func(ns, name string, dryRun bool) error {
				if !slices.Contains(tc.refused, ns) {
					return nil
				}
				if want != nil && ns == want.Namespace {
					// The first refusal answers last.
					time.Sleep(50 * time.Millisecond)
				}
				return webhookRefusal(true)
			}
			_, _, err = d.Drain(ctx, "ud-1", DrainOptions{})
			var got *topology.PodRef
			var pe *PermissionError
			if errors.As(err, &pe) {
				got = &pe.Pod
			} else if err != nil {
				t.Fatalf("Drain: %v, want nil or a *PermissionError", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refused pod reported (-want +got):\n%s\nerr = %v", diff, err)
			}
			if want != nil {
				if ev := fc.evicted(); len(ev) != 0 {
					t.Errorf("evicted %v after a refused dry run, want nothing", ev)
				}
				nodes, err := fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, node := range nodes.Items {
					if node.Spec.Unschedulable {
						t.Errorf("node %s cordoned after a refused dry run", node.Name)
					}
				}
			}
		})
	}
}
