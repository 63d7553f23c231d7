package readiness_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/readiness"
)

// fuzzMember is a member of the fuzzed checker and its fixed verdict.
type fuzzMember struct {
	name   string
	reason string // "" for healthy
}

var fuzzMembers = []fuzzMember{
	{"leader", ""},
	{"leader-1", "secret reason of leader-1"},
	{"w.x_y", ""},
	{"9", "secret reason of 9"},
}

// FuzzHandler sends arbitrary paths and queries to the handler and compares
// each answer with a model of the kube-apiserver's rules written
// independently of the handler. It also checks that no request causes a
// check beyond one per member (the clock stands still, so the first results
// stay fresh) and that no error text leaks, not even on a member's own path
// (which shows its class only).
//
//	go test -run='^$' -fuzz=FuzzHandler -fuzztime=60s ./readiness
func FuzzHandler(f *testing.F) {
	for _, seed := range [][2]string{
		{"/readyz", ""},
		{"/readyz", "verbose"},
		{"/readyz", "exclude=leader-1&exclude=9&verbose"},
		{"/readyz", "exclude=nope&exclude=%22q%22&exclude=nope"},
		{"/readyz", "exclude=leader-1;exclude=9"},
		{"/readyz", "exclude=%zz&verbose"},
		{"/readyz/leader-1", "verbose"},
		{"/readyz/w.x_y", ""},
		{"/readyz/", ""},
		{"/readyz/../readyz", ""},
		{"/readyz/leader/", ""},
		{"/READYZ", ""},
		{"", ""},
	} {
		f.Add(seed[0], seed[1])
	}

	var calls [4]atomic.Int32
	var members []readiness.Member
	for i, m := range fuzzMembers {
		var err error
		if m.reason != "" {
			err = errors.New(m.reason)
		}
		members = append(members, readiness.Member{Name: m.name, Check: func(context.Context) error {
			calls[i].Add(1)
			return err
		}})
	}
	c, err := readiness.NewChecker(members, readiness.Options{Clock: testingclock.NewFakePassiveClock(t0)})
	if err != nil {
		f.Fatal(err)
	}
	h := c.Handler()

	f.Fuzz(func(t *testing.T, path, rawQuery string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL = &url.URL{Path: path, RawQuery: rawQuery}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)

		want := modelAnswer(path, rawQuery)
		got := answerOf(rec)
		if got.Code != want.Code || got.Body != want.Body || !sameHeaders(got.Header, want.Header) {
			t.Fatalf("path %q query %q:\n got  %d %v %q\n want %d %v %q", path, rawQuery, got.Code, got.Header, got.Body, want.Code, want.Header, want.Body)
		}
		if strings.Contains(got.Body, "secret") {
			t.Fatalf("path %q query %q: a reason leaked: %q", path, rawQuery, got.Body)
		}
		for i := range calls {
			if n := calls[i].Load(); n > 1 {
				t.Fatalf("member %s checked %d times, want at most once", fuzzMembers[i].name, n)
			}
		}
	})
}

func sameHeaders(a, b http.Header) bool {
	return fmt.Sprint(a) == fmt.Sprint(b) // fmt sorts map keys
}

// modelAnswer is what the kube-apiserver's healthz handler answers for the
// fuzz members, mounted at /readyz on a mux that matches paths exactly.
func modelAnswer(path, rawQuery string) answer {
	notFound := answer{404, plainHeaders, "404 page not found\n"}
	if name, ok := strings.CutPrefix(path, "/readyz/"); ok {
		for _, m := range fuzzMembers {
			if m.name == name {
				if m.reason != "" {
					// A reason of the fuzz members' checks is no known
					// class; the error itself is withheld.
					return answer{500, plainHeaders, "internal server error: check failed\n"}
				}
				return answer{200, memberOKHeaders, "ok"}
			}
		}
		return notFound
	}
	if path != "/readyz" {
		return notFound
	}

	query, _ := url.ParseQuery(rawQuery) // what parses is used, as r.URL.Query() does
	unknown := map[string]bool{}
	for _, name := range query["exclude"] {
		unknown[name] = true
	}
	var lines []string
	failed := false
	for _, m := range fuzzMembers {
		excluded := false
		for _, name := range query["exclude"] {
			excluded = excluded || name == m.name
		}
		delete(unknown, m.name)
		switch {
		case excluded:
			lines = append(lines, "[+]"+m.name+" excluded: ok")
		case m.reason != "":
			failed = true
			lines = append(lines, "[-]"+m.name+" failed: reason withheld")
		default:
			lines = append(lines, "[+]"+m.name+" ok")
		}
	}
	if len(unknown) > 0 {
		var names []string
		for name := range unknown {
			names = append(names, name)
		}
		sort.Strings(names)
		quoted := ""
		for i, name := range names {
			if i > 0 {
				quoted += ","
			}
			quoted += fmt.Sprintf("%q", name)
		}
		lines = append(lines, "warn: some health checks cannot be excluded: no matches for "+quoted)
	}
	if failed {
		return answer{500, plainHeaders, strings.Join(lines, "\n") + "\nreadyz check failed\n"}
	}
	if _, verbose := query["verbose"]; !verbose {
		return answer{200, plainHeaders, "ok"}
	}
	return answer{200, plainHeaders, strings.Join(lines, "\n") + "\nreadyz check passed\n"}
}
