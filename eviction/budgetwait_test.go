package eviction

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// attemptCounter counts the real (not dry-run) eviction requests per pod,
// and when each was made.
type attemptCounter struct {
	mu sync.Mutex
	n  map[string]int
	at map[string][]time.Time
}

// times returns when name's eviction requests were made.
func (c *attemptCounter) times(name string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at[name]...)
}

func (c *attemptCounter) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// A budget-refused eviction waits for its watched budget, not for a timer:
// while the watch shows the budget spent it is not retried (the API server
// would refuse it from the same status) until BudgetRecheck passes, it is
// retried as soon as the status allows a disruption, and a refusal while
// the watched status allowed one (the watch behind the API server) is
// retried on the backoff.
func TestBudgetRefusedEvictionWaitsForItsBudget(t *testing.T) {
	fast := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}
	tests := []struct {
		name    string
		recheck time.Duration
		allowed int32 // the budget's status when the drain starts
		// refuseFirst: the API server refuses the leader's first eviction
		// whatever the status says (its view is ahead of the watch).
		refuseFirst bool
		// hold is how long the budget stays spent before it frees (0: it
		// never frees in the test).
		hold time.Duration
		// minAttempts and maxAttempts bound the leader's eviction
		// requests when the drain is done. When the budget never frees,
		// the test waits for minAttempts requests instead and checks
		// their spacing (maxAttempts unused).
		minAttempts, maxAttempts int
	}{
		{name: "spent budget freed on the watch: one refusal, one eviction", recheck: time.Hour, hold: 600 * time.Millisecond, minAttempts: 2, maxAttempts: 2},
		{name: "spent budget that stays spent: retried every BudgetRecheck, not on the backoff", recheck: 150 * time.Millisecond, hold: 0, minAttempts: 4},
		{name: "refused while the watch allowed: retried on the backoff", recheck: time.Hour, allowed: 1, refuseFirst: true, minAttempts: 2, maxAttempts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			fc.setBudget(ctx, tt.allowed, 2)
			c := &attemptCounter{n: map[string]int{}, at: map[string][]time.Time{}}
			fc.onEvict = func(ns, name string, dryRun bool) error {
				if dryRun {
					return nil
				}
				c.mu.Lock()
				c.n[name]++
				c.at[name] = append(c.at[name], time.Now())
				first := c.n[name] == 1
				c.mu.Unlock()
				if tt.refuseFirst && first && name == "llm-0" {
					err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
					err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
						Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget llm-leaders is still being processed by the server"})
					return err
				}
				return nil
			}
			log := newEventLog()
			d, err := New(fc.client, Options{Backoff: fast, BudgetRecheck: tt.recheck, OnEvent: log.add})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
				done <- err
			}()
			if tt.allowed == 0 {
				log.waitFor(t, "Blocked", func(e Event) bool { return e.Type == EventBlocked })
				if tt.hold == 0 {
					// Retried, again and again, each retry at least
					// BudgetRecheck after the one before: a timer
					// fires no earlier than its delay, however loaded
					// the machine, and the 10ms backoff would make the
					// gaps shorter. (How many retries fit in a second
					// of wall time is the machine's business.)
					if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
						return c.of("llm-0") >= tt.minAttempts, nil
					}); err != nil {
						t.Fatalf("%d eviction requests for the leader within 20s with BudgetRecheck %v, want %d: not retried",
							c.of("llm-0"), tt.recheck, tt.minAttempts)
					}
					at := c.times("llm-0")
					for i := 1; i < len(at); i++ {
						if gap := at[i].Sub(at[i-1]); gap < tt.recheck {
							t.Errorf("eviction request %d for the leader %v after the one before, want at least BudgetRecheck %v (not the %v backoff)",
								i+1, gap, tt.recheck, fast.Duration)
						}
					}
					fc.setBudget(ctx, 1, 2)
					if err := <-done; err != nil {
						t.Fatal(err)
					}
					return
				}
				time.Sleep(tt.hold)
				if got := c.of("llm-0"); got != 1 {
					t.Errorf("%d eviction requests for the leader while its watched budget was spent for %v (backoff %v), want 1", got, tt.hold, fast.Duration)
				}
				freed := time.Now()
				fc.setBudget(ctx, 1, 2)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				ev := log.waitFor(t, "leader evicted", func(e Event) bool { return e.Type == EventEvicted && e.Pod != nil && e.Pod.Name == "llm-0" })
				// At once: the watch, not the hour's BudgetRecheck (10 s
				// for a busy machine).
				if lag := ev.Time.Sub(freed); lag > 10*time.Second {
					t.Errorf("leader evicted %v after its budget freed, want at once (the watch, not the %v BudgetRecheck)", lag, tt.recheck)
				}
			} else if err := <-done; err != nil {
				t.Fatal(err)
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("drain took %v", time.Since(start))
			}
			if got := c.of("llm-0"); got < tt.minAttempts || got > tt.maxAttempts {
				t.Errorf("%d eviction requests for the leader, want %d to %d", got, tt.minAttempts, tt.maxAttempts)
			}
			if got := strings.Join(fc.evicted(), " "); got != "inference/llm-0 inference/llm-0-1" {
				t.Errorf("evicted %s, want the leader then its worker", got)
			}
		})
	}
}
