package readyzformat_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/udrain/udrain/readiness"
)

// check is one named check with a fixed result, installed on both handlers.
type check struct {
	name string
	err  error
}

var (
	allPassing = []check{
		{"leader", nil},
		{"leader-1", nil},
		{"leader-2", nil},
	}
	someFailing = []check{
		{"leader", nil},
		{"leader-1", errors.New(`GET http://leader-1.group.ns:8000/health: 503 Service Unavailable: "loading"`)},
		{"leader-2", nil},
		{"leader-3", errors.New("dial tcp 10.0.0.4:8000: connect: connection refused")},
	}
)

// apiserverHandler serves checks with the kube-apiserver's own handler.
func apiserverHandler(checks []check) http.Handler {
	var hc []healthz.HealthChecker
	for _, c := range checks {
		hc = append(hc, healthz.NamedCheck(c.name, func(*http.Request) error { return c.err }))
	}
	mux := http.NewServeMux()
	healthz.InstallReadyzHandler(mux, hc...)
	return mux
}

// udrainHandler serves checks with the readiness package's handler, with
// the full errors on the members' own paths as the kube-apiserver shows
// them (by default the readiness package shows only the class of a
// failure there, which its own tests pin).
func udrainHandler(t *testing.T, checks []check) http.Handler {
	var members []readiness.Member
	for _, c := range checks {
		members = append(members, readiness.Member{Name: c.name, Check: func(context.Context) error { return c.err }})
	}
	checker, err := readiness.NewChecker(members, readiness.Options{ExposeMemberErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	return checker.Handler()
}

// response is what a client sees, except the Date header, which differs by
// the clock.
type response struct {
	Status string
	Header http.Header
	Body   string
}

func fetch(t *testing.T, client *http.Client, method, url string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Del("Date")
	return response{Status: resp.Status, Header: resp.Header, Body: string(body)}
}

func TestSameBytesAsKubeAPIServer(t *testing.T) {
	targets := []string{
		"/readyz",
		"/readyz?verbose",
		"/readyz?verbose=0",
		"/readyz?exclude=leader-1",
		"/readyz?exclude=leader-1&verbose",
		"/readyz?exclude=leader-1&exclude=leader-3",
		"/readyz?exclude=leader-3&exclude=leader-1&verbose",
		"/readyz?exclude=leader&exclude=leader",
		"/readyz?exclude=nope",
		"/readyz?exclude=nope&verbose",
		"/readyz?verbose&exclude=zz&exclude=leader-1&exclude=%22quoted%22&exclude=%0Anewline&exclude=",
		"/readyz?exclude=leader-3&exclude=nope",
		"/readyz?exclude=leader-1;exclude=leader-3",
		"/readyz?exclude=%zz&verbose",
		"/readyz/leader",
		"/readyz/leader?verbose",
		"/readyz/leader-1",
		"/readyz/leader-3",
		"/readyz/leader-1?exclude=leader-1",
		"/readyz/nope",
		"/readyz/",
		"/readyz/leader/extra",
		"/healthz",
	}
	for name, checks := range map[string][]check{"all passing": allPassing, "some failing": someFailing} {
		t.Run(name, func(t *testing.T) {
			reference := httptest.NewServer(apiserverHandler(checks))
			t.Cleanup(reference.Close)
			ours := httptest.NewServer(udrainHandler(t, checks))
			t.Cleanup(ours.Close)
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

			for _, method := range []string{http.MethodGet, http.MethodHead} {
				for _, target := range targets {
					want := fetch(t, client, method, reference.URL+target)
					got := fetch(t, client, method, ours.URL+target)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s %s (-kube-apiserver +readiness):\n%s", method, target, diff)
					}
				}
			}
		})
	}
}

// TestReferenceIsNotTrivial guards the comparison above: the cases must
// cover both verdicts and the per-member paths of both kinds.
func TestReferenceIsNotTrivial(t *testing.T) {
	srv := httptest.NewServer(apiserverHandler(someFailing))
	t.Cleanup(srv.Close)
	for target, wantStatus := range map[string]string{
		"/readyz": "500 Internal Server Error",
		"/readyz?exclude=leader-1&exclude=leader-3": "200 OK",
		"/readyz/leader":   "200 OK",
		"/readyz/leader-1": "500 Internal Server Error",
		"/readyz/nope":     "404 Not Found",
	} {
		if got := fetch(t, http.DefaultClient, http.MethodGet, srv.URL+target); got.Status != wantStatus {
			t.Errorf("kube-apiserver GET %s = %s, want %s", target, got.Status, wantStatus)
		}
	}
}
