package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/internal/testkit"
)

// fastBackoff keeps real-clock tests that need a second attempt quick.
var fastBackoff = wait.Backoff{Duration: time.Millisecond}

// attemptSummary is what a user sees of an attempt in logs.
type attemptSummary struct {
	Class  FailureClass
	Status int
}

func summarize(as []Attempt) []attemptSummary {
	var out []attemptSummary
	for _, a := range as {
		out = append(out, attemptSummary{a.Class, a.StatusCode})
	}
	return out
}

func TestWaitForServerConnectionRefused(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	for _, target := range []string{"tcp://" + addr, "http://" + addr + "/healthz"} {
		t.Run(target[:strings.Index(target, ":")], func(t *testing.T) {
			r := runFake(t, context.Background(), target, Options{MaxAttempts: 3}, nil)
			var we *WaitError
			if !errors.As(r.err, &we) {
				t.Fatalf("err = %v, want a *WaitError", r.err)
			}
			if we.Class != ClassConnectionRefused || we.Attempts != 3 || !errors.Is(we, ErrAttemptsExhausted) {
				t.Errorf("got class %s after %d attempts (cause %v), want ConnectionRefused after 3 (attempts exhausted)", we.Class, we.Attempts, we.Cause)
			}
			if we.Elapsed != r.elapsed {
				t.Errorf("Elapsed = %v, want the fake clock's %v", we.Elapsed, r.elapsed)
			}
			if !strings.Contains(we.Error(), "connection refused") || !strings.Contains(we.Error(), "nothing accepts connections") {
				t.Errorf("error %q should quote the cause and the hint", we.Error())
			}
		})
	}
}

