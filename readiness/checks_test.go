package readiness_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
)

// newStatusServer returns a member that answers every request with code and
// body.
func newStatusServer(t testing.TB, code int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newHangingServer returns a member that accepts connections and never
// answers, until the client gives up or the test ends.
func newHangingServer(t testing.TB) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

// checkOutcome is what a test can tell about one check's result.
type checkOutcome struct {
	Class      readiness.Class
	StatusCode int // of an *HTTPStatusError
	Timeout    bool
	Config     bool // a *ConfigError
}

func outcome(err error) checkOutcome {
	o := checkOutcome{Class: readiness.ClassOf(err), Timeout: errors.Is(err, context.DeadlineExceeded)}
	var status *readiness.HTTPStatusError
	if errors.As(err, &status) {
		o.StatusCode = status.StatusCode
	}
	var config *udrain.ConfigError
	o.Config = errors.As(err, &config)
	return o
}

func TestHTTPCheck(t *testing.T) {
	var redirectTargetHits atomic.Int32
	redirectTarget := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { redirectTargetHits.Add(1) }))
	t.Cleanup(redirectTarget.Close)
	redirect := httptest.NewServer(http.RedirectHandler(redirectTarget.URL, http.StatusFound))
	t.Cleanup(redirect.Close)

	tests := []struct {
		name string
		url  string
		want checkOutcome
	}{
		{"200 is healthy", newStatusServer(t, 200, "ok").URL, checkOutcome{Class: readiness.Passed}},
		{"204 is healthy", newStatusServer(t, 204, "").URL, checkOutcome{Class: readiness.Passed}},
		{"503 is a soft failure", newStatusServer(t, 503, "loading model").URL, checkOutcome{Class: readiness.SoftFailure, StatusCode: 503}},
		{"redirect is not followed", redirect.URL, checkOutcome{Class: readiness.SoftFailure, StatusCode: 302}},
		{"hanging member times out softly", newHangingServer(t).URL, checkOutcome{Class: readiness.SoftFailure, Timeout: true}},
		{"refused is a hard failure", "http://" + testkit.ClosedAddr(t) + "/health", checkOutcome{Class: readiness.HardFailure}},
		{"unresolvable name is a hard failure", "http://member.invalid:8000/health", checkOutcome{Class: readiness.HardFailure}},
		{"bad scheme is a config error", "ftp://member:8000/", checkOutcome{Class: readiness.HardFailure, Config: true}},
		{"no host is a config error", "http:///health", checkOutcome{Class: readiness.HardFailure, Config: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Short for the hanging member; the others answer, and a
			// busy machine running the race detector may take a while.
			timeout := 10 * time.Second
			if tt.want.Timeout {
				timeout = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			err := readiness.HTTPCheck(tt.url)(ctx)
			if diff := cmp.Diff(tt.want, outcome(err)); diff != "" {
				t.Errorf("HTTPCheck(%s) = %v (-want +got):\n%s", tt.url, err, diff)
			}
		})
	}
	if n := redirectTargetHits.Load(); n != 0 {
		t.Errorf("redirect target was requested %d times, want 0", n)
	}
}

