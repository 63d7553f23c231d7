package kubeclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/kubeclient"
)

// nodeList is a NodeList of n nodes, as the API server writes it.
func nodeList(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"metadata":{"name":"node-%d"}}`, i)
	}
	return `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
}

// server starts an API server on 127.0.0.1 that serves every request with
// handle; done is closed when the test ends, before the server closes, so
// that a handler that stalls returns.
func server(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, done <-chan struct{})) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, done) }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv.URL
}

// stall waits until the client goes away or the test ends.
func stall(r *http.Request, done <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-done:
	}
}

// outcome is what a bounded request came to.
type outcome struct {
	// Items is the number of nodes listed, or of a watch's events.
	Items int
	// Limit is the Limit of the *RequestTimeoutError the request failed
	// with, if it did.
	Limit time.Duration
	// NetTimeout: the error is a net.Error whose Timeout is true.
	NetTimeout bool
	// Problem is what kubeclient.ServerProblemOf makes of the error.
	Problem kubeclient.ServerProblem
}

func outcomeOf(items int, err error) outcome {
	o := outcome{Items: items}
	var rt *kubeclient.RequestTimeoutError
	if errors.As(err, &rt) {
		o.Limit = rt.Limit
	}
	var ne net.Error
	o.NetTimeout = errors.As(err, &ne) && ne.Timeout()
	o.Problem, _ = kubeclient.ServerProblemOf(err)
	return o
}

// list lists the nodes.
func list(ctx context.Context, cfg *rest.Config) (int, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

// watch watches the nodes until the server ends the watch, and counts
// its events; an event of type ERROR, or the caller's context ending,
// ends the count with an error.
func watch(ctx context.Context, cfg *rest.Config) (int, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	n := 0
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return n, nil
			}
			if e.Type == "ERROR" {
				return n, fmt.Errorf("watch error event: %v", e.Object)
			}
			n++
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
}

// startWatch starts a watch of the nodes over cfg's transport, without
// client-go's Watch (which retries a watch that did not start and then
// returns an empty one), and returns how it started: 1 when the server
// answered.
func startWatch(ctx context.Context, cfg *rest.Config) (int, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/nodes?watch=true", nil)
	if err != nil {
		return 0, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return 1, nil
}

// BoundRequests: a request that is not a watch is answered in full within
// the limit, or fails with a *RequestTimeoutError (a net.Error timeout,
// which eviction sees as a server that did not answer); a watch is bounded
// only until it starts, then streams past the limit.
func TestBoundRequests(t *testing.T) {
	const limit = 300 * time.Millisecond
	timedOut := outcome{Limit: limit, NetTimeout: true, Problem: kubeclient.ServerNoAnswer}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		handle  func(w http.ResponseWriter, r *http.Request, done <-chan struct{})
		call    func(context.Context, *rest.Config) (int, error)
		want    outcome
	}{
		{
			name:    "answered in time",
			timeout: limit,
			handle: func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, nodeList(2))
			},
			call: list,
			want: outcome{Items: 2},
		},
		{
			name:    "no answer",
			timeout: limit,
			handle:  func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) { stall(r, done) },
			call:    list,
			want:    timedOut,
		},
		{
			name:    "answer stalls half way",
			timeout: limit,
			handle: func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "100000")
				fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[`)
				w.(http.Flusher).Flush()
				stall(r, done)
			},
			call: list,
			want: timedOut,
		},
		{
			name:    "watch streams past the limit",
			timeout: limit,
			handle: func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				if r.URL.Query().Get("watch") != "true" {
					http.Error(w, "want a watch", http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.(http.Flusher).Flush()
				for i := range 4 { // 4 × limit/2: the watch outlasts the limit
					time.Sleep(limit / 2)
					fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"node-%d"}}}`+"\n", i)
					w.(http.Flusher).Flush()
				}
			},
			call: watch,
			want: outcome{Items: 4},
		},
		{
			name:    "watch that does not start",
			timeout: limit,
			handle:  func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) { stall(r, done) },
			call:    startWatch,
			want:    timedOut,
		},
		{
			name:    "no limit",
			timeout: 0,
			handle: func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				time.Sleep(2 * limit)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, nodeList(3))
			},
			call: list,
			want: outcome{Items: 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &rest.Config{Host: server(t, tc.handle), Timeout: time.Hour}
			kubeclient.BoundRequests(cfg, tc.timeout)
			if cfg.Timeout != 0 {
				t.Errorf("cfg.Timeout = %s after BoundRequests, want 0 (it would cut watches)", cfg.Timeout)
			}
			// A hang is cut off here, and shows as a context error.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			start := time.Now()
			n, err := tc.call(ctx, cfg)
			took := time.Since(start)
			t.Logf("after %s: %d, %v", took.Round(time.Millisecond), n, err)
			if diff := cmp.Diff(tc.want, outcomeOf(n, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if tc.want.Limit > 0 && took > tc.want.Limit+5*time.Second {
				t.Errorf("took %s, want about %s", took.Round(time.Millisecond), tc.want.Limit)
			}
		})
	}
}