// A server that starts listening during the outage is noticed by the first
// attempt after it does: within one backoff step.
func TestWaitForServerNoticesListenerWithinOneStep(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	var srv *httptest.Server
	defer func() {
		if srv != nil {
			srv.Close()
		}
	}()
	const failuresBeforeListening = 4
	var delays time.Duration
	r := runFake(t, context.Background(), "http://"+addr+"/healthz", Options{}, func(a Attempt) bool {
		delays += a.NextDelay
		if a.Number == failuresBeforeListening {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("re-listening on %s: %v", addr, err)
				return true
			}
			srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			srv.Listener = l
			srv.Start()
		}
		return true
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.result.Attempts != failuresBeforeListening+1 {
		t.Errorf("Attempts = %d, want %d: the first attempt after the server came up should succeed", r.result.Attempts, failuresBeforeListening+1)
	}
	if r.result.Elapsed != delays {
		t.Errorf("Elapsed = %v, want the sum of the backoff delays %v", r.result.Elapsed, delays)
	}
	if r.result.StatusCode != http.StatusOK || r.result.RemoteAddr != addr {
		t.Errorf("result = %+v, want status 200 from %s", r.result, addr)
	}
}

func TestWaitForServer503Then200(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			http.Error(w, "initialising", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	r := runFake(t, context.Background(), srv.URL+"/healthz", Options{}, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []attemptSummary{{ClassHTTPStatus, 503}, {ClassHTTPStatus, 503}, {ClassNone, 200}}
	if diff := cmp.Diff(want, summarize(r.attempts)); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if r.result.Attempts != 3 || r.result.StatusCode != 200 {
		t.Errorf("result = %+v, want 3 attempts ending in 200", r.result)
	}
}

func TestWaitForServerStatusAndBody(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		opts   Options
		want   attemptSummary
	}{
		{name: "204 is a 2xx", status: 204, want: attemptSummary{ClassNone, 204}},
		{name: "503 fails", status: 503, want: attemptSummary{ClassHTTPStatus, 503}},
		{name: "redirect is not followed", status: 302, want: attemptSummary{ClassHTTPStatus, 302}},
		{name: "listed redirect accepted", status: 302, opts: Options{StatusCodes: []int{302}}, want: attemptSummary{ClassNone, 302}},
		{name: "200 not in the list", status: 200, opts: Options{StatusCodes: []int{204}}, want: attemptSummary{ClassHTTPStatus, 200}},
		{name: "listed 503 accepted", status: 503, opts: Options{StatusCodes: []int{200, 503}}, want: attemptSummary{ClassNone, 503}},
		{name: "body matches", status: 200, body: "status: ok", opts: Options{CheckBody: BodyContains("ok")}, want: attemptSummary{ClassNone, 200}},
		{name: "body does not match", status: 200, body: "loading model", opts: Options{CheckBody: BodyContains("ok")}, want: attemptSummary{ClassUnexpectedBody, 200}},
		{name: "body not checked on a bad status", status: 500, body: "ok", opts: Options{CheckBody: BodyContains("ok")}, want: attemptSummary{ClassHTTPStatus, 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.status/100 == 3 {
					w.Header().Set("Location", "/login")
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			opts := tt.opts
			opts.MaxAttempts = 1
			var got []Attempt
			opts.OnAttempt = func(a Attempt) { got = append(got, a) }
			_, err := WaitForServer(context.Background(), srv.URL, opts)
			if diff := cmp.Diff([]attemptSummary{tt.want}, summarize(got)); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			var we *WaitError
			if tt.want.Class == ClassNone {
				if err != nil {
					t.Errorf("err = %v, want success", err)
				}
			} else if !errors.As(err, &we) || we.Class != tt.want.Class || we.StatusCode != tt.want.Status {
				t.Errorf("err = %v, want a WaitError of class %s, status %d", err, tt.want.Class, tt.want.Status)
			}
		})
	}
}

func hangingServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWaitForServerPerAttemptTimeout(t *testing.T) {
	srv := hangingServer(t)
	_, err := WaitForServer(context.Background(), srv.URL, Options{AttemptTimeout: 50 * time.Millisecond, MaxAttempts: 2, Backoff: fastBackoff})
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want a *WaitError", err)
	}
	// Two attempts, each cut by its own timeout, not one cut by the wait.
	if we.Class != ClassTimeout || we.Attempts != 2 || !errors.Is(err, ErrAttemptsExhausted) {
		t.Errorf("got %s after %d attempts (cause %v), want Timeout after 2, attempts exhausted", we.Class, we.Attempts, we.Cause)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) = false for the attempt timeout: %v", err)
	}
}

func TestWaitForServerOverallTimeoutBoundsTheAttempt(t *testing.T) {
	srv := hangingServer(t)
	// The per-attempt timeout (default 5s) is longer than the whole wait:
	// the attempt must be cut at the overall deadline.
	_, err := WaitForServer(context.Background(), srv.URL, Options{Timeout: 100 * time.Millisecond})
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want a *WaitError", err)
	}
	if we.Class != ClassTimeout || we.Attempts != 1 || !errors.Is(we.Cause, context.DeadlineExceeded) {
		t.Errorf("got %s after %d attempts (cause %v), want Timeout after 1, deadline exceeded", we.Class, we.Attempts, we.Cause)
	}
	if we.Elapsed >= DefaultAttemptTimeout {
		t.Errorf("Elapsed = %v: the attempt ran to its own timeout instead of the overall one", we.Elapsed)
	}
}

func TestWaitForServerContextDeadline(t *testing.T) {
	srv := hangingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := WaitForServer(ctx, srv.URL, Options{})
	var we *WaitError
	if !errors.As(err, &we) || we.Class != ClassTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a Timeout WaitError caused by the context deadline", err)
	}
}

func TestWaitForServerCancel(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	t.Run("while waiting between attempts", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := runFake(t, ctx, "tcp://"+addr, Options{}, func(a Attempt) bool {
			if a.Number == 2 {
				cancel()
				return false
			}
			return true
		})
		var we *WaitError
		if !errors.As(r.err, &we) {
			t.Fatalf("err = %v, want a *WaitError", r.err)
		}
		if we.Attempts != 2 || we.Class != ClassConnectionRefused || !errors.Is(r.err, context.Canceled) {
			t.Errorf("got %d attempts, class %s, cause %v; want 2, ConnectionRefused, canceled", we.Attempts, we.Class, we.Cause)
		}
	})
	t.Run("before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := WaitForServer(ctx, "tcp://"+addr, Options{})
		var we *WaitError
		if !errors.As(err, &we) || we.Attempts != 0 || we.Class != ClassNone || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want a WaitError with no attempt, canceled", err)
		}
		if !strings.Contains(err.Error(), "no attempt completed") {
			t.Errorf("error %q should say no attempt completed", err)
		}
	})
	t.Run("during an attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done()
		}))
		defer srv.Close()
		go func() { <-started; cancel() }()
		_, err := WaitForServer(ctx, srv.URL, Options{})
		var we *WaitError
		// The interrupted attempt says nothing about the server: no class.
		if !errors.As(err, &we) || we.Attempts != 1 || we.Class != ClassNone || !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want a WaitError after 1 interrupted attempt with no class", err)
		}
	})
}

