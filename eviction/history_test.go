package eviction

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/clusterview"
	"github.com/udrain/udrain/topology"
)

func TestHistoryNoticesAResourceVersionThatWentBack(t *testing.T) {
	node := func(uid, rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: types.UID(uid), ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name     string
		old, cur interface{}
		want     *wentBack
	}{
		{"went back", node("a", "1200"), node("a", "980"), &wentBack{object: "node n1", was: "1200", now: "980"}},
		{"went forward", node("a", "980"), node("a", "1200"), nil},
		{"the same (a resync)", node("a", "980"), node("a", "980"), nil},
		{"a number of more digits is larger", node("a", "99"), node("a", "100"), nil},
		{"another object of the same name", node("a", "1200"), node("b", "980"), nil},
		{"not decimal: not compared", node("a", "b"), node("a", "a"), nil},
		{"no version", node("a", "1200"), node("a", ""), nil},
		{"a pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "7"}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "6"}},
			&wentBack{object: "pod ns/p", was: "7", now: "6"}},
		{"a slim pod keeps no version", slimOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "7"}}),
			slimOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "6"}}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := (&Drainer{s: &settings{}}).newView(clusterview.Stores{})
			v.Handler().OnUpdate(tc.old, tc.cur)
			if diff := cmp.Diff(tc.want, v.hist.back(), cmp.AllowUnexported(wentBack{})); diff != "" {
				t.Errorf("went back (-want +got):\n%s", diff)
			}
		})
	}
	// Only the first is kept: it is the one that tells.
	var h history
	h.update(node("a", "5"), node("a", "4"))
	h.update(node("a", "9"), node("a", "2"))
	if b := h.back(); b == nil || b.was != "5" {
		t.Errorf("kept %+v, want the first (5 to 4)", b)
	}
}

// TestRolloutStopsWhenItsHistoryChanges plays what an etcd restore does to
// a rollout in the upgrade step of its second domain: the first domain's
// marks are gone (a restore with --bump-revision), or the cordon of the
// domain upgrading, or a node's resourceVersion went back. The rollout
// stops in that domain with a *HistoryChangedError saying which, and
// evicts nothing of the third domain.
func TestRolloutStopsWhenItsHistoryChanges(t *testing.T) {
	const domains, nodesPer, size = 3, 2, 4
	for _, tc := range []struct {
		name    string
		restore func(ctx context.Context, t *testing.T, fc *fakeCluster)
		want    udrain.HistoryChangedError
	}{{
		name: "the first domain's marks gone",
		restore: func(ctx context.Context, t *testing.T, fc *fakeCluster) {
			for _, n := range []string{"node-1-1", "node-1-2"} {
				patchNode(ctx, t, fc, n, `{"metadata":{"annotations":{"`+udrain.UpgradedByAnnotation+`":null,"`+udrain.UpgradedAtAnnotation+`":null}}}`)
			}
		},
		want: udrain.HistoryChangedError{ID: "restore", Domain: "ud-1"},
	}, {
		name: "the cordon of the domain upgrading gone",
		restore: func(ctx context.Context, t *testing.T, fc *fakeCluster) {
			patchNode(ctx, t, fc, "node-2-2", `{"metadata":{"annotations":{"`+udrain.CordonedByAnnotation+`":null}},"spec":{"unschedulable":false}}`)
		},
		want: udrain.HistoryChangedError{ID: "restore", Nodes: []string{"node-2-2"}},
	}, {
		name: "a node's resourceVersion went back",
		restore: func(ctx context.Context, t *testing.T, fc *fakeCluster) {
			// The fake clientset keeps the version it is given.
			n, err := fc.client.CoreV1().Nodes().Get(ctx, "node-3-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.ResourceVersion = "1000"
			if _, err := fc.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // seen by the view
			n.ResourceVersion = "12"
			if _, err := fc.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: udrain.HistoryChangedError{ID: "restore", Object: "node node-3-1", Seen: "1000", Server: "12"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(domains, nodesPer, size)...)
			log := newEventLog()
			d, err := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
			if err != nil {
				t.Fatal(err)
			}
			var restoredAt time.Time
			res, err := d.Rollout(ctx, RolloutOptions{ID: "restore", Upgrade: func(ctx context.Context, dom topology.Domain) error {
				idx := domainIndex(dom.Name)
				fc.recreateGroup(ctx, idx-1, size, idx, nodesPer, domains)
				if dom.Name != "ud-2" {
					return nil
				}
				tc.restore(ctx, t, fc)
				restoredAt = time.Now()
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(10 * time.Second):
					return errors.New("the upgrade step was not stopped within 10s of the restore")
				}
			}})
			var de *DomainError
			var hc *udrain.HistoryChangedError
			if !errors.As(err, &de) || !errors.As(err, &hc) {
				t.Fatalf("Rollout: %v, want a *DomainError with a *udrain.HistoryChangedError", err)
			}
			t.Logf("stopped %s after the change: %v", time.Since(restoredAt).Round(time.Millisecond), err)
			if de.Domain != "ud-2" || de.Stage != StageUpgrade {
				t.Errorf("stopped in %s at %s, want ud-2 at %s", de.Domain, de.Stage, StageUpgrade)
			}
			if diff := cmp.Diff(tc.want, *hc); diff != "" {
				t.Errorf("udrain.HistoryChangedError (-want +got):\n%s", diff)
			}
			for _, s := range []string{"went back in time", "etcd restore", "run the rollout again with the same ID"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error does not say %q: %v", s, err)
				}
			}
			if got := []DomainState{res.Domains[0].State, res.Domains[1].State, res.Domains[2].State}; !cmp.Equal(got, []DomainState{StateDone, StateFailed, StatePending}) {
				t.Errorf("domains %v, want done, failed, pending", got)
			}
			for _, e := range fc.evicted() {
				if strings.HasPrefix(e, testNS+"/g2-") {
					t.Errorf("evicted %s of the third domain after the change", e)
				}
			}
			stopped := log.ofType(EventRolloutStopped)
			if len(stopped) != 1 || !strings.Contains(stopped[0].Error, "went back in time") {
				t.Errorf("RolloutStopped events %+v, want one naming the change", stopped)
			}
		})
	}
}

