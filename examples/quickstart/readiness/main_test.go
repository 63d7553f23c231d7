package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udrain/udrain/readiness"
)

// TestServe: /readyz fails while a member fails, naming it, and passes
// once every member answers; the server stops with its context.
func TestServe(t *testing.T) {
	var workerUp atomic.Bool
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer leader.Close()
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !workerUp.Load() {
			http.Error(w, "loading the model", http.StatusServiceUnavailable)
		}
	}))
	defer worker.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, ln, readiness.MembersOptions{Specs: []string{"llm-0=" + leader.URL + "/health", "llm-0-1=" + worker.URL + "/health"}})
	}()
	url := "http://" + ln.Addr().String() + "/readyz?verbose"

	code, body := get(t, url)
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]llm-0-1 failed") || !strings.Contains(body, "[+]llm-0 ok") {
		t.Errorf("with the worker down: %d\n%s", code, body)
	}
	workerUp.Store(true)
	deadline := time.Now().Add(10 * time.Second) // past the result cache's TTL
	for code != http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		code, body = get(t, url)
	}
	if code != http.StatusOK || !strings.Contains(body, "readyz check passed") {
		t.Errorf("with every member up: %d\n%s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestServeNoMembers: outside a LeaderWorkerSet, without members, it says
// so before it listens.
func TestServeNoMembers(t *testing.T) {
	t.Setenv(readiness.EnvLeaderAddress, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = serve(t.Context(), ln, readiness.MembersOptions{LWS: &readiness.LWSOptions{Port: 8000}})
	if err == nil || !strings.Contains(err.Error(), readiness.EnvLeaderAddress) {
		t.Errorf("serve outside a LeaderWorkerSet: %v, want an error naming %s", err, readiness.EnvLeaderAddress)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
