package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain"
)

// hook answers each request with the next status of answers (the last one
// repeated), or, hanging, not at all until the client gives up; it
// records the requests it read.
type hook struct {
	mu      sync.Mutex
	answers []int
	hang    bool
	got     []WebhookRequest
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req WebhookRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.got = append(h.got, req)
	status := h.answers[min(len(h.got), len(h.answers))-1]
	h.mu.Unlock()
	if h.hang {
		<-r.Context().Done()
		return
	}
	w.WriteHeader(status)
	// The body echoes the credential, as careless servers do.
	_, _ = w.Write([]byte("status for Bearer s3cr3t-t0ken and pw hunter22\n"))
}

// sender records the requests a client sends, then sends them on next: an
// attempt counts when sent, whether or not the server read it before the
// client gave up.
type sender struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []*http.Request
	body [][]byte
}

func (s *sender) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sent = append(s.sent, r)
	s.body = append(s.body, body)
	s.mu.Unlock()
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	return s.next.RoundTrip(r)
}

func TestWebhookConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		opts  WebhookOptions
		field string
	}{
		"no URL":           {WebhookOptions{}, "upgrade.WebhookOptions.URL"},
		"not http":         {WebhookOptions{URL: "ftp://host/x"}, "upgrade.WebhookOptions.URL"},
		"no host":          {WebhookOptions{URL: "http:///x"}, "upgrade.WebhookOptions.URL"},
		"bad user info":    {WebhookOptions{URL: "https://user:pa/ss@host/"}, "upgrade.WebhookOptions.URL"},
		"negative timeout": {WebhookOptions{URL: "https://host/", AttemptTimeout: -1}, "upgrade.WebhookOptions.AttemptTimeout"},
		"no attempts":      {WebhookOptions{URL: "https://host/", Backoff: wait.Backoff{Duration: time.Second}}, "upgrade.WebhookOptions.Backoff"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Webhook(tc.opts)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("err = %v, want a ConfigError for %s", err, tc.field)
			}
			if err != nil && strings.Contains(err.Error(), "pa/ss") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func TestWebhookStep(t *testing.T) {
	fast := wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 3}
	for name, tc := range map[string]struct {
		answers      []int
		hang         bool
		attempt      time.Duration
		wantAttempts int
		// wantStatus is the WebhookError's status; -1: success; 0: a
		// transport error.
		wantStatus int
	}{
		"200 at once":                    {answers: []int{200}, wantAttempts: 1, wantStatus: -1},
		"204":                            {answers: []int{204}, wantAttempts: 1, wantStatus: -1},
		"503 then 200":                   {answers: []int{503, 200}, wantAttempts: 2, wantStatus: -1},
		"429 then 408 then 202":          {answers: []int{429, 408, 202}, wantAttempts: 3, wantStatus: -1},
		"500 until the attempts run out": {answers: []int{500}, wantAttempts: 3, wantStatus: 500},
		"400 is not retried":             {answers: []int{400}, wantAttempts: 1, wantStatus: 400},
		"404 is not retried":             {answers: []int{404}, wantAttempts: 1, wantStatus: 404},
		"attempt timeout":                {answers: []int{200}, hang: true, attempt: 50 * time.Millisecond, wantAttempts: 3, wantStatus: 0},
	} {
		t.Run(name, func(t *testing.T) {
			h := &hook{answers: tc.answers, hang: tc.hang}
			srv := httptest.NewServer(h)
			defer srv.Close()
			client := &sender{next: srv.Client().Transport}
			url := strings.Replace(srv.URL, "http://", "http://admin:hunter22@", 1) + "/upgrade?token=s3cr3t-qu3ry"
			step, err := Webhook(WebhookOptions{URL: url, RolloutID: "r1", Backoff: fast, AttemptTimeout: tc.attempt,
				Header: http.Header{"Authorization": {"Bearer s3cr3t-t0ken"}}, Client: &http.Client{Transport: client}})
			if err != nil {
				t.Fatal(err)
			}
			err = step(t.Context(), testDomain)
			var we *WebhookError
			switch {
			case tc.wantStatus < 0 && err != nil:
				t.Fatalf("step: %v", err)
			case tc.wantStatus >= 0 && (!errors.As(err, &we) || we.StatusCode != tc.wantStatus || we.Attempts != tc.wantAttempts):
				t.Fatalf("step: %v (%#v), want a WebhookError with status %d after %d attempts", err, we, tc.wantStatus, tc.wantAttempts)
			}
			if err != nil {
				for _, secret := range []string{"hunter22", "s3cr3t-t0ken", "s3cr3t-qu3ry"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error shows %s: %v", secret, err)
					}
				}
				if !strings.Contains(err.Error(), srv.Listener.Addr().String()) {
					t.Errorf("the error does not name the server: %v", err)
				}
				t.Logf("error: %v", err)
			}
			// What the step sent: an attempt it gave up on may not have
			// reached the server by then (two real clocks race there).
			client.mu.Lock()
			defer client.mu.Unlock()
			if len(client.sent) != tc.wantAttempts {
				t.Errorf("%d requests sent, want %d", len(client.sent), tc.wantAttempts)
			}
			var key string
			for i, r := range client.sent {
				if i == 0 {
					key = r.Header.Get(IdempotencyKeyHeader)
				}
				var req WebhookRequest
				if err := json.Unmarshal(client.body[i], &req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %d: %s, Content-Type %q, body %q", i, r.Method, r.Header.Get("Content-Type"), client.body[i])
				}
				if diff := cmp.Diff(WebhookRequest{RolloutID: "r1", Domain: "ud-1", Nodes: []string{"n1", "n2"}}, req); diff != "" {
					t.Errorf("request %d (-want +got):\n%s", i, diff)
				}
				if k := r.Header.Get(IdempotencyKeyHeader); key == "" || k != key {
					t.Errorf("request %d: idempotency key %q, want the first's, %q, not empty", i, k, key)
				}
				if a := r.Header.Get("Authorization"); a != "Bearer s3cr3t-t0ken" {
					t.Errorf("request %d: Authorization %q", i, a)
				}
			}
			// What the server got: every attempt it answered.
			h.mu.Lock()
			defer h.mu.Unlock()
			if !tc.hang && len(h.got) != tc.wantAttempts {
				t.Errorf("the server got %d requests, want %d", len(h.got), tc.wantAttempts)
			}
		})
	}
}

// TestWebhookCancel: a cancel during the backoff ends the step at once
// with context.Canceled.
func TestWebhookCancel(t *testing.T) {
	srv := httptest.NewServer(&hook{answers: []int{503}})
	defer srv.Close()
	step, err := Webhook(WebhookOptions{URL: srv.URL, Backoff: wait.Backoff{Duration: time.Hour, Steps: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = step(ctx, testDomain)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("err = %v after %s, want the context's deadline at once", err, time.Since(start))
	}
}
