package eviction

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/udrain/udrain/internal/sickserver"
	"github.com/udrain/udrain/kubeclient"
)

// Issue 24, the library's side of cmd/udrain's TestSickAPIServer: against
// an API server that refuses connections, never answers, trickles its
// answers or fails every request with 500 or 429, every entry point of a
// Drainer returns within Options.ConnectTimeout (the caller's context has
// no deadline) with a *RetryError (ReasonUnreachable) that says how the server failed,
// and no request that would change anything reaches the server. The calls
// to one server start at once, one server after the other, so the table
// takes about five ConnectTimeouts: the 55 calls at once, with the race
// detector on one CPU, kept the probes from their answers for ConnectTimeout
// (the servers were then rightly said not to answer).
func TestSickAPIServerLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for timeouts")
	}
	const connect = 2 * time.Second
	const slack = 3 * time.Second // a busy machine
	calls := []struct {
		name string
		call func(ctx context.Context, d *Drainer) error
	}{
		{"Plan", func(ctx context.Context, d *Drainer) error { _, err := d.Plan(ctx, "ud-1"); return err }},
		{"Snapshot", func(ctx context.Context, d *Drainer) error { _, err := d.Snapshot(ctx); return err }},
		{"Drain", func(ctx context.Context, d *Drainer) error {
			_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
			return err
		}},
		{"Health", func(ctx context.Context, d *Drainer) error { _, err := d.Health(ctx); return err }},
		{"WaitHealthy", func(ctx context.Context, d *Drainer) error { _, err := d.WaitHealthy(ctx); return err }},
		{"Uncordon", func(ctx context.Context, d *Drainer) error { _, err := d.Uncordon(ctx, "ud-1"); return err }},
		{"Rollout", func(ctx context.Context, d *Drainer) error {
			_, err := d.Rollout(ctx, RolloutOptions{ID: "r"})
			return err
		}},
		{"PlanRollout", func(ctx context.Context, d *Drainer) error {
			_, err := d.PlanRollout(ctx, RolloutOptions{ID: "r"})
			return err
		}},
		{"RolloutStatus", func(ctx context.Context, d *Drainer) error {
			_, err := d.RolloutStatus(ctx, RolloutOptions{ID: "r"})
			return err
		}},
		{"Nodes", func(ctx context.Context, d *Drainer) error { _, err := d.Nodes(ctx); return err }},
		{"DaemonSets", func(ctx context.Context, d *Drainer) error { _, err := d.DaemonSets(ctx); return err }},
	}
	problems := map[string]kubeclient.ServerProblem{
		"closed port": kubeclient.ServerRefused, "black hole": kubeclient.ServerNoAnswer, "slow trickle": kubeclient.ServerNoAnswer,
		"500 forever": kubeclient.ServerFailing, "429 forever": kubeclient.ServerThrottled,
	}
	type outcome struct {
		err  error
		took time.Duration
	}
	servers := sickserver.All()
	urls := make([]string, len(servers))
	outcomes := make([][]outcome, len(servers))
	for i, s := range servers {
		var wg sync.WaitGroup
		urls[i] = s.Start(t)
		outcomes[i] = make([]outcome, len(calls))
		for j, c := range calls {
			client, err := kubernetes.NewForConfig(&rest.Config{Host: urls[i]})
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(client, Options{ConnectTimeout: connect})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				// A hang is cut off here, and reported as a context error.
				ctx, cancel := context.WithTimeout(context.Background(), connect+30*time.Second)
				defer cancel()
				start := time.Now()
				err := c.call(ctx, d)
				outcomes[i][j] = outcome{err: err, took: time.Since(start)}
			})
		}
		wg.Wait()
	}
	for i, s := range servers {
		for j, c := range calls {
			t.Run(s.Name+"/"+c.name, func(t *testing.T) {
				o := outcomes[i][j]
				t.Logf("after %s: %v", o.took.Round(10*time.Millisecond), o.err)
				var ue *RetryError
				if !asReason(o.err, &ue, ReasonUnreachable) {
					t.Fatalf("err = %v (%T), want a *RetryError (ReasonUnreachable)", o.err, o.err)
				}
				if ue.Problem != problems[s.Name] {
					t.Errorf("problem %q, want %q", ue.Problem, problems[s.Name])
				}
				if o.took > connect+slack {
					t.Errorf("took %s, want at most %s", o.took.Round(time.Millisecond), connect+slack)
				}
				msg := strings.ToLower(o.err.Error())
				if !strings.Contains(msg, strings.TrimPrefix(urls[i], "http://")) || !strings.Contains(msg, s.Cause) {
					t.Errorf("the error does not name the server %s and say %q", urls[i], s.Cause)
				}
			})
		}
		if n := s.Writes(); n > 0 {
			t.Errorf("%s: %d requests other than GET reached the server", s.Name, n)
		}
	}
}