func TestHTTPCheckErrorShowsStartOfBody(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		opts     []readiness.HTTPOption
		wantBody string
	}{
		{"short body", "loading model", nil, "loading model"},
		{"long body is cut at the default limit", strings.Repeat("x", 1<<20), nil, strings.Repeat("x", readiness.DefaultMaxBodyBytes)},
		{"custom limit", "0123456789", []readiness.HTTPOption{readiness.WithMaxBodyBytes(4)}, "0123"},
		{"no body", "0123456789", []readiness.HTTPOption{readiness.WithMaxBodyBytes(0)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newStatusServer(t, http.StatusServiceUnavailable, tt.body)
			err := readiness.HTTPCheck(srv.URL+"/health", tt.opts...)(t.Context())
			var status *readiness.HTTPStatusError
			if !errors.As(err, &status) {
				t.Fatalf("error %v is not an *HTTPStatusError", err)
			}
			want := readiness.HTTPStatusError{URL: srv.URL + "/health", StatusCode: 503, Status: "503 Service Unavailable", Body: tt.wantBody}
			if diff := cmp.Diff(want, *status); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPCheckErrorText(t *testing.T) {
	err := &readiness.HTTPStatusError{URL: "http://w-1.g.ns:8000/health", StatusCode: 503, Status: "503 Service Unavailable", Body: "not\nready"}
	if got, want := err.Error(), `GET http://w-1.g.ns:8000/health: 503 Service Unavailable: "not\nready"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestHTTPCheckWithoutDeadlineStillEnds(t *testing.T) {
	srv := newHangingServer(t)
	err := readiness.HTTPCheck(srv.URL)(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("HTTPCheck without a deadline = %v, want the fallback deadline (%v) to end it", err, readiness.DefaultMemberTimeout)
	}
}

func TestHTTPCheckWithHTTPClient(t *testing.T) {
	var sawHeader atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawHeader.Store(r.Header.Get("X-Test") == "yes")
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: headerTransport{}}
	if err := readiness.HTTPCheck(srv.URL, readiness.WithHTTPClient(client))(t.Context()); err != nil {
		t.Fatalf("HTTPCheck = %v, want nil", err)
	}
	if !sawHeader.Load() {
		t.Error("the check did not go through the given client")
	}
}

type headerTransport struct{}

func (headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test", "yes")
	return http.DefaultTransport.RoundTrip(r)
}

func TestTCPCheck(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	tests := []struct {
		name string
		addr string
		want checkOutcome
	}{
		{"accepting is healthy", l.Addr().String(), checkOutcome{Class: readiness.Passed}},
		{"refused is a hard failure", testkit.ClosedAddr(t), checkOutcome{Class: readiness.HardFailure}},
		{"unresolvable name is a hard failure", "member.invalid:8000", checkOutcome{Class: readiness.HardFailure}},
		{"no port is a config error", "member", checkOutcome{Class: readiness.HardFailure, Config: true}},
		{"port out of range is a config error", "member:70000", checkOutcome{Class: readiness.HardFailure, Config: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			err := readiness.TCPCheck(tt.addr, readiness.WithDialer(&net.Dialer{}))(ctx)
			if diff := cmp.Diff(tt.want, outcome(err)); diff != "" {
				t.Errorf("TCPCheck(%s) = %v (-want +got):\n%s", tt.addr, err, diff)
			}
		})
	}
}

func TestParseMember(t *testing.T) {
	tests := []struct {
		spec      string
		wantName  string
		wantError string // substring; "" for success
	}{
		{spec: "w-1=http://w-1.g.ns:8000/health", wantName: "w-1"},
		{spec: "w-1=https://w-1.g.ns/health", wantName: "w-1"},
		{spec: "w-1=tcp://w-1.g.ns:8000", wantName: "w-1"},
		{spec: "w-1", wantError: "want NAME=URL"},
		{spec: "=http://x:1/", wantError: "empty"},
		{spec: "w/1=http://x:1/", wantError: `character '/' not allowed`},
		{spec: "-w=http://x:1/", wantError: "must start with a letter or a digit"},
		{spec: "w-1=ftp://x:1/", wantError: "want http or https"},
		{spec: "w-1=tcp://x", wantError: "want HOST:PORT"},
		{spec: "w-1=tcp://x:1/health", wantError: "only tcp://HOST:PORT"},
		{spec: "w-1=x:1", wantError: "want http or https"},
		// Issue 24: a port out of range used to start serving.
		{spec: "a=http://u:p@127.0.0.1:99999/", wantError: `port "99999": want a number from 1 to 65535`},
		{spec: "a=https://127.0.0.1:0/", wantError: `port "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			m, err := readiness.ParseMember(tt.spec)
			if tt.wantError != "" {
				var config *udrain.ConfigError
				if !errors.As(err, &config) || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("ParseMember(%q) = %v, want a *ConfigError containing %q", tt.spec, err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMember(%q) = %v", tt.spec, err)
			}
			if m.Name != tt.wantName || m.Check == nil {
				t.Errorf("ParseMember(%q) = {%q, check set: %v}, want {%q, check set}", tt.spec, m.Name, m.Check != nil, tt.wantName)
			}
		})
	}
}

func TestParseMemberChecksTheURL(t *testing.T) {
	srv := newStatusServer(t, 503, "")
	m, err := readiness.ParseMember("w-1=" + srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var status *readiness.HTTPStatusError
	if err := m.Check(t.Context()); !errors.As(err, &status) || status.URL != srv.URL+"/health" {
		t.Errorf("check = %v, want a 503 from %s/health", err, srv.URL)
	}
}
