package bootstrap

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/internal/testkit"
)

const ms = time.Millisecond

// The delays between attempts follow Options.Backoff, and the waiter sleeps
// exactly that long (runFake checks it does not wake up a nanosecond early).
// Every test here runs on a fake clock: nothing sleeps.
func TestWaitForServerBackoffDelays(t *testing.T) {
	tests := []struct {
		name        string
		backoff     wait.Backoff
		maxAttempts int
		want        []time.Duration // NextDelay of each attempt
	}{
		{
			name:        "doubling to the cap",
			backoff:     wait.Backoff{Duration: 250 * ms, Factor: 2, Cap: 2 * time.Second},
			maxAttempts: 7,
			want:        []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 0},
		},
		{
			name:        "constant",
			backoff:     wait.Backoff{Duration: time.Second},
			maxAttempts: 4,
			want:        []time.Duration{time.Second, time.Second, time.Second, 0},
		},
		{
			name:        "steps stop the growth",
			backoff:     wait.Backoff{Duration: 100 * ms, Factor: 3, Steps: 2},
			maxAttempts: 5,
			want:        []time.Duration{100 * ms, 300 * ms, 900 * ms, 900 * ms, 0},
		},
		{
			name:        "cap not a multiple of the duration",
			backoff:     wait.Backoff{Duration: 300 * ms, Factor: 2, Cap: time.Second},
			maxAttempts: 5,
			want:        []time.Duration{300 * ms, 600 * ms, time.Second, time.Second, 0},
		},
	}
	addr := testkit.ClosedAddr(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFake(t, context.Background(), "tcp://"+addr, Options{Backoff: tt.backoff, MaxAttempts: tt.maxAttempts}, nil)
			var got []time.Duration
			var sum time.Duration
			for _, a := range r.attempts {
				got = append(got, a.NextDelay)
				sum += a.NextDelay
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
			var we *WaitError
			if !errors.As(r.err, &we) || we.Attempts != tt.maxAttempts || we.Elapsed != sum {
				t.Errorf("err = %v, want a WaitError after %d attempts and %v", r.err, tt.maxAttempts, sum)
			}
		})
	}
}

// The default backoff grows 250ms, 500ms, 1s, 2s, then stays at 2s, each
// delay stretched by 0 to 20% at random.
func TestWaitForServerDefaultBackoffJitter(t *testing.T) {
	base := []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}
	r := runFake(t, context.Background(), "tcp://"+testkit.ClosedAddr(t), Options{MaxAttempts: len(base) + 1}, nil)
	if len(r.attempts) != len(base)+1 {
		t.Fatalf("got %d attempts, want %d", len(r.attempts), len(base)+1)
	}
	distinct := map[time.Duration]bool{}
	for i, b := range base {
		d := r.attempts[i].NextDelay
		if d < b || d > b+b/5 {
			t.Errorf("attempt %d: delay %v outside [%v, %v]", i+1, d, b, b+b/5)
		}
		distinct[d] = true
	}
	if len(distinct) < 4 {
		t.Errorf("delays %v: expected jitter to make them differ", distinct)
	}
}

// With Options.Timeout, attempts go on until the deadline: when the
// backoff's next delay would pass it, a last attempt starts the first delay
// before it, and the wait ends when that one fails, without sleeping until
// the deadline. (A 3 s timeout once gave up after 1.96 s, at the fourth
// attempt, since the fifth was 2 s of backoff away.)
func TestWaitForServerTimeoutOnFakeClock(t *testing.T) {
	b := wait.Backoff{Duration: 250 * ms, Factor: 2, Cap: 2 * time.Second}
	tests := []struct {
		name         string
		timeout      time.Duration
		attempt      time.Duration // Options.AttemptTimeout
		wantAttempts int
		wantElapsed  time.Duration
	}{
		// Attempts at 0, 0.25s, 0.75s, 1.75s; the next would be at 3.75s,
		// so the last starts at 2.75s, 250ms (the first delay) before the
		// deadline.
		{name: "3s", timeout: 3 * time.Second, wantAttempts: 5, wantElapsed: 2750 * ms},
		// The last attempt starts an attempt timeout before the deadline
		// when that is shorter than the first delay.
		{name: "3s, attempts of 100ms", timeout: 3 * time.Second, attempt: 100 * ms, wantAttempts: 5, wantElapsed: 2900 * ms},
		// The next attempt would start exactly at the deadline: the last
		// starts at 1.5s instead.
		{name: "deadline at an attempt", timeout: 1750 * ms, wantAttempts: 4, wantElapsed: 1500 * ms},
		// The delays fit: attempts at 0, 0.25s, 0.75s and 1.75s, the last
		// moment an attempt can still be answered.
		{name: "delays that fit", timeout: 2 * time.Second, wantAttempts: 4, wantElapsed: 1750 * ms},
		{name: "shorter than the first delay", timeout: 100 * ms, wantAttempts: 1, wantElapsed: 0},
	}
	addr := testkit.ClosedAddr(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFake(t, context.Background(), "tcp://"+addr, Options{Backoff: b, Timeout: tt.timeout, AttemptTimeout: tt.attempt}, nil)
			var we *WaitError
			if !errors.As(r.err, &we) {
				t.Fatalf("err = %v, want a *WaitError", r.err)
			}
			got := []any{we.Attempts, we.Elapsed, we.Class, errors.Is(r.err, context.DeadlineExceeded)}
			want := []any{tt.wantAttempts, tt.wantElapsed, ClassConnectionRefused, true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("[attempts elapsed class deadline] (-want +got):\n%s", diff)
			}
			if last := r.attempts[len(r.attempts)-1]; last.NextDelay != 0 {
				t.Errorf("last attempt reports NextDelay %v, want 0 when giving up", last.NextDelay)
			}
		})
	}
}
