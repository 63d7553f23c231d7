package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/readiness/gate"
)

// BenchmarkLWSManagerGroups measures what the real LeaderWorkerSet manager
// costs, and how fast it works, at the scale of the fleet harness's
// groups: one LeaderWorkerSet of G groups of 8 pods of 4 GPUs (G from
// UDRAIN_LWS_BENCH_GROUPS, default 63, a quarter of the 2,000-node fleet's
// 250 groups) on G*4 8-GPU nodes, leaders gated by the readiness-gate
// controller. The setup reports how long LWS took to make every group whole
// and Ready (create-s) and the manager's CPU for it (create-lws-cpu-s).
// Each iteration deletes the leaders of 13 groups (a domain of the full
// fleet: 250 groups over 20 domains), as a domain's drain evicts them, and
// waits until LWS and the garbage collector have recreated them whole and
// Ready: ns/op is that, lws-cpu-s/op the manager's CPU; peak-rss-MiB its
// resident memory.
//
//	cd e2e && go test -run '^$' -bench LWSManagerGroups -benchtime 3x .
func BenchmarkLWSManagerGroups(b *testing.B) {
	groups := 63
	if v := os.Getenv("UDRAIN_LWS_BENCH_GROUPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 13 {
			b.Fatalf("UDRAIN_LWS_BENCH_GROUPS=%q: want a whole number of at least 13", v)
		}
		groups = n
	}
	ctx := b.Context()
	l, err := bed.LWS(ctx)
	if err != nil {
		b.Fatal(err)
	}
	pid := l.PID()
	tt := bed.ForTest(b)
	gpu := fixture.H100()
	nodes := fixture.Nodes{Pool: tt.Name, UDs: (groups*4 + 15) / 16, PerUD: 16, GPU: &gpu}
	if _, err := nodes.Create(ctx, tt.Client); err != nil {
		b.Fatal(err)
	}
	startGateController(b, tt.Client, gate.Options{Namespace: tt.Name})
	dyn, err := dynamic.NewForConfig(tt.Config)
	if err != nil {
		b.Fatal(err)
	}
	w := fixture.LeaderWorkerSet{Namespace: tt.Name, Name: "llm", Replicas: groups, Size: 8, Pool: tt.Name, GPUsPerPod: 4,
		Placement: fixture.PlaceNone, ReadyDelay: 2 * time.Second, TerminateDelay: time.Second, GracePeriodSeconds: 5}
	cpu0 := procCPU(b, pid)
	start := time.Now()
	if err := w.Create(ctx, tt.Client, dyn); err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	if _, err := w.WaitGroupsReady(wctx, tt.Client, groups); err != nil {
		b.Fatal(err)
	}
	created, createCPU := time.Since(start), procCPU(b, pid)-cpu0
	b.Logf("%d groups of 8 (%d pods) whole and Ready %s after the create; the manager's CPU %s", groups, groups*8, created.Round(100*time.Millisecond), createCPU)

	cpu := procCPU(b, pid)
	b.ResetTimer()
	for i := range b.N {
		for k := range 13 {
			g := (i*13 + k) % groups
			if err := tt.Client.CoreV1().Pods(tt.Name).Delete(ctx, w.LeaderName(g), metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.WaitGroupsReady(wctx, tt.Client, groups); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rss, _ := procStatusKiB(pid, "VmHWM")
	b.ReportMetric(created.Seconds(), "create-s")
	b.ReportMetric(createCPU.Seconds(), "create-lws-cpu-s")
	b.ReportMetric((procCPU(b, pid)-cpu).Seconds()/float64(b.N), "lws-cpu-s/op")
	b.ReportMetric(float64(rss)/1024, "peak-rss-MiB")
	fmt.Fprintf(os.Stderr, "LWS manager: peak RSS %d MiB\n", rss/1024)
}
