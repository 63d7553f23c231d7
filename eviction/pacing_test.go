package eviction

import (
	"context"
	"math"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestPacerSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		qps  float32
		want int
	}{
		{"the CLI's default: 2 s of 50 a second", 50, 100},
		{"a low rate", 2, 4},
		{"a fraction", 1.25, 3},
		{"under one in 2 s: one at a time", 0.1, 1},
		{"no limit: none", 0, 0},
		{"negative: none", -1, 0},
		{"infinite: none", float32(math.Inf(1)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pacerFor(tc.qps).size(); got != tc.want {
				t.Errorf("pacerFor(%v).size() = %d, want %d", tc.qps, got, tc.want)
			}
		})
	}
}

// The pacer reads the rate of the clientset's shared limiter; a client
// without one (a fake) is not paced.
func TestNewPacerReadsTheClientsRate(t *testing.T) {
	limited, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := newPacer(limited).size(); got != 10 {
		t.Errorf("pacer of a 5 QPS clientset allows %d writes in flight, want 10", got)
	}
	if p := newPacer(fake.NewClientset()); p != nil {
		t.Errorf("a fake clientset is paced (%d), want no pacer", p.size())
	}
	d, err := New(limited, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.s.pace.size(); got != 10 {
		t.Errorf("New's pacer allows %d, want 10", got)
	}
}

// write holds a slot for its request and no longer; a write waiting for a
// slot gives up with its context, and the wait is not RequestTimeout's
// (not a server that does not answer).
func TestWriteWaitsForASlot(t *testing.T) {
	s := &settings{Options: Options{RequestTimeout: 50 * time.Millisecond}, pace: pacerFor(0.5)} // one slot
	if s.pace.size() != 1 {
		t.Fatalf("pacer size %d, want 1", s.pace.size())
	}
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.write(context.Background(), func(ctx context.Context) error {
			close(inside)
			<-release
			return nil
		})
		done <- err
	}()
	<-inside
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ran := false
	timedOut, err := s.write(ctx, func(context.Context) error { ran = true; return nil })
	if ran || timedOut || err != context.DeadlineExceeded {
		t.Errorf("second write with the only slot held: ran %v, timedOut %v, err %v; want not run, not timed out, the context's error", ran, timedOut, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.write(context.Background(), func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("write after the slot came back: ran %v, err %v", ran, err)
	}
}
