package eviction

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/internal/sickserver"
)

// Issue 24, the library's side of cmd/udrain's TestSickAPIServer: against
// an API server that refuses connections, never answers, trickles its
// answers or fails every request with 500 or 429, every entry point of a
// Drainer returns within Options.ConnectTimeout (the caller's context has
// no deadline) with an *UnreachableError that says how the server failed,
// and no request that would change anything reaches the server. All runs
// start at once, so the table takes about ConnectTimeout.
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
			_, err := d.RolloutStatus(ctx, "r", RolloutStatusOptions{})
			return err
		}},
	}
	problems := map[string]ServerProblem{
		"closed port": ServerRefused, "black hole": ServerNoAnswer, "slow trickle": ServerNoAnswer,
		"500 forever": ServerFailing, "429 forever": ServerThrottled,
	}
	type outcome struct {
		err  error
		took time.Duration
	}
	servers := sickserver.All()
	urls := make([]string, len(servers))
	outcomes := make([][]outcome, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
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
	}
	wg.Wait()
	for i, s := range servers {
		for j, c := range calls {
			t.Run(s.Name+"/"+c.name, func(t *testing.T) {
				o := outcomes[i][j]
				t.Logf("after %s: %v", o.took.Round(10*time.Millisecond), o.err)
				var ue *UnreachableError
				if !errors.As(o.err, &ue) {
					t.Fatalf("err = %v (%T), want an *UnreachableError", o.err, o.err)
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