// Config: a copy of the base configuration with the rate limits, the user
// agent and the bound of the options, or of the defaults; the base is not
// changed.
func TestConfig(t *testing.T) {
	// applied is what a configuration comes to: the bound is read off
	// its transport, over a request that never ends by itself, in a
	// bubble of testing/synctest (whose clock runs out the default 30s at
	// once).
	type applied struct {
		QPS       float32
		Burst     int
		UserAgent string
		Timeout   time.Duration
		Limit     time.Duration // 0: requests are not bounded
	}
	appliedOf := func(t *testing.T, cfg *rest.Config) applied {
		a := applied{QPS: cfg.QPS, Burst: cfg.Burst, UserAgent: cfg.UserAgent, Timeout: cfg.Timeout}
		if cfg.WrapTransport == nil {
			return a
		}
		synctest.Test(t, func(t *testing.T) {
			rt := cfg.WrapTransport(roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}))
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1/api/v1/nodes", nil)
			_, err := rt.RoundTrip(req)
			var rte *kubeclient.RequestTimeoutError
			if !errors.As(err, &rte) {
				t.Fatalf("the bounded transport ended with %v, want a *RequestTimeoutError", err)
			}
			a.Limit = rte.Limit
		})
		return a
	}
	const short = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		base rest.Config
		opts kubeclient.Options
		want applied
	}{
		{"defaults", rest.Config{Host: "h"}, kubeclient.Options{},
			applied{QPS: kubeclient.DefaultQPS, Burst: kubeclient.DefaultBurst, Limit: kubeclient.DefaultRequestTimeout}},
		{"the base's timeout bounds each request, without cutting watches", rest.Config{Host: "h", Timeout: short}, kubeclient.Options{},
			applied{QPS: kubeclient.DefaultQPS, Burst: kubeclient.DefaultBurst, Limit: short}},
		{"the options' timeout over the base's", rest.Config{Host: "h", Timeout: time.Hour}, kubeclient.Options{RequestTimeout: short},
			applied{QPS: kubeclient.DefaultQPS, Burst: kubeclient.DefaultBurst, Limit: short}},
		{"no limit", rest.Config{Host: "h", Timeout: time.Hour}, kubeclient.Options{RequestTimeout: kubeclient.NoRequestTimeout},
			applied{QPS: kubeclient.DefaultQPS, Burst: kubeclient.DefaultBurst}},
		{"rate limits and user agent", rest.Config{Host: "h", QPS: 5, Burst: 10, UserAgent: "base"},
			kubeclient.Options{QPS: 7, Burst: 9, RequestTimeout: short, UserAgent: "mine/v1"},
			applied{QPS: 7, Burst: 9, UserAgent: "mine/v1", Limit: short}},
		{"the base's user agent kept", rest.Config{Host: "h", UserAgent: "base"}, kubeclient.Options{QPS: -1, RequestTimeout: short},
			applied{QPS: -1, Burst: kubeclient.DefaultBurst, UserAgent: "base", Limit: short}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			cfg, err := kubeclient.Config(&base, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, appliedOf(t, cfg)); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(appliedOf(t, &tc.base), appliedOf(t, &base)); diff != "" {
				t.Errorf("the base changed (-before +after):\n%s", diff)
			}
		})
	}
}

// The bound holds over any transport, also one that reports the end of a
// request as context.Canceled rather than as the cause its context was
// canceled with (net/http reports the cause): a request without an
// answer, and one whose body stalls, fail with a *RequestTimeoutError.
// The transports run in a bubble of testing/synctest, whose clock runs
// out the limit at once.
func TestBoundRequestsOverAnyTransport(t *testing.T) {
	canceled := func(r *http.Request) error {
		<-r.Context().Done()
		return context.Canceled
	}
	for _, tc := range []struct {
		name string
		rt   roundTripperFunc
	}{
		{"no answer", func(r *http.Request) (*http.Response, error) { return nil, canceled(r) }},
		{"the body stalls", func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(readerFunc(func([]byte) (int, error) { return 0, canceled(r) }))}, nil
		}},
	} {
		synctest.Test(t, func(t *testing.T) {
			cfg := &rest.Config{}
			kubeclient.BoundRequests(cfg, time.Minute)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1/api/v1/nodes", nil)
			resp, err := cfg.WrapTransport(tc.rt).RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if diff := cmp.Diff(outcome{Limit: time.Minute, NetTimeout: true, Problem: kubeclient.ServerNoAnswer}, outcomeOf(0, err)); diff != "" {
				t.Errorf("%s: outcome (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Config refuses a nil base and a negative burst with a
// *udrain.ConfigError naming the argument or option.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		base *rest.Config
		opts kubeclient.Options
		want string
	}{
		{nil, kubeclient.Options{}, "kubeclient.Config(base)"},
		{&rest.Config{}, kubeclient.Options{Burst: -1}, "kubeclient.Options.Burst"},
	} {
		_, err := kubeclient.Config(tc.base, tc.opts)
		var ce *udrain.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a *udrain.ConfigError", tc.want, err)
			continue
		}
		if diff := cmp.Diff(tc.want, ce.Field); diff != "" {
			t.Errorf("Field (-want +got):\n%s", diff)
		}
	}
}

// A RequestTimeoutError names the setting that bounds requests as Go code
// does, and as the caller names it in Describe (a command line: its flag).
func TestRequestTimeoutErrorMessage(t *testing.T) {
	e := &kubeclient.RequestTimeoutError{Limit: 2 * time.Second}
	got := []string{
		e.Error(),
		e.Describe(nil),
		e.Describe(func(setting string) string {
			if setting == "kubeclient.Options.RequestTimeout" {
				return "--request-timeout"
			}
			return ""
		}),
	}
	want := []string{
		"no answer within 2s (kubeclient.Options.RequestTimeout)",
		"no answer within 2s (kubeclient.Options.RequestTimeout)",
		"no answer within 2s (--request-timeout)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestUserAgent(t *testing.T) {
	got := kubeclient.UserAgent("my-upgrader", "v1.2.3")
	want := "my-upgrader/v1.2.3 " + rest.DefaultKubernetesUserAgent()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UserAgent (-want +got):\n%s", diff)
	}
}
