package readiness_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/redact/redacttest"
)

// A member's URL with credentials, answering 503 with a body that names a
// secret: by default, /readyz/<member> shows the class of the failure and
// nothing else (no URL, no body, no resolver address), and the error that
// OnChange gets (the one a program logs) has the URL redacted.
func TestMemberPathShowsOnlyTheReasonByDefault(t *testing.T) {
	srv := newStatusServer(t, http.StatusServiceUnavailable, "db password is body-secret-1")
	target := strings.Replace(srv.URL, "http://", "http://admin:user-secret-2@", 1) + "/health?token=query-secret-3#frag-secret-4"
	secrets := []string{"user-secret-2", "query-secret-3", "frag-secret-4"}
	var logged []string
	members := []readiness.Member{
		{Name: "status", Check: readiness.HTTPCheck(target)},
		{Name: "refused", Check: readiness.HTTPCheck("http://admin:user-secret-2@" + testkit.ClosedAddr(t) + "/health?token=query-secret-3")},
		{Name: "unresolvable", Check: readiness.TCPCheck("leader-4.group.invalid:8000")},
	}
	// Timeouts long enough for a busy machine: every member answers, and a
	// check ended by its timeout would show "timeout" instead.
	c, err := readiness.NewChecker(members, readiness.Options{Clock: testingclock.NewFakePassiveClock(t0), MemberTimeout: time.Minute, Timeout: time.Minute, OnChange: func(m readiness.MemberResult) {
		logged = append(logged, fmt.Sprint(m.Err))
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	for name, want := range map[string]string{
		"status":       "internal server error: HTTP status 503\n",
		"refused":      "internal server error: connection refused\n",
		"unresolvable": "internal server error: DNS name not found\n",
	} {
		if got := serve(h, "/readyz/"+name).Body.String(); got != want {
			t.Errorf("GET /readyz/%s = %q, want %q", name, got, want)
		}
	}
	if len(logged) != len(members) {
		t.Fatalf("OnChange saw %d results, want %d", len(logged), len(members))
	}
	for _, text := range logged {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the error given to OnChange leaks %q: %s", s, text)
			}
		}
	}
}

// Only GET and HEAD are answered; other methods get 405 without a check.
func TestHandlerRefusesOtherMethods(t *testing.T) {
	check := &scriptedCheck{}
	h := newTestChecker(t, []readiness.Member{{Name: "a", Check: check.Check}}).Handler()
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, "BREW"} {
		for _, path := range []string{"/readyz", "/readyz/a", "/other"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader("x")))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s = %d, Allow %q; want 405, Allow \"GET, HEAD\"", method, path, rec.Code, rec.Header().Get("Allow"))
			}
		}
	}
	if n := check.Calls(); n != 0 {
		t.Errorf("the member was checked %d times, want 0", n)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/readyz", nil))
	if rec.Code != http.StatusOK || check.Calls() != 1 {
		t.Errorf("HEAD /readyz = %d after %d checks, want 200 after 1", rec.Code, check.Calls())
	}
}

// FuzzMemberURLsHideSecrets gives member URLs that carry a marker secret in
// their user info, a secret query value or their fragment to ParseMember and
// HTTPCheck, and checks that the marker appears in no error, no answer of
// the handler (with or without the full errors) and no error given to
// OnChange.
//
//	go test -run='^$' -fuzz=FuzzMemberURLsHideSecrets -fuzztime=60s ./readiness
func FuzzMemberURLsHideSecrets(f *testing.F) {
	redacttest.AddSeeds(f)
	refused := testkit.ClosedAddr(f)
	f.Fuzz(func(t *testing.T, position uint8, key, before, after string) {
		raw := redacttest.MarkedURL("http", refused, "/health", redacttest.Position(position), key, before, after)
		var texts []string
		m, err := readiness.ParseMember("w-1=" + raw)
		if err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
			m = readiness.Member{Name: "w-1", Check: readiness.HTTPCheck(raw)}
		}
		texts = append(texts, fmt.Sprint(m.Check(context.Background())))
		c, err := readiness.NewChecker([]readiness.Member{m}, readiness.Options{OnChange: func(r readiness.MemberResult) {
			texts = append(texts, fmt.Sprintf("%v %+v", r.Err, r.State))
		}})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/readyz?verbose", "/readyz/w-1"} {
			texts = append(texts, serve(c.Handler(), path).Body.String())
		}
		if leaks := redacttest.Leaks(texts...); len(leaks) > 0 {
			t.Fatalf("member URL %q: the marker leaks in %q", raw, leaks)
		}
	})
}
