package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/watchlist"

	"github.com/udrain/udrain"
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
	total    map[string]int
	marked   int // uncordon patches that carry the upgraded mark
}

func newNodePatchMeter(want int) *nodePatchMeter {
	m := &nodePatchMeter{want: want, inflight: map[string]int{}, max: map[string]int{}, total: map[string]int{}}
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
	case strings.Contains(patch, udrain.UpgradedByAnnotation):
		kind = "mark"
	default:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total[kind]++
	if kind == "uncordon" && strings.Contains(patch, udrain.UpgradedByAnnotation) {
		m.marked++
	}
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

// TestNodePatchesRunConcurrently: a rollout cordons and uncordons a
// domain's nodes concurrently, never more at once than Concurrency, and
// sends two patches per node: the upgraded mark goes on one node before
// the uncordon, and with every uncordon patch.
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
			want := map[string]int{"cordon": tt.want, "mark": 1, "uncordon": tt.want}
			m.mu.Lock()
			got, total, marked := m.max, m.total, m.marked
			m.mu.Unlock()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("most node patches in flight at once (-want +got):\n%s", diff)
			}
			wantTotal := map[string]int{"cordon": nodesPer, "mark": 1, "uncordon": nodesPer}
			if diff := cmp.Diff(wantTotal, total); diff != "" {
				t.Errorf("node patches sent (-want +got):\n%s", diff)
			}
			if marked != nodesPer {
				t.Errorf("%d of %d uncordon patches carry the upgraded mark", marked, nodesPer)
			}
			// Reported in the domain's order whatever the order of the answers.
			wantNodes := []string{"node-1-1", "node-1-2", "node-1-3", "node-1-4", "node-1-5", "node-1-6"}
			if diff := cmp.Diff(wantNodes, res.Domains[0].Drain.Cordoned); diff != "" {
				t.Errorf("cordoned (-want +got):\n%s", diff)
			}
		})
	}
}

// A rollout stopped in the middle of a domain's uncordon (one node
// uncordoned, the others still cordoned and not yet marked) finds the
// domain upgraded when run again: it finishes the uncordon and moves on,
// without draining the domain or running its upgrade step again.
func TestRolloutStoppedInItsUncordonResumes(t *testing.T) {
	ctx := testContext(t)
	const domains, nodesPer, size = 2, 3, 2
	fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
	refused := false
	fc.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if pa.GetName() == "node-1-2" && strings.Contains(string(pa.GetPatch()), `"unschedulable":false`) && !refused {
			refused = true
			return true, nil, apierrors.NewBadRequest("refused once by the test")
		}
		return false, nil, nil
	})
	d, err := New(fc.client, Options{Backoff: slowBackoff, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var upgraded []string
	opts := RolloutOptions{ID: "r1", Upgrade: func(ctx context.Context, dom topology.Domain) error {
		upgraded = append(upgraded, dom.Name)
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, size, idx, nodesPer, domains)
		return nil
	}}
	_, err = d.Rollout(ctx, opts)
	var de *DomainError
	if !errors.As(err, &de) || de.Domain != "ud-1" || de.Stage != StageUncordon {
		t.Fatalf("first run: %v, want a DomainError of ud-1 at Uncordon", err)
	}
	nodes, _ := fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	var state []string
	for _, n := range nodes.Items {
		if n.Name == "node-1-1" || n.Name == "node-1-2" { // node-1-3 may or may not have been reached
			state = append(state, fmt.Sprintf("%s unschedulable=%t upgraded=%q", n.Name, n.Spec.Unschedulable, n.Annotations[udrain.UpgradedByAnnotation]))
		}
	}
	wantState := []string{`node-1-1 unschedulable=false upgraded="r1"`, `node-1-2 unschedulable=true upgraded=""`}
	if diff := cmp.Diff(wantState, state); diff != "" {
		t.Fatalf("ud-1 after the stop (-want +got):\n%s", diff)
	}
	evictedFirst := len(fc.evicted())

	res, err := d.Rollout(ctx, opts)
	if err != nil {
		t.Fatalf("resumed rollout: %v", err)
	}
	if got := []DomainState{res.Domains[0].State, res.Domains[1].State}; !cmp.Equal(got, []DomainState{StateSkipped, StateDone}) {
		t.Errorf("resumed rollout: domains %v, want ud-1 skipped and ud-2 done", got)
	}
	if diff := cmp.Diff([]string{"ud-1", "ud-2"}, upgraded); diff != "" {
		t.Errorf("upgrade steps run over both runs (-want +got):\n%s", diff)
	}
	if got := len(fc.evicted()) - evictedFirst; got != size {
		t.Errorf("resumed rollout evicted %d pods, want only ud-2's %d: %v", got, size, fc.evicted())
	}
	nodes, _ = fc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable || n.Annotations[udrain.CordonedByAnnotation] != "" || n.Annotations[udrain.UpgradedByAnnotation] != "r1" {
			t.Errorf("node %s after the resumed rollout: unschedulable=%v annotations=%v", n.Name, n.Spec.Unschedulable, n.Annotations)
		}
	}
}

// upgradedBy reads both marks: a domain is upgraded when every node is
// marked, or still cordoned by the rollout beside a marked node.
func TestUpgradedByReadsBothMarks(t *testing.T) {
	node := func(name, cordonedBy, upgradedBy string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
		if cordonedBy != "" {
			n.Annotations[udrain.CordonedByAnnotation] = cordonedBy
			n.Spec.Unschedulable = true
		}
		if upgradedBy != "" {
			n.Annotations[udrain.UpgradedByAnnotation] = upgradedBy
		}
		return n
	}
	dom := topology.Domain{Name: "ud-1", Nodes: []string{"a", "b"}}
	tests := []struct {
		name string
		a, b corev1.Node
		want bool
	}{
		{"both marked", node("a", "", "r1"), node("b", "", "r1"), true},
		{"one marked, one still cordoned by the rollout", node("a", "r1", "r1"), node("b", "r1", ""), true},
		{"cordoned by the rollout, none marked (stopped before the upgrade was recorded)", node("a", "r1", ""), node("b", "r1", ""), false},
		{"one marked, one new node with no mark", node("a", "", "r1"), node("b", "", ""), false},
		{"one marked, one cordoned by another rollout", node("a", "", "r1"), node("b", "r2", ""), false},
		{"marked by another rollout", node("a", "", "r2"), node("b", "", "r2"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := upgradedBy([]corev1.Node{tt.a, tt.b}, dom, "r1"); got != tt.want {
				t.Errorf("upgradedBy = %v, want %v", got, tt.want)
			}
		})
	}
}
