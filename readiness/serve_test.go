package readiness_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/readiness"
)

// startServe serves a checker of one healthy member with opts on a
// loopback port, and returns its address and a function that stops it and
// returns what Serve returned and how long the stop took.
func startServe(t *testing.T, opts readiness.ServeOptions) (addr string, stop func() (error, time.Duration)) {
	t.Helper()
	return startServeChecker(t, []readiness.Member{{Name: "leader", Check: fixed(nil)}}, readiness.Options{}, opts)
}

// startServeChecker is startServe with members and checker options.
func startServeChecker(t *testing.T, members []readiness.Member, copts readiness.Options, opts readiness.ServeOptions) (addr string, stop func() (error, time.Duration)) {
	t.Helper()
	c, err := readiness.NewChecker(members, copts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv, err := c.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- srv.Serve(ctx, ln) }()
	stopped := false
	stop = func() (error, time.Duration) {
		stopped = true
		start := time.Now()
		cancel()
		err := <-done
		return err, time.Since(start)
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return ln.Addr().String(), stop
}

// probe GETs /readyz as the kubelet does, on a connection of its own, and
// returns the status and how long the answer took.
func probe(addr string) (int, time.Duration, error) {
	start := time.Now()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, time.Since(start), err
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}

// stillOpen counts the connections the server has not closed: a read that
// times out means the connection is open, EOF or a reset that it is closed.
func stillOpen(conns []net.Conn) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	open := 0
	for _, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				mu.Lock()
				open++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return open
}

// The probe's budget in these tests: the kubelet's default timeoutSeconds.
const probeBudget = time.Second

// Hostile clients that open connections and hold them (idle, in the middle
// of a long header, after a header over the limit) cannot hold more than
// MaxConnections open, and a probe is still answered within its budget
// while they try. The timeouts
// are long here so that only the connection limit closes connections.
func TestServeBoundsHostileConnections(t *testing.T) {
	const limit = 16
	addr, stop := startServe(t, readiness.ServeOptions{MaxConnections: limit, ReadTimeout: time.Minute, IdleTimeout: time.Minute})
	var hostile []net.Conn
	t.Cleanup(func() {
		for _, c := range hostile {
			c.Close()
		}
	})
	for i := range 400 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		hostile = append(hostile, c)
		switch i % 4 {
		case 0: // idle: says nothing
		case 1: // a header that never ends
			fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Pad: %s", strings.Repeat("a", 2000))
		case 3: // a header over the limit: net/http answers 431 and lingers
			fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Pad: %s", strings.Repeat("a", 16<<10))
		case 2: // a kept-alive connection after one answered request
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(probeBudget))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				io.Copy(io.Discard, resp.Body)
			}
		}
		if i%50 == 49 {
			if code, took, err := probe(addr); err != nil || code != http.StatusOK || took > probeBudget {
				t.Errorf("probe after %d hostile connections: %d in %v (%v), want 200 within %v", i+1, code, took, err, probeBudget)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // let the server accept what the kernel queued
	if open := stillOpen(hostile); open > limit {
		t.Errorf("%d of %d hostile connections still open, want at most %d", open, len(hostile), limit)
	}
	if err, took := stop(); err != nil || took > readiness.DefaultShutdownTimeout+time.Second {
		t.Errorf("Serve returned %v after %v, want nil within the grace period", err, took)
	}
}

// A header over MaxHeaderBytes is refused (431) as soon as it passes the
// limit, without waiting for its end.
func TestServeLimitsHeaderSize(t *testing.T) {
	addr, _ := startServe(t, readiness.ServeOptions{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Pad: %s", strings.Repeat("a", 1<<20))
	c.SetReadDeadline(time.Now().Add(probeBudget))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a 1 MiB header: %v", err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", resp.StatusCode)
	}
}

// The header limit as documented (ServeOptions.MaxHeaderBytes, SECURITY.md):
// with the default of 4 KiB, net/http's 4 KiB of slack lets a header of 6
// KiB through, and one of 9 KiB gets 431.
func TestServeHeaderLimitAsMeasured(t *testing.T) {
	addr, _ := startServe(t, readiness.ServeOptions{})
	for _, tc := range []struct {
		pad  int
		want int
	}{{6 << 10, http.StatusOK}, {9 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/readyz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Pad", strings.Repeat("a", tc.pad))
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("a header of %d bytes: %v", tc.pad, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("a header of %d bytes: status %d, want %d", tc.pad, resp.StatusCode, tc.want)
		}
	}
}

// A POST with a large Content-Length and a body that trickles in gets 405
// at once, and its connection is closed without waiting for the body (after
// net/http's linger of 500 ms, which lets the answer reach the client before
// the close resets the connection); a GET with such a body is answered and
// closed the same way.
func TestServeDoesNotWaitForBodies(t *testing.T) {
	addr, stop := startServe(t, readiness.ServeOptions{ReadTimeout: time.Minute})
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		fmt.Fprintf(c, "%s /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nx", method)
		c.SetReadDeadline(time.Now().Add(probeBudget))
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", method, err)
		}
		io.Copy(io.Discard, resp.Body)
		answered := time.Since(start)
		want := http.StatusMethodNotAllowed
		if method == http.MethodGet {
			want = http.StatusOK
		}
		if resp.StatusCode != want || answered > probeBudget {
			t.Errorf("%s: status %d after %v, want %d within %v", method, resp.StatusCode, answered, want, probeBudget)
		}
		if _, err := r.ReadByte(); err != io.EOF {
			t.Errorf("%s: after the answer: %v, want the connection closed (EOF)", method, err)
		}
		// Closed after the linger, not at the minute's ReadTimeout (5 s
		// for a busy machine).
		if closed := time.Since(start); closed > 5*time.Second {
			t.Errorf("%s: connection held %v, want less than 5s", method, closed)
		}
	}
	if err, took := stop(); err != nil || took > time.Second {
		t.Errorf("Serve returned %v after %v, want nil at once", err, took)
	}
}

