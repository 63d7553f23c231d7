package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/bootstrap"
)

// fakeServer plays a GPUStack server that initialises: /healthz answers 503
// until ready is reached, and registrations before that are refused.
type fakeServer struct {
	mu            sync.Mutex
	healthChecks  int
	readyAfter    int // health checks answered 503 before the server is ready
	registrations []string
	authHeaders   []string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ready := f.healthChecks >= f.readyAfter
	switch {
	case r.URL.Path == "/healthz":
		f.healthChecks++
		if !ready {
			http.Error(w, "initialising", http.StatusServiceUnavailable)
		}
	case r.URL.Path == "/v1/workers" && r.Method == http.MethodPost:
		if !ready {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		var body struct{ Name string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.registrations = append(f.registrations, body.Name)
		f.authHeaders = append(f.authHeaders, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"id": "w-" + body.Name})
	default:
		http.NotFound(w, r)
	}
}

var quick = bootstrap.Options{Backoff: wait.Backoff{Duration: time.Millisecond}}

func TestRunWaitsThenRegisters(t *testing.T) {
	f := &fakeServer{readyAfter: 3}
	srv := httptest.NewServer(f)
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("reg-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	err := run(context.Background(), []string{"--server-url", srv.URL, "--name", "gpu-node-07", "--token-file", tokenFile}, &out, quick)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	got := []any{f.healthChecks, f.registrations, f.authHeaders}
	want := []any{4, []string{"gpu-node-07"}, []string{"Bearer reg-token"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("[health checks, registrations, auth] (-want +got):\n%s", diff)
	}
	for _, line := range []string{"reachable after 4 attempts", "registered as worker w-gpu-node-07"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output %q lacks %q", out.String(), line)
		}
	}
}

func TestRunGivesUpWithTheReason(t *testing.T) {
	f := &fakeServer{readyAfter: 1 << 30}
	srv := httptest.NewServer(f)
	defer srv.Close()
	err := run(context.Background(), []string{"--server-url", srv.URL, "--name", "gpu-node-07", "--timeout", "200ms"}, &bytes.Buffer{}, quick)
	var we *bootstrap.WaitError
	if !errors.As(err, &we) || we.Class != bootstrap.ClassHTTPStatus || we.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want a WaitError with the last 503", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for the server before registering") {
		t.Errorf("err = %v, want a deadline error saying what the worker was doing", err)
	}
	if len(f.registrations) != 0 {
		t.Errorf("registered %v although the server never became ready", f.registrations)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Setenv("GPUSTACK_SERVER_URL", "")
	t.Setenv("HOSTNAME", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--name", "w"}, "no server: pass --server-url or set GPUSTACK_SERVER_URL"},
		{[]string{"--server-url", "http://s"}, "no worker name"},
		{[]string{"--bogus"}, "flags: --server-url URL"},
		{[]string{"--server-url", "gpustack-server:80", "--name", "w"}, "has no scheme"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, &bytes.Buffer{}, quick)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
