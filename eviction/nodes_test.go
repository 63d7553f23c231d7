package eviction

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/watchlist"

	"github.com/udrain/udrain/topology"
)

// nodePatchMeter records, per kind of node patch, the most patches in
// flight at once. Each patch waits (up to a second) for as many others of
// its kind as the test expects, so a concurrent caller reaches the figure
// on any machine and a sequential one stays at 1.
type nodePatchMeter struct {
	want int

	mu       sync.Mutex
	cond     *sync.Cond
	inflight map[string]int
	max      map[string]int
}

func newNodePatchMeter(want int) *nodePatchMeter {
	m := &nodePatchMeter{want: want, inflight: map[string]int{}, max: map[string]int{}}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// meteredClient measures node patches on their way to the fake clientset,
// which runs its reactors one at a time and so cannot see concurrency.
type meteredClient struct {
	kubernetes.Interface
	m *nodePatchMeter
}

// IsWatchListSemanticsUnSupported passes on what the fake clientset says
// of itself: it cannot stream a list in a watch.
func (c meteredClient) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

func (c meteredClient) CoreV1() corev1client.CoreV1Interface {
	return meteredCore{c.Interface.CoreV1(), c.m}
}

type meteredCore struct {
	corev1client.CoreV1Interface
	m *nodePatchMeter
}

func (c meteredCore) Nodes() corev1client.NodeInterface {
	return meteredNodes{c.CoreV1Interface.Nodes(), c.m}
}

type meteredNodes struct {
	corev1client.NodeInterface
	m *nodePatchMeter
}

func (n meteredNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Node, error) {
	if len(opts.DryRun) == 0 {
		n.m.observe(string(data))
	}
	return n.NodeInterface.Patch(ctx, name, pt, data, opts, sub...)
}

func (m *nodePatchMeter) observe(patch string) {
	var kind string
	switch {
	case strings.Contains(patch, `"unschedulable":true`):
		kind = "cordon"
	case strings.Contains(patch, `"unschedulable":false`):
		kind = "uncordon"
	case strings.Contains(patch, UpgradedByAnnotation):
		kind = "mark"
	default:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight[kind]++
	m.max[kind] = max(m.max[kind], m.inflight[kind])
	m.cond.Broadcast()
	deadline := time.Now().Add(time.Second)
	go func() { time.Sleep(time.Second); m.cond.Broadcast() }()
	for m.max[kind] < m.want && time.Now().Before(deadline) {
		m.cond.Wait()
	}
	m.inflight[kind]--
}

// TestNodePatchesRunConcurrently: a rollout cordons, marks and uncordons a
// domain's nodes concurrently, never more at once than Concurrency.
func TestNodePatchesRunConcurrently(t *testing.T) {
	const nodesPer, size = 6, 2
	tests := []struct {
		concurrency int
		want        int // most patches of each kind in flight
	}{{1, 1}, {4, 4}, {16, nodesPer}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("concurrency=%d", tt.concurrency), func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(1, nodesPer, size)...)
			m := newNodePatchMeter(tt.want)
			d, err := New(meteredClient{fc.client, m}, Options{Backoff: slowBackoff, Concurrency: tt.concurrency})
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Rollout(ctx, RolloutOptions{ID: "r1", Upgrade: func(ctx context.Context, dom topology.Domain) error {
				fc.recreateGroup(ctx, 0, size, 1, nodesPer, 1)
				return nil
			}})
			if err != nil {
				t.Fatalf("Rollout: %v", err)
			}
			want := map[string]int{"cordon": tt.want, "mark": tt.want, "uncordon": tt.want}
			m.mu.Lock()
			got := m.max
			m.mu.Unlock()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("most node patches in flight at once (-want +got):\n%s", diff)
			}
			// Reported in the domain's order whatever the order of the answers.
			wantNodes := []string{"node-1-1", "node-1-2", "node-1-3", "node-1-4", "node-1-5", "node-1-6"}
			if diff := cmp.Diff(wantNodes, res.Domains[0].Drain.Cordoned); diff != "" {
				t.Errorf("cordoned (-want +got):\n%s", diff)
			}
		})
	}
}
