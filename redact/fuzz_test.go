package redact_test

import (
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/udrain/udrain/redact"
	"github.com/udrain/udrain/redact/redacttest"
)

// FuzzURL builds URLs that carry redacttest.Marker in the user info, a
// secret query value or the fragment, around fuzzed text, and checks that
// neither URL nor a Secrets of the URL lets it through, in the forms an
// error message may take: net/url's own errors and renderings, Go quoting.
//
//	go test -run='^$' -fuzz=FuzzURL -fuzztime=60s ./redact
func FuzzURL(f *testing.F) {
	redacttest.AddSeeds(f)
	f.Fuzz(func(t *testing.T, position uint8, key, before, after string) {
		raw := redacttest.MarkedURL("https", "gpustack:443", "/healthz", redacttest.Position(position), key, before, after)
		var s redact.Secrets
		s.AddURL(raw)
		texts := []string{redact.URL(raw), s.Scrub(raw), s.Scrub(strconv.Quote(raw)), s.Scrub(fmt.Sprintf("%q", raw))}
		if u, err := redact.Parse(raw); err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%#v", err))
		} else {
			// Callers print a parse's host and port as they are (a dial, a
			// DNS error, a port check), so those must hold no secret.
			texts = append(texts, u.Host, s.Scrub(u.String()), s.Scrub(u.Redacted()), s.Error(&url.Error{Op: "Get", URL: u.String(), Err: fmt.Errorf("refused")}).Error())
		}
		if leaks := redacttest.Leaks(texts...); len(leaks) > 0 {
			t.Fatalf("URL %q: the marker leaks in %q", raw, leaks)
		}
	})
}
