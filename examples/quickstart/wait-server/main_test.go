package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/bootstrap"
)

// fast spaces the attempts 10 ms apart, so that the tests take no time.
var fast = wait.Backoff{Duration: 10 * time.Millisecond}

// TestWait: a server that answers 503 twice, then 200, is waited for.
func TestWait(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := waitFor(t.Context(), srv.URL+"/healthz", bootstrap.Options{Timeout: 10 * time.Second, Backoff: fast}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "/healthz answered 200 after 3 attempts in "; !strings.Contains(out.String(), want) {
		t.Errorf("output %q has no %q", out.String(), want)
	}
}

// TestWaitTimeout: a server that never comes is a *bootstrap.WaitError
// with the last failure's class, once the timeout has passed.
func TestWaitTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	start := time.Now()
	err := waitFor(t.Context(), srv.URL, bootstrap.Options{Timeout: 300 * time.Millisecond, Backoff: fast}, &bytes.Buffer{})
	var failed *bootstrap.WaitError
	if !errors.As(err, &failed) || failed.Class != bootstrap.ClassHTTPStatus || failed.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want a WaitError of class HTTPStatus, 503", err)
	}
	if elapsed := time.Since(start); elapsed < 250*time.Millisecond {
		t.Errorf("gave up after %s, before the 300ms timeout less the first delay", elapsed)
	}
}

// TestWaitBadTarget: a URL without a scheme is refused before any attempt.
func TestWaitBadTarget(t *testing.T) {
	err := waitFor(t.Context(), "gpustack:80", bootstrap.Options{}, &bytes.Buffer{})
	var failed *bootstrap.WaitError
	if err == nil || errors.As(err, &failed) {
		t.Errorf("err = %v, want a configuration error", err)
	}
}
