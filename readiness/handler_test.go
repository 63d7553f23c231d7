package readiness_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
)

// serve sends one GET for target (path and query) to h.
func serve(h http.Handler, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

// answer is what a probe sees of a response.
type answer struct {
	Code   int
	Header http.Header
	Body   string
}

func answerOf(rec *httptest.ResponseRecorder) answer {
	return answer{Code: rec.Code, Header: rec.Result().Header, Body: rec.Body.String()}
}

var (
	// The headers of k8s.io/apiserver's healthz handler: explicit on the
	// group path and on errors, sniffed by net/http on a member's "ok".
	plainHeaders = http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
	}
	memberOKHeaders = http.Header{
		"Content-Type": {"text/plain; charset=utf-8"},
	}
)

func newTestChecker(t testing.TB, members []readiness.Member) *readiness.Checker {
	t.Helper()
	c, err := readiness.NewChecker(members, readiness.Options{Clock: testingclock.NewFakePassiveClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHandlerGolden(t *testing.T) {
	healthy := newTestChecker(t, []readiness.Member{
		{Name: "leader", Check: fixed(nil)},
		{Name: "leader-1", Check: fixed(nil)},
	}).Handler()
	failingMembers := []readiness.Member{
		{Name: "leader", Check: fixed(nil)},
		{Name: "leader-1", Check: fixed(&readiness.HTTPStatusError{URL: "http://leader-1.g.ns:8000/health", StatusCode: 503, Status: "503 Service Unavailable"})},
		{Name: "leader-2", Check: fixed(readiness.Gone(errors.New("dial tcp 10.0.0.3:8000: connect: connection refused")))},
	}
	failing := newTestChecker(t, failingMembers).Handler()
	exposing, err := readiness.NewChecker(failingMembers, readiness.Options{Clock: testingclock.NewFakePassiveClock(t0), ExposeMemberErrors: true})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		handler http.Handler
		target  string
		want    answer
	}{
		{"success", healthy, "/readyz", answer{200, plainHeaders, "ok"}},
		{"success verbose", healthy, "/readyz?verbose", answer{200, plainHeaders, "[+]leader ok\n[+]leader-1 ok\nreadyz check passed\n"}},
		{"verbose with a value", healthy, "/readyz?verbose=false", answer{200, plainHeaders, "[+]leader ok\n[+]leader-1 ok\nreadyz check passed\n"}},
		{"success ignores unknown exclude unless verbose", healthy, "/readyz?exclude=nope", answer{200, plainHeaders, "ok"}},
		{"failure is always verbose", failing, "/readyz", answer{500, plainHeaders,
			"[+]leader ok\n[-]leader-1 failed: reason withheld\n[-]leader-2 failed: reason withheld\nreadyz check failed\n"}},
		{"failure verbose", failing, "/readyz?verbose", answer{500, plainHeaders,
			"[+]leader ok\n[-]leader-1 failed: reason withheld\n[-]leader-2 failed: reason withheld\nreadyz check failed\n"}},
		{"exclude one failing member", failing, "/readyz?exclude=leader-1", answer{500, plainHeaders,
			"[+]leader ok\n[+]leader-1 excluded: ok\n[-]leader-2 failed: reason withheld\nreadyz check failed\n"}},
		{"exclude all failing members", failing, "/readyz?exclude=leader-1&exclude=leader-2", answer{200, plainHeaders, "ok"}},
		{"exclude all failing members verbose", failing, "/readyz?exclude=leader-2&verbose&exclude=leader-1", answer{200, plainHeaders,
			"[+]leader ok\n[+]leader-1 excluded: ok\n[+]leader-2 excluded: ok\nreadyz check passed\n"}},
		{"exclude a healthy member", failing, "/readyz?exclude=leader", answer{500, plainHeaders,
			"[+]leader excluded: ok\n[-]leader-1 failed: reason withheld\n[-]leader-2 failed: reason withheld\nreadyz check failed\n"}},
		{"unknown excludes are sorted, quoted, deduplicated", healthy, "/readyz?verbose&exclude=zz&exclude=a%22b&exclude=zz&exclude=leader", answer{200, plainHeaders,
			"[+]leader excluded: ok\n[+]leader-1 ok\nwarn: some health checks cannot be excluded: no matches for \"a\\\"b\",\"zz\"\nreadyz check passed\n"}},
		{"unknown exclude on failure", failing, "/readyz?exclude=x", answer{500, plainHeaders,
			"[+]leader ok\n[-]leader-1 failed: reason withheld\n[-]leader-2 failed: reason withheld\nwarn: some health checks cannot be excluded: no matches for \"x\"\nreadyz check failed\n"}},
		{"empty exclude is unknown", healthy, "/readyz?verbose&exclude=", answer{200, plainHeaders,
			"[+]leader ok\n[+]leader-1 ok\nwarn: some health checks cannot be excluded: no matches for \"\"\nreadyz check passed\n"}},
		{"member ok", failing, "/readyz/leader", answer{200, memberOKHeaders, "ok"}},
		{"member ok ignores the query", failing, "/readyz/leader?verbose&exclude=leader", answer{200, memberOKHeaders, "ok"}},
		{"member failed shows the reason", failing, "/readyz/leader-1", answer{500, plainHeaders,
			"internal server error: HTTP status 503\n"}},
		{"member gone shows the reason", failing, "/readyz/leader-2", answer{500, plainHeaders,
			"internal server error: gone\n"}},
		{"excluding does not hide a member's own path", failing, "/readyz/leader-1?exclude=leader-1", answer{500, plainHeaders,
			"internal server error: HTTP status 503\n"}},
		{"member failed shows the error when exposed", exposing.Handler(), "/readyz/leader-1", answer{500, plainHeaders,
			"internal server error: GET http://leader-1.g.ns:8000/health: 503 Service Unavailable\n"}},
		{"member gone shows the error when exposed", exposing.Handler(), "/readyz/leader-2", answer{500, plainHeaders,
			"internal server error: dial tcp 10.0.0.3:8000: connect: connection refused\n"}},
		{"group path withholds reasons when exposed", exposing.Handler(), "/readyz", answer{500, plainHeaders,
			"[+]leader ok\n[-]leader-1 failed: reason withheld\n[-]leader-2 failed: reason withheld\nreadyz check failed\n"}},
		{"unknown member", failing, "/readyz/leader-9", answer{404, plainHeaders, "404 page not found\n"}},
		{"trailing slash", failing, "/readyz/", answer{404, plainHeaders, "404 page not found\n"}},
		{"nested path", failing, "/readyz/leader/x", answer{404, plainHeaders, "404 page not found\n"}},
		{"other path", failing, "/healthz", answer{404, plainHeaders, "404 page not found\n"}},
		{"root", failing, "/", answer{404, plainHeaders, "404 page not found\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, answerOf(serve(tt.handler, tt.target))); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", tt.target, diff)
			}
		})
	}
}

