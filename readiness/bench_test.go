package readiness_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udrain/udrain/readiness"
)

// benchMembers returns n HTTP members served by one local server, each
// answering 200 after delay, except member hang, which never answers. The
// returned counters count the requests per member.
func benchMembers(b *testing.B, n, hang int, delay time.Duration) ([]readiness.Member, []atomic.Int64) {
	b.Helper()
	counts := make([]atomic.Int64, n)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/m/"))
		if err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		counts[i].Add(1)
		if i == hang {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		if delay > 0 {
			time.Sleep(delay)
		}
	}))
	b.Cleanup(srv.Close)
	b.Cleanup(func() { close(release) })
	members := make([]readiness.Member, n)
	for i := range members {
		members[i] = readiness.Member{Name: fmt.Sprintf("w-%d", i), Check: readiness.HTTPCheck(fmt.Sprintf("%s/m/%d", srv.URL, i))}
	}
	return members, counts
}

// checkSequentially checks members one after another, the way
// controller-runtime's healthz handler runs its checks, but more kindly: each
// check gets the member timeout (controller-runtime gives none, so a hanging
// check holds the probe until the kubelet gives up).
func checkSequentially(ctx context.Context, members []readiness.Member, memberTimeout time.Duration) []error {
	errs := make([]error, len(members))
	for i, m := range members {
		ctx, cancel := context.WithTimeout(ctx, memberTimeout)
		errs[i] = m.Check(ctx)
		cancel()
	}
	return errs
}

// BenchmarkFanOut64OneHanging measures, side by side in one run, how long a
// probe over 64 HTTP members with one hanging takes when the members are
// checked concurrently (Checker, no cache) and one after another. It fails if
// the concurrent latency exceeds the member timeout by more than 50 ms.
//
//	go test -run='^$' -bench=FanOut64OneHanging -benchtime=20x ./readiness
func BenchmarkFanOut64OneHanging(b *testing.B) {
	const memberTimeout = 100 * time.Millisecond
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		b.Run("member-delay="+delay.String(), func(b *testing.B) {
			members, _ := benchMembers(b, 64, 32, delay)
			c, err := readiness.NewChecker(members, readiness.Options{MemberTimeout: memberTimeout, Timeout: memberTimeout + 50*time.Millisecond, TTL: -1})
			if err != nil {
				b.Fatal(err)
			}
			var concurrent, sequential, worst time.Duration
			iterations := 0
			for b.Loop() {
				start := time.Now()
				r := c.Check(b.Context())
				took := time.Since(start)
				concurrent += took
				worst = max(worst, took)
				if r.Ready() {
					b.Fatal("ready with a hanging member")
				}

				start = time.Now()
				errs := checkSequentially(b.Context(), members, memberTimeout)
				sequential += time.Since(start)
				if errs[32] == nil {
					b.Fatal("sequential check passed a hanging member")
				}
				iterations++
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(iterations) }
			b.ReportMetric(ms(concurrent), "concurrent-ms/op")
			b.ReportMetric(ms(sequential), "sequential-ms/op")
			b.ReportMetric(float64(sequential)/float64(concurrent), "sequential/concurrent")
			b.ReportMetric(float64(worst)/float64(time.Millisecond), "concurrent-worst-ms")
			if limit := memberTimeout + 50*time.Millisecond; worst > limit {
				b.Errorf("concurrent fan-out took up to %v, want at most the member timeout + 50ms = %v", worst, limit)
			}
		})
	}
}

// BenchmarkProbeBurst1000 sends 1,000 concurrent probes over HTTP to a
// fresh checker of 64 HTTP members and counts the checks the members see. It
// fails if a member is checked more than once per TTL.
//
//	go test -run='^$' -bench=ProbeBurst1000 -benchtime=20x ./readiness
func BenchmarkProbeBurst1000(b *testing.B) {
	const probes, n = 1000, 64
	members, counts := benchMembers(b, n, -1, 0)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: probes, MaxConnsPerHost: probes}}
	var checks int64
	iterations := 0
	for b.Loop() {
		b.StopTimer()
		for i := range counts {
			counts[i].Store(0)
		}
		c, err := readiness.NewChecker(members, readiness.Options{})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(c.Handler())
		b.StartTimer()

		start := time.Now()
		var wg sync.WaitGroup
		for range probes {
			wg.Go(func() {
				resp, err := client.Get(srv.URL + "/readyz")
				if err != nil {
					b.Error(err)
					return
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("probe got %d, want 200", resp.StatusCode)
				}
			})
		}
		wg.Wait()
		took := time.Since(start)

		b.StopTimer()
		srv.Close()
		client.CloseIdleConnections()
		allowed := 1 + int64(took/readiness.DefaultTTL)
		for i := range counts {
			got := counts[i].Load()
			checks += got
			if got > allowed {
				b.Errorf("member %d checked %d times in a burst of %v, want at most %d (one per TTL)", i, got, took, allowed)
			}
		}
		iterations++
		b.StartTimer()
	}
	b.ReportMetric(float64(checks)/float64(iterations*n), "checks/member/burst")
}
