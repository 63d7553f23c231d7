package bootstrap

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/internal/testkit"
)

// A worker's init container log should show each new kind of failure once,
// a progress line every LogEvery attempts, and one line on success.
func TestWaitForServerLogging(t *testing.T) {
	// The server's answers, by request: 503 twice, 502 six times, then 200.
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := requests.Add(1); {
		case n <= 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		case n <= 8:
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	refused := testkit.ClosedAddr(t)

	// Attempts 1-2 fail to resolve, 3-4 are refused, the rest reach srv.
	var dials atomic.Int32
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		switch n := dials.Add(1); {
		case n <= 2:
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "gpustack-server.gpustack.svc", IsNotFound: true}}
		case n <= 4:
			return (&net.Dialer{}).DialContext(ctx, network, refused)
		}
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}

	type line struct {
		Msg        string
		Attempt    any
		Class      any
		StatusCode any
		HasDelay   bool
		HasHint    bool
	}
	tests := []struct {
		name     string
		logEvery int
		want     []line
	}{
		{
			name:     "every 5 attempts",
			logEvery: 5,
			want: []line{
				{Msg: "Server not reachable yet", Attempt: 1, Class: ClassDNSNotFound, HasDelay: true, HasHint: true},
				{Msg: "Server not reachable yet", Attempt: 3, Class: ClassConnectionRefused, HasDelay: true, HasHint: true},
				// A change and a multiple of 5: one line, the change.
				{Msg: "Server not reachable yet", Attempt: 5, Class: ClassHTTPStatus, StatusCode: 503, HasDelay: true, HasHint: true},
				// A new status is a change too.
				{Msg: "Server not reachable yet", Attempt: 7, Class: ClassHTTPStatus, StatusCode: 502, HasDelay: true, HasHint: true},
				{Msg: "Still waiting for server", Attempt: 10, Class: ClassHTTPStatus, StatusCode: 502, HasDelay: true},
				{Msg: "Server is reachable", StatusCode: 200},
			},
		},
		{
			name:     "no periodic lines",
			logEvery: -1,
			want: []line{
				{Msg: "Server not reachable yet", Attempt: 1, Class: ClassDNSNotFound, HasDelay: true, HasHint: true},
				{Msg: "Server not reachable yet", Attempt: 3, Class: ClassConnectionRefused, HasDelay: true, HasHint: true},
				{Msg: "Server not reachable yet", Attempt: 5, Class: ClassHTTPStatus, StatusCode: 503, HasDelay: true, HasHint: true},
				{Msg: "Server not reachable yet", Attempt: 7, Class: ClassHTTPStatus, StatusCode: 502, HasDelay: true, HasHint: true},
				{Msg: "Server is reachable", StatusCode: 200},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requests.Store(0)
			dials.Store(0)
			logger, lines := newCaptureLogger()
			opts := Options{LogEvery: tt.logEvery}
			opts.dial = dial
			r := runFake(t, klogContext(logger), "http://gpustack-server.gpustack.svc/healthz", opts, nil)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.result.Attempts != 13 {
				t.Fatalf("Attempts = %d, want 13", r.result.Attempts)
			}
			var got []line
			for _, l := range lines() {
				_, hasDelay := l.Values["nextDelay"]
				_, hasHint := l.Values["hint"]
				got = append(got, line{Msg: l.Msg, Attempt: l.Values["attempt"], Class: l.Values["class"], StatusCode: l.Values["statusCode"], HasDelay: hasDelay, HasHint: hasHint})
				if l.Values["target"] != "http://gpustack-server.gpustack.svc/healthz" {
					t.Errorf("line %q has target %v", l.Msg, l.Values["target"])
				}
				if _, ok := l.Values["elapsed"]; !ok {
					t.Errorf("line %q has no elapsed time", l.Msg)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("log lines (-want +got):\n%s", diff)
			}
			success := lines()[len(lines())-1]
			if success.Values["attempts"] != 13 || success.Values["elapsed"] != r.result.Elapsed.Round(time.Millisecond) {
				t.Errorf("success line %v, want attempts=13 elapsed=%v", success.Values, r.result.Elapsed)
			}
		})
	}
}

// With a plain context, WaitForServer logs nothing: a library writes only
// through the logger its caller put in the context, never klog's global
// one (which writes to stderr).
func TestWaitForServerPlainContextLogsNothing(t *testing.T) {
	var out bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&out)
	t.Cleanup(func() {
		klog.SetOutput(io.Discard)
		klog.LogToStderr(true)
	})
	_, err := WaitForServer(context.Background(), "tcp://"+testkit.ClosedAddr(t), Options{MaxAttempts: 2, Backoff: wait.Backoff{Duration: time.Millisecond}})
	if err == nil {
		t.Fatal("a closed port answered")
	}
	klog.Flush()
	if out.Len() > 0 {
		t.Errorf("klog's global logger got:\n%s", out.String())
	}
}
