package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// TestBaselineKubectlDrainNodeByNode is scenario 3: the same workload
// drained the way users do it today, node by node with
// k8s.io/kubectl/pkg/drain (cordon, drain, upgrade, uncordon, next node),
// then rolled with udrain. The test reports what it observed for both and
// fails unless udrain's figures are better: never worse on disruptions
// per group or on the fewest healthy groups, and strictly better on at
// least one of them.
func TestBaselineKubectlDrainNodeByNode(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()

	// kubectl drain, node by node, with the kubectl command's defaults
	// (its 5 s retry after a 429; the library's zero value would spin).
	h := &drain.Helper{
		Ctx: ctx, Client: s.tt.Client, GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, EvictErrorRetryDelay: 5 * time.Second,
		Timeout: 5 * time.Minute, Out: logWriter{t, "kubectl: "}, ErrOut: logWriter{t, "kubectl: "},
	}
	kStart := time.Now()
	for d := 0; d < s.nodes.UDs; d++ {
		for i := 0; i < s.nodes.PerUD; i++ {
			name := s.nodes.Name(d, i)
			node, err := s.tt.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := drain.RunCordonOrUncordon(h, node, true); err != nil {
				t.Fatalf("kubectl cordon %s: %v", name, err)
			}
			if err := drain.RunNodeDrain(h, name); err != nil {
				t.Fatalf("kubectl drain %s: %v", name, err)
			}
			time.Sleep(upgradeStep) // the same upgrade step as udrain's, per node
			node, err = s.tt.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := drain.RunCordonOrUncordon(h, node, false); err != nil {
				t.Fatalf("kubectl uncordon %s: %v", name, err)
			}
		}
	}
	kDuration := time.Since(kStart)
	s.waitHealthy(t, 3*time.Minute)
	kEnd := time.Now()
	kubectl := s.observeBetween(t, kStart, kEnd)

	// udrain on the same, recovered workload.
	events := &eventLog{}
	dr := s.drainer(t, events, eviction.Options{})
	uStart := time.Now()
	if _, err := dr.Rollout(ctx, eviction.RolloutOptions{
		ID: "baseline", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, dom topology.Domain) error { time.Sleep(upgradeStep); return nil },
	}); err != nil {
		t.Fatalf("udrain rollout: %v", err)
	}
	uDuration := time.Since(uStart)
	s.waitHealthy(t, time.Minute)
	udrain := s.observe(t, uStart)

	t.Logf("kubectl drain node by node: %s; took %s", kubectl, kDuration.Round(100*time.Millisecond))
	t.Logf("udrain rollout:             %s; took %s", udrain, uDuration.Round(100*time.Millisecond))

	minAvailable := s.lws.Groups - 1
	if udrain.MinHealthy < minAvailable {
		t.Errorf("udrain let the healthy groups fall to %d, below the PDB's minAvailable %d", udrain.MinHealthy, minAvailable)
	}
	for g := 0; g < s.lws.Groups; g++ {
		if udrain.Disruptions[g] != 1 {
			t.Errorf("udrain disrupted group %d %d times, want once", g, udrain.Disruptions[g])
		}
	}
	worse := udrain.totalDisruptions() > kubectl.totalDisruptions() || udrain.MinHealthy < kubectl.MinHealthy
	better := udrain.totalDisruptions() < kubectl.totalDisruptions() || udrain.MinHealthy > kubectl.MinHealthy
	if worse || !better {
		t.Errorf("udrain is not strictly better than kubectl drain: udrain %d disruptions / %d fewest healthy, kubectl %d / %d",
			udrain.totalDisruptions(), udrain.MinHealthy, kubectl.totalDisruptions(), kubectl.MinHealthy)
	}
}

// logWriter sends kubectl's output to the test log.
type logWriter struct {
	t      *testing.T
	prefix string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
