package bootstrap

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"
)

// fakeRun is the outcome of runFake.
type fakeRun struct {
	result   *Result
	err      error
	attempts []Attempt
	// elapsed is how far the fake clock moved.
	elapsed time.Duration
}

// runFake runs WaitForServer with a fake clock and drives it: after each
// failed attempt it calls between (if set; it returns false to leave the
// clock alone, e.g. after canceling ctx), then advances the clock by exactly
// the attempt's NextDelay. It checks on the way that the waiter does not
// wake up a nanosecond early. The network calls themselves are real.
func runFake(t *testing.T, ctx context.Context, target string, opts Options, between func(Attempt) bool) fakeRun {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := testclock.NewFakeClock(start)
	opts.Clock = fc
	attempts := make(chan Attempt)
	opts.OnAttempt = func(a Attempt) { attempts <- a }
	done := make(chan fakeRun, 1)
	go func() {
		r, err := WaitForServer(ctx, target, opts)
		done <- fakeRun{result: r, err: err}
	}()

	var seen []Attempt
	for {
		select {
		case a := <-attempts:
			seen = append(seen, a)
			if between != nil && !between(a) {
				continue
			}
			if a.NextDelay <= 0 {
				continue
			}
			waitForTimer(t, fc)
			fc.Step(a.NextDelay - time.Nanosecond)
			if !fc.HasWaiters() {
				t.Fatalf("attempt %d: the waiter woke up before its NextDelay %v", a.Number, a.NextDelay)
			}
			fc.Step(time.Nanosecond)
		case r := <-done:
			r.attempts = seen
			r.elapsed = fc.Since(start)
			return r
		case <-time.After(30 * time.Second):
			t.Fatalf("WaitForServer neither attempted nor returned in 30s; attempts so far: %+v", seen)
		}
	}
}

// waitForTimer blocks until the waiter has armed its timer on fc. This is
// synchronisation with another goroutine, not a timing assertion.
func waitForTimer(t *testing.T, fc *testclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never armed its backoff timer")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// logLine is one captured log call.
type logLine struct {
	Msg    string
	Values map[string]any
}

// captureSink is a logr.LogSink that records every Info call with its
// key/value pairs (WithValues included).
type captureSink struct {
	mu     *sync.Mutex
	lines  *[]logLine
	values []any
}

func newCaptureLogger() (logr.Logger, func() []logLine) {
	s := &captureSink{mu: &sync.Mutex{}, lines: &[]logLine{}}
	return logr.New(s), func() []logLine {
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]logLine(nil), *s.lines...)
	}
}

func (s *captureSink) Init(logr.RuntimeInfo)  {}
func (s *captureSink) Enabled(level int) bool { return true }
func (s *captureSink) Info(level int, msg string, kv ...any) {
	s.record(msg, kv)
}
func (s *captureSink) Error(err error, msg string, kv ...any) {
	s.record(msg, append([]any{"error", err}, kv...))
}
func (s *captureSink) record(msg string, kv []any) {
	all := append(append([]any(nil), s.values...), kv...)
	values := make(map[string]any, len(all)/2)
	for i := 0; i+1 < len(all); i += 2 {
		values[all[i].(string)] = all[i+1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.lines = append(*s.lines, logLine{Msg: msg, Values: values})
}
func (s *captureSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	return &c
}
func (s *captureSink) WithName(string) logr.LogSink { return s }

// fakeDNS is a DNS server on 127.0.0.1 that answers every query with one
// response code (3 NXDOMAIN, 2 SERVFAIL), or never answers (rcode < 0).
type fakeDNS struct {
	conn    net.PacketConn
	queries chan struct{}
}

func startFakeDNS(t *testing.T, rcode int) *fakeDNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{conn: conn, queries: make(chan struct{}, 1024)}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			select {
			case d.queries <- struct{}{}:
			default:
			}
			if rcode < 0 || n < 12 {
				continue
			}
			// Echo the query (header, question, EDNS record) as the
			// response: set QR and RA, keep RD, set the response code.
			resp := append([]byte(nil), buf[:n]...)
			resp[2] |= 0x80
			resp[3] = 0x80 | byte(rcode)
			_, _ = conn.WriteTo(resp, from)
		}
	}()
	return d
}

// dialer returns a dial function whose name lookups go to d.
func (d *fakeDNS) dialer() func(ctx context.Context, network, address string) (net.Conn, error) {
	r := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "udp", d.conn.LocalAddr().String())
		},
	}
	return (&net.Dialer{Resolver: r}).DialContext
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// klogContext returns a context carrying logger, as a caller would pass it.
func klogContext(logger logr.Logger) context.Context {
	return klog.NewContext(context.Background(), logger)
}