func TestHandlerWithThresholdShowsFailureCount(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	c, err := readiness.NewChecker([]readiness.Member{{Name: "w", Check: fixed(&readiness.HTTPStatusError{StatusCode: 503})}}, readiness.Options{FailureThreshold: 2, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	if diff := cmp.Diff(answer{200, memberOKHeaders, "ok"}, answerOf(serve(h, "/readyz/w"))); diff != "" {
		t.Errorf("after one failure (-want +got):\n%s", diff)
	}
	clock.SetTime(clock.Now().Add(readiness.DefaultTTL))
	if diff := cmp.Diff(answer{500, plainHeaders, "internal server error: 2 consecutive failures: HTTP status 503\n"}, answerOf(serve(h, "/readyz/w"))); diff != "" {
		t.Errorf("after two failures (-want +got):\n%s", diff)
	}
}

func TestHandlerUnderPrefix(t *testing.T) {
	c := newTestChecker(t, []readiness.Member{{Name: "a", Check: fixed(nil)}})
	mux := http.NewServeMux()
	mux.Handle("/groups/g1/", http.StripPrefix("/groups/g1", c.Handler()))
	for target, want := range map[string]answer{
		"/groups/g1/readyz?verbose": {200, plainHeaders, "[+]a ok\nreadyz check passed\n"},
		"/groups/g1/readyz/a":       {200, memberOKHeaders, "ok"},
		"/groups/g1/other":          {404, plainHeaders, "404 page not found\n"},
	} {
		if diff := cmp.Diff(want, answerOf(serve(mux, target))); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", target, diff)
		}
	}
}

// TestHandlerWithRealMembers checks members over the network: one healthy,
// one that hangs, one that refuses connections, one that answers 503, one
// whose name does not resolve. The member timeout tells the one that hangs
// from the one that answers: it must be far above a local answer on a
// loaded machine (300 ms was not: the healthy member was a soft failure
// under make stress, with the race detector on one CPU at load 8), and the
// test waits for it once, for the hanging member.
func TestHandlerWithRealMembers(t *testing.T) {
	c, err := readiness.NewChecker([]readiness.Member{
		{Name: "healthy", Check: readiness.HTTPCheck(newStatusServer(t, 200, "").URL + "/health")},
		{Name: "hanging", Check: readiness.HTTPCheck(newHangingServer(t).URL + "/health")},
		{Name: "refusing", Check: readiness.HTTPCheck("http://" + testkit.ClosedAddr(t) + "/health")},
		{Name: "unavailable", Check: readiness.HTTPCheck(newStatusServer(t, 503, "loading").URL + "/health")},
		{Name: "unresolvable", Check: readiness.TCPCheck("leader-4.group.invalid:8000")},
	}, readiness.Options{MemberTimeout: 2 * time.Second, Timeout: 3 * time.Second, FailureThreshold: 3, Clock: testingclock.NewFakePassiveClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	// With a threshold of 3, the soft failures (hanging, 503) are
	// tolerated once; refusing and unresolvable are down at once.
	wantGroup := answer{500, plainHeaders, "[+]healthy ok\n[+]hanging ok\n[-]refusing failed: reason withheld\n[+]unavailable ok\n[-]unresolvable failed: reason withheld\nreadyz check failed\n"}
	if diff := cmp.Diff(wantGroup, answerOf(serve(h, "/readyz"))); diff != "" {
		t.Errorf("GET /readyz (-want +got):\n%s", diff)
	}
	for name, wantReason := range map[string]string{
		"refusing":     "connection refused",
		"unresolvable": "DNS name not found",
	} {
		got := answerOf(serve(h, "/readyz/"+name))
		if got.Code != 500 || got.Body != "internal server error: "+wantReason+"\n" {
			t.Errorf("GET /readyz/%s = %d %q, want 500 with %q", name, got.Code, got.Body, wantReason)
		}
	}
	r := c.Snapshot()
	for name, want := range map[string]readiness.Class{
		"healthy": readiness.Passed, "hanging": readiness.SoftFailure, "refusing": readiness.HardFailure,
		"unavailable": readiness.SoftFailure, "unresolvable": readiness.HardFailure,
	} {
		if m, _ := r.Member(name); m.State.LastClass != want {
			t.Errorf("member %s: last class %v (error %v), want %v", name, m.State.LastClass, m.State.LastErr, want)
		}
	}
}