// A shutdown ends within its grace period and returns nil, whatever
// clients do: a header that never ends (which net/http's own Shutdown would
// wait for) is cut at once, and a request still waiting for a slow round of
// checks when the grace period ends is cut then.
func TestServeShutdownEndsInTime(t *testing.T) {
	const grace = 300 * time.Millisecond
	started := make(chan struct{})
	var once sync.Once
	slow := func(ctx context.Context) error { once.Do(func() { close(started) }); <-ctx.Done(); return ctx.Err() }
	// A check that would outlast any bound below: a shutdown waiting for
	// it takes a minute.
	addr, stop := startServeChecker(t, []readiness.Member{{Name: "slow", Check: slow}},
		readiness.Options{MemberTimeout: time.Minute, Timeout: time.Minute}, readiness.ServeOptions{ReadTimeout: time.Minute, ShutdownTimeout: grace})
	unfinished, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer unfinished.Close()
	fmt.Fprint(unfinished, "GET /readyz HTTP/1.1\r\nHost: x\r\n")
	waiting, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	fmt.Fprint(waiting, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
	select { // the request is being answered
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the request's round of checks did not start within a minute")
	}
	err, took := stop()
	if err != nil || took < grace || took > grace+5*time.Second {
		t.Errorf("Serve returned %v after %v, want nil after the grace period of %v", err, took, grace)
	}
	if open := stillOpen([]net.Conn{unfinished, waiting}); open != 0 {
		t.Errorf("%d connections still open after the shutdown", open)
	}
}

func TestServeOptionsErrors(t *testing.T) {
	c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: fixed(nil)}}, readiness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opts      readiness.ServeOptions
		wantField string
	}{
		{readiness.ServeOptions{MaxConnections: -1}, "readiness.ServeOptions.MaxConnections"},
		{readiness.ServeOptions{ReadTimeout: -1}, "readiness.ServeOptions.ReadTimeout"},
		// Issue 24: --max-header-bytes=2000000000 used to start serving.
		{readiness.ServeOptions{MaxHeaderBytes: 2000000000}, "readiness.ServeOptions.MaxHeaderBytes"},
		{readiness.ServeOptions{WriteTimeout: readiness.DefaultTimeout}, "readiness.ServeOptions.WriteTimeout"},
	} {
		_, err = c.NewServer(tt.opts)
		var ce *udrain.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.wantField {
			t.Errorf("NewServer(%+v) = %v, want a *udrain.ConfigError about %s", tt.opts, err, tt.wantField)
		}
	}
}

func TestServeOptionsConnectionMemory(t *testing.T) {
	if got, want := (readiness.ServeOptions{}).ConnectionMemory(), int64(readiness.DefaultMaxConnections*(readiness.DefaultMaxHeaderBytes+32<<10)); got != want {
		t.Errorf("default ConnectionMemory() = %d, want %d", got, want)
	}
	if got, want := (readiness.ServeOptions{MaxConnections: 2, MaxHeaderBytes: 1024}).ConnectionMemory(), int64(2*(1024+32<<10)); got != want {
		t.Errorf("ConnectionMemory() = %d, want %d", got, want)
	}
}
