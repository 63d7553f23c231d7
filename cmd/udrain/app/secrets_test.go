package app

import (
	"net"
	"testing"

	"github.com/udrain/udrain/redact/redacttest"
)

// FuzzWaitServerHidesSecrets waits for URLs that carry a marker secret in
// their user info, a secret query value or their fragment (one attempt, to
// a port where nothing listens) and checks that the marker appears neither
// in the table nor in the JSON report, nor in the log lines and errors on
// stderr.
//
//	go test -run='^$' -fuzz=FuzzWaitServerHidesSecrets -fuzztime=60s ./cmd/udrain/app
func FuzzWaitServerHidesSecrets(f *testing.F) {
	redacttest.AddSeeds(f)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	f.Fuzz(func(t *testing.T, position uint8, key, before, after string) {
		raw := redacttest.MarkedURL("http", refused, "/healthz", redacttest.Position(position), key, before, after)
		for _, output := range []string{"table", "json", "yaml"} {
			r := run(t, t.Context(), noClusterConfig(t), "wait-server", raw, "--max-attempts", "1", "--attempt-timeout", "200ms", "-v", "4", "-o", output)
			if r.code != ExitError && r.code != ExitUsage {
				t.Fatalf("udrain wait-server %q: exit code %d, want %d or %d", raw, r.code, ExitError, ExitUsage)
			}
			if leaks := redacttest.Leaks(r.stdout, r.stderr); len(leaks) > 0 {
				t.Fatalf("udrain wait-server %q -o %s: the marker leaks in %q", raw, output, leaks)
			}
		}
	})
}
