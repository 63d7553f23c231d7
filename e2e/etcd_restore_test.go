package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/topology"
)

// TestEtcdRestoredMidRolloutStops is issue 24's etcd drill. etcd's state
// is saved as the rollout starts, and restored from that snapshot in the
// second domain's upgrade step, the way an operator restores a backup: the
// apiserver and etcd stopped, etcdutl snapshot restore, every component
// started again. The first domain's upgraded marks, the second domain's
// cordon and the evicted groups' new pods are gone, and the evicted pods
// are back.
//
// The rollout stops with a *HistoryChangedError and marks and evicts
// nothing after the restore (the upgrade step returns at once after it).
// Two restores are played:
//   - as Kubernetes' documentation asks, with --bump-revision and
//     --mark-compacted: resourceVersions go on growing and every watch is
//     told to list again (410); the marks that vanished tell. Run again
//     with the same ID, the rollout drains every domain again, none being
//     marked upgraded any more: in that run each group is disrupted once,
//     never two at once, each original pod is evicted once, and every node
//     ends upgraded and uncordoned.
//   - a plain restore: resourceVersions go back to the snapshot's; udrain's
//     read of a node before its upgraded mark tells. Watches that resume
//     from a resourceVersion the server has not reached yet wait for it and
//     then miss what came before, in every client-go controller: the
//     readiness-gate controller must see that its history went back and
//     stop (it is started again, as its Deployment would), or it would
//     never write a leader's condition again and the groups would not be
//     healthy again. The run after it is played as in the first restore.
//
// It is not parallel: a restore takes the whole cluster back in time.
func TestEtcdRestoredMidRolloutStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		// gateStops: the readiness-gate controller sees its history
		// go back (with the revision bumped it does not go back: every
		// watch gets a 410 and lists again).
		gateStops bool
	}{
		{"bump-revision", []string{"--bump-revision", "1000000000", "--mark-compacted"}, false},
		{"plain", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) { etcdRestoreDrill(t, tc.flags, tc.gateStops) })
	}
}

// gateHistoryCheck is how often the drill's readiness-gate controller
// checks its history (30 s by default).
const gateHistoryCheck = 2 * time.Second