func TestWaitForServerDNS(t *testing.T) {
	tests := []struct {
		name  string
		rcode int
		want  FailureClass
	}{
		{name: "NXDOMAIN for a name under .invalid", rcode: 3, want: ClassDNSNotFound},
		{name: "SERVFAIL", rcode: 2, want: ClassDNSTemporary},
		{name: "no answer", rcode: -1, want: ClassDNSTemporary},
	}
	for _, tt := range tests {
		for _, target := range []string{"http://gpustack-server.gpustack.svc.invalid:80/healthz", "tcp://gpustack-server.gpustack.svc.invalid:80"} {
			t.Run(tt.name+" "+target[:strings.Index(target, ":")], func(t *testing.T) {
				dns := startFakeDNS(t, tt.rcode)
				opts := Options{MaxAttempts: 1, AttemptTimeout: 300 * time.Millisecond}
				opts.dial = dns.dialer()
				_, err := WaitForServer(context.Background(), target, opts)
				var we *WaitError
				if !errors.As(err, &we) || we.Class != tt.want {
					t.Fatalf("err = %v, want a WaitError of class %s", err, tt.want)
				}
				var dnsErr *net.DNSError
				if !errors.As(err, &dnsErr) || dnsErr.Name != "gpustack-server.gpustack.svc.invalid" {
					t.Errorf("errors.As(*net.DNSError) = %+v, want the DNS error for the name", dnsErr)
				}
				if len(dns.queries) == 0 {
					t.Error("the fake DNS server got no query: the lookup did not go where the test thinks")
				}
			})
		}
	}
}

func TestWaitForServerTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	caFile := testkit.ServerCAFile(t, srv)

	clientCA := testkit.NewCA(t, "client-ca")
	clientCert, clientKey := clientCA.IssueClient(t, "worker")
	otherCert, otherKey := testkit.NewCA(t, "other-ca").IssueClient(t, "stranger")
	mtls := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	mtls.TLS = clientCA.RequireClientCert()
	mtls.StartTLS()
	defer mtls.Close()

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	plainHTTPS := "https://" + strings.TrimPrefix(plain.URL, "http://")

	tests := []struct {
		name   string
		target string
		opts   Options
		want   FailureClass
	}{
		{name: "unknown CA", target: srv.URL, want: ClassTLSUnknownAuthority},
		{name: "CA file", target: srv.URL, opts: Options{CAFile: caFile}, want: ClassNone},
		{name: "wrong name", target: srv.URL, opts: Options{CAFile: caFile, ServerName: "gpustack-server.invalid"}, want: ClassTLSNameMismatch},
		{name: "server name in the certificate", target: srv.URL, opts: Options{CAFile: caFile, ServerName: "example.com"}, want: ClassNone},
		{name: "client certificate required, none given", target: mtls.URL, opts: Options{CAFile: caFile}, want: ClassTLSHandshake},
		{name: "client certificate from another CA", target: mtls.URL, opts: Options{CAFile: caFile, ClientCertFile: otherCert, ClientKeyFile: otherKey}, want: ClassTLSHandshake},
		{name: "client certificate", target: mtls.URL, opts: Options{CAFile: caFile, ClientCertFile: clientCert, ClientKeyFile: clientKey}, want: ClassNone},
		{name: "plain HTTP server behind https://", target: plainHTTPS, want: ClassTLSHandshake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.MaxAttempts = 1
			var got FailureClass
			opts.OnAttempt = func(a Attempt) { got = a.Class }
			_, err := WaitForServer(context.Background(), tt.target+"/healthz", opts)
			if got != tt.want {
				t.Errorf("class = %q, want %q (err: %v)", got, tt.want, err)
			}
			if (err == nil) != (tt.want == ClassNone) {
				t.Errorf("err = %v, want success only for ClassNone", err)
			}
		})
	}
}