// An API server that stops answering after udrain's informers listed the
// cluster (a black hole from then on) holds no write forever: each
// eviction and node patch is bounded by Options.RequestTimeout, retried,
// and after unansweredWrites in a row the drain fails with an
// *RetryError (ReasonUnreachable) naming the write, in a DomainError of the stage it
// stopped in. The caller's context has no deadline; before, the drain
// waited for the first write's answer forever.
func TestWritesTheServerLeavesUnanswered(t *testing.T) {
	const timeout = 100 * time.Millisecond
	fast := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}
	for _, tc := range []struct {
		name      string
		evictions bool // else the cordon patches go unanswered
		dryRuns   bool // the dry-run evictions go unanswered too
		wantWrite string
		wantStage Stage
	}{
		{name: "evictions", evictions: true, wantWrite: "the eviction of " + testNS + "/llm-0", wantStage: StagePhase1},
		{name: "node patches", wantWrite: "the patch of node node-1-1 (cordon)", wantStage: StageCordon},
		// The dry-run check before the cordon: nothing is changed yet.
		{name: "dry runs", evictions: true, dryRuns: true, wantStage: StageCordon},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			var attempts atomic.Int32
			opts := Options{Backoff: fast, RequestTimeout: timeout}
			if tc.evictions {
				// The eviction's request never comes back: it ends with
				// its context.
				opts.Evictor = Evictor(func(ctx context.Context, _ PlannedPod, o metav1.DeleteOptions) error {
					if len(o.DryRun) > 0 && !tc.dryRuns {
						return nil
					}
					attempts.Add(1)
					<-ctx.Done()
					return ctx.Err()
				})
			} else {
				// A fake clientset ignores the context: its answer comes
				// late, after the request's time ran out.
				fc.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					attempts.Add(1)
					time.Sleep(2 * timeout)
					return true, nil, errors.New("read tcp: i/o timeout")
				})
			}
			d, err := New(fc.client, opts)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := d.Drain(context.Background(), "ud-1", DrainOptions{})
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the drain still waits for the server after 30s")
			}
			var ue *RetryError
			var de *DomainError
			if !asReason(err, &ue, ReasonUnreachable) || ue.Problem != kubeclient.ServerNoAnswer || ue.Write != tc.wantWrite || !errors.As(err, &de) || de.Stage != tc.wantStage {
				t.Fatalf("err = %v; want an Unreachable RetryError (NoAnswer) of %q at %s", err, tc.wantWrite, tc.wantStage)
			}
			switch {
			case tc.wantWrite == "" && !strings.Contains(err.Error(), "did not answer (nothing was changed"):
				t.Errorf("message %q does not say that nothing was changed", err)
			case tc.wantWrite != "" && !strings.Contains(err.Error(), "did not answer "+tc.wantWrite):
				t.Errorf("message %q does not say which write went unanswered", err)
			}
			if tc.dryRuns {
				if n := nodePatches(fc); n != 0 {
					t.Errorf("%d node patches after an unanswered dry run, want none", n)
				}
			} else if n := int(attempts.Load()); n < unansweredWrites {
				t.Errorf("%d attempts, want at least %d", n, unansweredWrites)
			}
		})
	}
}

// The probe of a view's wait starts after probeAfter, or an eighth of a
// shorter ConnectTimeout: it has most of the timeout for its answer.
func TestProbeDelay(t *testing.T) {
	for _, tc := range []struct{ connect, want time.Duration }{
		{DefaultConnectTimeout, probeAfter},
		{8 * time.Second, time.Second},
		{2 * time.Second, 250 * time.Millisecond},
		{100 * time.Millisecond, 12500 * time.Microsecond},
	} {
		if got := probeDelay(tc.connect); got != tc.want {
			t.Errorf("probeDelay(%s) = %s, want %s", tc.connect, got, tc.want)
		}
	}
}