func patchNode(ctx context.Context, t *testing.T, fc *fakeCluster, name, patch string) {
	t.Helper()
	if _, err := fc.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestConfirmHistoryReadsTheServer: before its upgraded mark, the rollout
// reads a node from the server; a copy older than its view's, or one
// without the cordon the view shows, is a changed history; a read that
// fails says nothing.
func TestConfirmHistoryReadsTheServer(t *testing.T) {
	viewNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1-1", UID: "n", ResourceVersion: "500",
		Annotations: map[string]string{udrain.CordonedByAnnotation: "r"}}}
	for _, tc := range []struct {
		name   string
		server *corev1.Node // nil: the read fails
		want   *udrain.HistoryChangedError
	}{
		{"the same", viewNode, nil},
		{"newer, still cordoned", withRV(viewNode, "600", true), nil},
		{"older", withRV(viewNode, "300", true), &udrain.HistoryChangedError{ID: "r", Object: "node node-1-1", Seen: "500", Server: "300"}},
		{"newer, the cordon gone", withRV(viewNode, "600", false), &udrain.HistoryChangedError{ID: "r", Nodes: []string{"node-1-1"}}},
		{"the read fails", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			fc.client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tc.server == nil {
					return true, nil, errors.New("boom")
				}
				return true, &corev1.NodeList{Items: []corev1.Node{*tc.server}}, nil
			})
			d, err := New(fc.client, Options{})
			if err != nil {
				t.Fatal(err)
			}
			nodes := cache.NewStore(cache.MetaNamespaceKeyFunc)
			v := d.newView(clusterview.Stores{Nodes: nodes})
			if err := nodes.Add(viewNode); err != nil {
				t.Fatal(err)
			}
			r := &rollout{d: d, id: "r", v: v}
			got := r.confirmHistory(context.Background(), []string{"node-1-1"})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func withRV(n *corev1.Node, rv string, cordoned bool) *corev1.Node {
	c := n.DeepCopy()
	c.ResourceVersion = rv
	if !cordoned {
		delete(c.Annotations, udrain.CordonedByAnnotation)
	}
	return c
}
