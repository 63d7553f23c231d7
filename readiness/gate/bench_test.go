package gate

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/topology"
)

// go test -run '^$' -bench . -benchmem ./readiness/gate

func BenchmarkConditionFor(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts map[int][]podOption
	}{
		{"64-members-healthy", nil},
		{"64-members-8-unready", map[int][]podOption{3: {notReady}, 9: {notReady}, 17: {notReady}, 22: {notReady}, 30: {notReady}, 41: {notReady}, 50: {notReady}, 63: {notReady}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			groups := topology.FindGroups(lwsGroup("vllm", 0, 64, bc.opts))
			g := &groups[0]
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				ConditionFor(g, now)
			}
		})
	}
}

// BenchmarkReconcile reconciles 1,000 groups of 8 from a filled informer
// cache; one op is the whole pass over the 1,000 groups.
//
//   - steady: every leader already carries the right condition, the
//     common case (an event that changes nothing).
//   - every-group-writes: every leader needs a write; the fake clientset
//     answers the patch at once, so this measures the controller's side of a
//     write (building the patch, the client call, the fake's bookkeeping).
func BenchmarkReconcile(b *testing.B) {
	const groups, size = 1000, 8
	for _, bc := range []struct {
		name   string
		writes bool
	}{{"steady", false}, {"every-group-writes", true}} {
		b.Run(fmt.Sprintf("%d-groups-of-%d/%s", groups, size, bc.name), func(b *testing.B) {
			client := fake.NewClientset()
			client.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, &corev1.Pod{}, nil
			})
			c, err := New(client, Options{})
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			ids := make([]topology.GroupID, 0, groups)
			for g := range groups {
				pods := lwsGroup("vllm", g, size, nil)
				if !bc.writes {
					gs := topology.FindGroups(pods)
					pods[0].Status.Conditions = append(pods[0].Status.Conditions, ConditionFor(&gs[0], now))
				}
				for _, p := range pods {
					if err := c.pods.GetIndexer().Add(p); err != nil {
						b.Fatal(err)
					}
				}
				ids = append(ids, topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: testNamespace, Name: fmt.Sprintf("vllm-%d", g)})
			}
			want := syncUnchanged
			if bc.writes {
				want = syncWritten
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				for _, id := range ids {
					if r, err := c.sync(ctx, id); r != want || err != nil {
						b.Fatalf("sync %s: %v, %v; want %v", id, r, err, want)
					}
				}
				client.ClearActions()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups), "ns/group")
		})
	}
}