func TestWaitForServerSendsHeaders(t *testing.T) {
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", "sa-token-0123456789abcdef\n")
	apiKeyFile := writeFile(t, dir, "api-key", "  key-9876543210  \n")
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	_, err := WaitForServer(context.Background(), srv.URL, Options{
		Header:          http.Header{"X-Worker": {"gpu-0"}},
		HeaderFiles:     map[string]string{"X-Api-Key": apiKeyFile},
		BearerTokenFile: tokenFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := <-got
	want := map[string]string{"Authorization": "Bearer sa-token-0123456789abcdef", "X-Api-Key": "key-9876543210", "X-Worker": "gpu-0"}
	gotSome := map[string]string{}
	for k := range want {
		gotSome[k] = h.Get(k)
	}
	if diff := cmp.Diff(want, gotSome); diff != "" {
		t.Errorf("request headers (-want +got):\n%s", diff)
	}
}

// Credentials in the URL and in headers appear in no error, attempt, result
// or log line, and errors.As callers cannot dig them out of a *url.Error.
func TestWaitForServerRedactsCredentials(t *testing.T) {
	dir := t.TempDir()
	const bearer = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2lnbmF0dXJl"
	tokenFile := writeFile(t, dir, "token", bearer)
	secretsInURL := []string{"worker-user", "p4ssw0rd-secret", "q-token-abcdef", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA"}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "initialising", http.StatusServiceUnavailable)
			return
		}
		// A redirect whose Location echoes the query: Go's client quotes
		// it in no error, but the test makes sure nothing leaks if it did.
		w.Header().Set("Location", r.URL.String())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct{ name, target string }{
		{"server answers", fmt.Sprintf("http://worker-user:p4ssw0rd-secret@%s/healthz?verbose&token=q-token-abcdef&x=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA", u.Host)},
		{"connection refused", fmt.Sprintf("http://worker-user:p4ssw0rd-secret@%s/healthz?verbose&token=q-token-abcdef&x=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA", testkit.ClosedAddr(t))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, lines := newCaptureLogger()
			var texts []string
			opts := Options{MaxAttempts: 3, Backoff: fastBackoff, BearerTokenFile: tokenFile, LogEvery: 1}
			opts.OnAttempt = func(a Attempt) {
				if a.Err != nil {
					texts = append(texts, a.Err.Error(), fmt.Sprintf("%+v", a))
				}
			}
			ctx := klogContext(logger)
			res, err := WaitForServer(ctx, tc.target, opts)
			if err == nil {
				t.Fatalf("want an error, got %+v", res)
			}
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
			var ue *url.Error
			if errors.As(err, &ue) {
				texts = append(texts, ue.URL)
			}
			var we *WaitError
			if errors.As(err, &we) {
				texts = append(texts, we.Target)
			}
			for _, l := range lines() {
				texts = append(texts, fmt.Sprintf("%s %v", l.Msg, l.Values))
			}
			if len(lines()) == 0 {
				t.Fatal("no log line captured: the test would prove nothing")
			}
			for _, text := range texts {
				for _, s := range append(secretsInURL, bearer) {
					if strings.Contains(text, s) {
						t.Errorf("%q leaks %q", text, s)
					}
				}
			}
			if want := "http://xxxxx@"; !strings.Contains(we.Target, want) || !strings.Contains(we.Target, "?verbose&token=xxxxx&x=xxxxx") {
				t.Errorf("Target = %q, want user info and token values replaced, other parameters kept", we.Target)
			}
		})
	}
}

// A server that answers 503 and then stops answering: the overall deadline
// cuts the last attempt short, and the error still gives the 503 (the last
// thing the server said), not the cut-off attempt's timeout.
func TestWaitForServerKeepsTheLastAnswerWhenTheDeadlineCutsAnAttempt(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	_, err := WaitForServer(context.Background(), srv.URL, Options{Timeout: 300 * time.Millisecond, Backoff: fastBackoff})
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v, want a *WaitError", err)
	}
	if we.Class != ClassHTTPStatus || we.StatusCode != http.StatusServiceUnavailable || we.Attempts != 2 {
		t.Errorf("got %s %d after %d attempts, want HTTPStatus 503 after 2", we.Class, we.StatusCode, we.Attempts)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) = false: %v", err)
	}
}
