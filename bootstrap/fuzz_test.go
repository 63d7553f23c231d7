package bootstrap

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/redact/redacttest"
)

// FuzzWaitForServerHidesSecrets waits for URLs that carry a marker secret in
// their user info, a secret query value or their fragment, around fuzzed
// text, and checks that the marker appears in no error, attempt, result,
// target or log line, whether the URL is valid or not.
//
//	go test -run='^$' -fuzz=FuzzWaitForServerHidesSecrets -fuzztime=60s ./bootstrap
func FuzzWaitForServerHidesSecrets(f *testing.F) {
	redacttest.AddSeeds(f)
	refused := testkit.ClosedAddr(f)
	f.Fuzz(func(t *testing.T, position uint8, key, before, after string) {
		for _, scheme := range []string{"http", "https"} {
			raw := redacttest.MarkedURL(scheme, refused, "/healthz", redacttest.Position(position), key, before, after)
			logger, lines := newCaptureLogger()
			var texts []string
			opts := Options{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, LogEvery: 1, OnAttempt: func(a Attempt) {
				texts = append(texts, fmt.Sprintf("%+v", a))
				if a.Err != nil {
					texts = append(texts, a.Err.Error())
				}
			}}
			res, err := WaitForServer(klogContext(logger), raw, opts)
			texts = append(texts, fmt.Sprintf("%+v", res))
			if err != nil {
				texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
				var ue *url.Error
				if errors.As(err, &ue) {
					texts = append(texts, ue.URL)
				}
				if we, ok := err.(*WaitError); ok {
					texts = append(texts, we.Target)
				}
			}
			for _, l := range lines() {
				texts = append(texts, fmt.Sprintf("%s %v", l.Msg, l.Values))
			}
			if leaks := redacttest.Leaks(texts...); len(leaks) > 0 {
				t.Fatalf("WaitForServer(%q): the marker leaks in %q", raw, leaks)
			}
		}
	})
}