func etcdRestoreDrill(t *testing.T, etcdutlFlags []string, gateStops bool) {
	tt := bed.ForTest(t)
	s := deployWithGate(t, tt, defaultScenario(), tt.Client, gate.Options{Namespace: tt.Name, HistoryCheck: gateHistoryCheck})
	ctx := t.Context()
	bed.SuperviseControlPlane(t)
	snapshot := filepath.Join(t.TempDir(), "etcd.db")
	second := s.nodes.UD(1)
	const id = "e2e-etcd-restore"

	var (
		mu         sync.Mutex
		snapErr    error
		restoreErr error
		restored   time.Time // when the restored cluster served
		took       time.Duration
	)
	var evictedAfter []string // evictions the API accepted after the restore
	evictor := eviction.Evictor(func(ctx context.Context, pod eviction.PlannedPod, opts metav1.DeleteOptions) error {
		err := eviction.EvictionAPI(s.tt.Client)(ctx, pod, opts)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && len(opts.DryRun) == 0 && !restored.IsZero() {
			evictedAfter = append(evictedAfter, pod.String())
		}
		return err
	})
	first := &eventLog{}
	d1 := hookedDrainer(t, s, "udrain-events-run1.txt", first, eviction.Options{Evictor: evictor}, func(e eviction.Event) {
		if e.Type == eviction.EventRolloutStarted {
			// Synchronous: nothing is cordoned or evicted before it is saved.
			err := bed.SnapshotEtcd(ctx, snapshot)
			mu.Lock()
			snapErr = err
			mu.Unlock()
		}
	})
	opts := eviction.RolloutOptions{
		ID: id, Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(uctx context.Context, dom topology.Domain) error {
			mu.Lock()
			again := !restored.IsZero()
			mu.Unlock()
			if dom.Name != second || again {
				return sleepCtx(uctx, upgradeStep)
			}
			// The test's context, not the step's: a restore is not left
			// half done.
			t0 := time.Now()
			err := bed.RestoreEtcd(ctx, snapshot, etcdutlFlags...)
			mu.Lock()
			restoreErr, restored, took = err, time.Now(), time.Since(t0)
			mu.Unlock()
			s.rec.Relist()
			return err
		},
	}
	res1, err := d1.Rollout(ctx, opts)
	mu.Lock()
	stoppedAfter := time.Since(restored)
	mu.Unlock()
	if snapErr != nil {
		t.Fatalf("saving etcd's state: %v", snapErr)
	}
	if errors.Is(restoreErr, testbed.ErrNotSupported) {
		t.Skip("this cluster's etcd cannot be restored from a test:", restoreErr)
	}
	if restoreErr != nil {
		t.Fatalf("restoring etcd: %v", restoreErr)
	}
	t.Logf("etcd restored in %s (the apiserver serving again); the rollout returned %s later", took.Round(10*time.Millisecond), stoppedAfter.Round(time.Millisecond))

	var de *eviction.DomainError
	var hc *udrain.HistoryChangedError
	if !errors.As(err, &de) || !errors.As(err, &hc) || de.Domain != second {
		t.Fatalf("first run: %v; want a *DomainError of %s with a *HistoryChangedError", err, second)
	}
	t.Logf("first run stopped at %s: %v", de.Stage, err)
	if res1 == nil || len(res1.Domains) != 3 || res1.Domains[0].State != eviction.StateDone || res1.Domains[1].State != eviction.StateFailed ||
		res1.Domains[2].State != eviction.StatePending {
		t.Errorf("first run: domains %s; want the first done, %s failed, the last pending", outcomes(res1), second)
	}
	if stoppedAfter > 30*time.Second {
		t.Errorf("the rollout stopped %s after the restore, want within 30s", stoppedAfter.Round(time.Millisecond))
	}
	mu.Lock()
	if len(evictedAfter) > 0 {
		t.Errorf("%d eviction(s) after the restore: %v", len(evictedAfter), evictedAfter)
	}
	mu.Unlock()
	// Nothing marked upgraded after the restore: the first domain's marks
	// are gone with it, and the second domain was never marked.
	nodes, err := s.tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if by, ok := n.Annotations[udrain.UpgradedByAnnotation]; ok {
			t.Errorf("node %s is marked upgraded by %s after the restore", n.Name, by)
		}
	}

	// The readiness-gate controller stops on the changed history (and
	// is started again), within a few of its checks.
	var restarts []gateRestart
	deadline := time.Now().Add(10 * gateHistoryCheck)
	for {
		restarts = s.gate.restarted()
		if len(restarts) > 0 || !gateStops || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case gateStops && len(restarts) == 0:
		t.Errorf("the readiness-gate controller did not stop on the changed history within %s of the restore", time.Since(restored).Round(time.Second))
	case !gateStops && len(restarts) > 0:
		t.Errorf("the readiness-gate controller stopped on a changed history after a restore that bumped the revision: %v", restarts[0].err)
	case gateStops:
		// The restore step returns once every component is started
		// again; the apiserver serves before that.
		t.Logf("the readiness-gate controller stopped at %s (the restore step returned at %s): %v",
			restarts[0].at.Format("15:04:05.000"), restored.Format("15:04:05.000"), restarts[0].err)
	}
	// The restored groups are whole again (their evicted pods are back),
	// and their leaders' conditions say so.
	s.waitHealthy(t, 2*time.Minute)
	resume := time.Now()
	again := &eventLog{}
	d2 := hookedDrainer(t, s, "udrain-events-run2.txt", again, eviction.Options{}, nil)
	res2, err := d2.Rollout(ctx, opts)
	if err != nil {
		t.Fatalf("the run after the restore: %v", err)
	}
	t.Logf("the run after the restore took %s", time.Since(resume).Round(time.Millisecond))
	for i, dom := range res2.Domains {
		if dom.State != eviction.StateDone {
			t.Errorf("the run after the restore: domain %d %s is %s, want done (none is marked upgraded any more)", i, dom.Domain, dom.State)
		}
	}
	s.waitHealthy(t, time.Minute)
	o := observeSettled(t, s, resume)
	t.Logf("the run after the restore: %s", o)
	checkEachGroupOnce(t, s, o)
	if got, want := len(o.Evicted), s.lws.Groups*s.lws.Size; got != want {
		t.Errorf("%d pods evicted after the restore, want %d (each pod once)", got, want)
	}
	checkUpgradedAndUncordoned(t, s, id)
}
