package upgrade

import (
	"context"
	"encoding/json"
	"errors"
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
// repeated), after delay, and records what it got.
type hook struct {
	mu      sync.Mutex
	answers []int
	delay   time.Duration
	got     []WebhookRequest
	keys    []string
	auth    []string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req WebhookRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.got = append(h.got, req)
	h.keys = append(h.keys, r.Header.Get(IdempotencyKeyHeader))
	h.auth = append(h.auth, r.Header.Get("Authorization"))
	status := h.answers[min(len(h.got), len(h.answers))-1]
	h.mu.Unlock()
	if h.delay > 0 {
		select {
		case <-time.After(h.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(status)
	// The body echoes the credential, as careless servers do.
	_, _ = w.Write([]byte("status for Bearer s3cr3t-t0ken and pw hunter22\n"))
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
		delay        time.Duration
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
		"attempt timeout":                {answers: []int{200}, delay: time.Second, attempt: 50 * time.Millisecond, wantAttempts: 3, wantStatus: 0},
	} {
		t.Run(name, func(t *testing.T) {
			h := &hook{answers: tc.answers, delay: tc.delay}
			srv := httptest.NewServer(h)
			defer srv.Close()
			url := strings.Replace(srv.URL, "http://", "http://admin:hunter22@", 1) + "/upgrade?token=s3cr3t-qu3ry"
			step, err := Webhook(WebhookOptions{URL: url, RolloutID: "r1", Backoff: fast, AttemptTimeout: tc.attempt,
				Header: http.Header{"Authorization": {"Bearer s3cr3t-t0ken"}}})
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
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.got) != tc.wantAttempts {
				t.Errorf("%d requests, want %d", len(h.got), tc.wantAttempts)
			}
			for i, req := range h.got {
				if diff := cmp.Diff(WebhookRequest{RolloutID: "r1", Domain: "ud-1", Nodes: []string{"n1", "n2"}}, req); diff != "" {
					t.Errorf("request %d (-want +got):\n%s", i, diff)
				}
				if h.keys[i] == "" || h.keys[i] != h.keys[0] {
					t.Errorf("idempotency keys %q: want one non-empty key on every attempt", h.keys)
				}
				if h.auth[i] != "Bearer s3cr3t-t0ken" {
					t.Errorf("request %d: Authorization %q", i, h.auth[i])
				}
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
