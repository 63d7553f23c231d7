package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/redact/redacttest"
)

// noClusterConfig is a test config whose client factory fails the test:
// the command line must be refused before the cluster is contacted.
func noClusterConfig(t *testing.T) Config {
	cfg, _ := testConfig(nil)
	cfg.NewClient = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		t.Error("the cluster was contacted")
		return nil, os.ErrInvalid
	}
	return cfg
}

// wantUsageError runs args with cfg and checks that they exit 2 with
// stderr containing want; it returns stderr.
func wantUsageError(t *testing.T, cfg Config, args []string, want string) string {
	t.Helper()
	r := run(t, t.Context(), cfg, args...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("%q: exit code %d, stderr %q; want %d and %q", args, r.code, r.stderr, ExitUsage, want)
	}
	return r.stderr
}

// Mistakes in the command line exit 2 before the cluster is contacted.
func TestUsageErrorsBeforeTheCluster(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"empty domain", []string{"plan", ""}, "udrain plan takes one upgrade domain, not an empty argument"},
		{"blank domain", []string{"drain", " "}, "not an empty argument"},
		{"empty domain in uncordon", []string{"uncordon", ""}, "not an empty argument"},
		{"bad domain label", []string{"plan", "ud-1", "--domain-label", "bad key!"}, `invalid --domain-label: "bad key!" is not a label key`},
		{"bad domain label in domains", []string{"domains", "--domain-label", "a/b/c"}, "is not a label key"},
		{"bad domain label in gpu", []string{"gpu", "--domain-label", "-x"}, "is not a label key"},
		{"bad request timeout", []string{"domains", "--request-timeout", "abc"}, `--request-timeout="abc": want a duration with a unit`},
		{"bad request timeout elsewhere", []string{"version", "--request-timeout", "1x"}, "--request-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantUsageError(t, noClusterConfig(t), tc.args, tc.wantStderr) })
	}
}

// A context, cluster or user the kubeconfig does not have is a usage
// error that lists what it has, before any request.
func TestUnknownKubeconfigNames(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: a, user: u}}
current-context: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(nil)
	cfg.NewClient = nil // the real one, over the connection flags
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"--context", "nosuch"}, `invalid --context: "nosuch": the kubeconfig has no such context (it has: a, b)`},
		{[]string{"--cluster", "nosuch"}, `invalid --cluster: "nosuch": the kubeconfig has no such cluster (it has: a)`},
		{[]string{"--user", "nosuch"}, `invalid --user: "nosuch": the kubeconfig has no such user (it has: u)`},
	} {
		wantUsageError(t, cfg, append([]string{"domains", "--kubeconfig", kubeconfig}, tc.args...), tc.wantStderr)
	}
}

// The commands that do not talk to the cluster refuse its connection flags
// instead of ignoring them, and name their own flag for the TLS ones.
func TestClusterFlagsRefusedWhereTheyHaveNoEffect(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"serve-readiness", "--member", "a=https://a:1", "--certificate-authority", "ca.crt"}, "--certificate-authority connects to the Kubernetes API server and has no effect on serve-readiness; use --ca-file"},
		{[]string{"serve-readiness", "--member", "a=https://a:1", "--tls-server-name", "x"}, "use --server-name"},
		{[]string{"serve-readiness", "--member", "a=https://a:1", "--insecure-skip-tls-verify"}, "--insecure-skip-tls-verify connects to the Kubernetes API server and has no effect on serve-readiness; drop it"},
		{[]string{"wait-server", "https://a:1", "--client-certificate", "c.crt"}, "has no effect on wait-server; use --client-cert"},
		{[]string{"wait-server", "http://a:1", "-n", "default"}, "--namespace connects to the Kubernetes API server and has no effect on wait-server"},
		{[]string{"wait-server", "http://a:1", "--kube-api-qps", "10"}, "--kube-api-qps"},
		// The TLS flags of the command itself are for https members only.
		{[]string{"serve-readiness", "--member", "a=http://a:1", "--ca-file", "ca.crt"}, "are for https members, and no member is https"},
	} {
		wantUsageError(t, noClusterConfig(t), tc.args, tc.wantStderr)
	}
}

// Errors of the libraries name the flags of the command, never Go fields
// nor flags the command does not have.
func TestErrorsNameTheCommandsFlags(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"serve-readiness", "--member", "a=http://a:1", "--member-timeout", "2s"}, "invalid --member-timeout: 2s is longer than the timeout of a round of checks (800ms); make it shorter or raise that (see --check-timeout)"},
		{[]string{"serve-readiness", "--member", "a=http://a:1", "--failure-threshold", "-1"}, "invalid --failure-threshold"},
		{[]string{"serve-readiness", "--member", "a=http://a:1", "--max-connections", "-1"}, "invalid --max-connections"},
		{[]string{"serve-readiness", "--member", "a=https://a:1", "--ca-file", "/nonexistent/ca.crt"}, "invalid --ca-file: cannot read /nonexistent/ca.crt"},
		{[]string{"serve-readiness", "--member", "a=https://a:1", "--client-cert", "c.crt"}, "invalid --client-cert: set it and the client key, or neither (see --client-key)"},
		{[]string{"wait-server", "http://a:1", "--attempt-timeout=-1s"}, "invalid --attempt-timeout: -1s is negative"},
		{[]string{"wait-server", "http://a:1", "--ca-file", "ca.crt"}, "invalid --ca-file: is set but target http://a:1 is not https://"},
		{[]string{"wait-server", "http://a:1", "--client-cert", "c.crt"}, "invalid --client-cert: is set but target"},
		{[]string{"wait-server", "https://a:1", "--client-key", "c.key"}, "invalid --client-cert: set it and the client key for https://a:1, or neither (see --client-key)"},
		{[]string{"wait-server", "http:///x"}, "invalid URL: http:///x has no host"},
	} {
		cfg := noClusterConfig(t)
		stderr := wantUsageError(t, cfg, tc.args, tc.wantStderr)
		if field := regexp.MustCompile(`\b(readiness|bootstrap|gate)\.|\b[A-Z][a-z]+[A-Z][A-Za-z]*\b`).FindString(stderr); field != "" {
			t.Errorf("%q: stderr names a Go field (%s): %q", tc.args, field, stderr)
		}
		cmd, _, err := NewCommand(streamsOf(nil, nil), cfg).Find(tc.args[:1])
		if err != nil {
			t.Fatal(err)
		}
		cmd.InitDefaultHelpFlag()
		for _, flag := range regexp.MustCompile(`--[a-z][a-z-]+`).FindAllString(stderr, -1) {
			if cmd.Flags().Lookup(flag[2:]) == nil && cmd.InheritedFlags().Lookup(flag[2:]) == nil {
				t.Errorf("%q: stderr names %s, which %s does not have: %q", tc.args, flag, cmd.Name(), stderr)
			}
		}
	}
}

// FuzzUsageErrorsHideSecrets gives URLs that carry a marker secret to the
// commands that take URLs, in the places where a mistake echoes them: an
// extra argument, a member that does not parse, a URL that is not valid.
//
//	go test -run='^$' -fuzz=FuzzUsageErrorsHideSecrets -fuzztime=60s ./cmd/udrain/app
func FuzzUsageErrorsHideSecrets(f *testing.F) {
	redacttest.AddSeeds(f)
	f.Fuzz(func(t *testing.T, position uint8, key, before, after string) {
		raw := redacttest.MarkedURL("http", "server.ns:80", "/healthz", redacttest.Position(position), key, before, after)
		for _, args := range [][]string{
			{"wait-server", raw, "extra-arg"},
			{"wait-server", "-o", "json", raw, "extra-arg"},
			{"serve-readiness", raw},
			{"serve-readiness", "--member", raw},
			{"serve-readiness", "--member", "w-1=" + raw, "--member-timeout=-1s"},
			{"serve-readiness", "--member", "w-1=" + strings.Replace(raw, "http:", "ftp:", 1)},
			{"serve-readiness", "--member", "w 1=" + raw},
			{"wait-server", strings.Replace(raw, "http://", "", 1), "--max-attempts=1", "--attempt-timeout=50ms"},
			{"wait-server", strings.Replace(raw, "server.ns:80", "server.ns:bad", 1), "--max-attempts=1", "--attempt-timeout=50ms"},
		} {
			// A fuzzed URL may happen to be valid: it must not make the
			// command wait (or serve) for long.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			r := run(t, ctx, noClusterConfig(t), args...)
			cancel()
			if r.code != ExitUsage {
				continue // a fuzzed URL may happen to be valid; FuzzWaitServerHidesSecrets covers those
			}
			if leaks := redacttest.Leaks(r.stdout, r.stderr); len(leaks) > 0 {
				t.Fatalf("udrain %q: the marker leaks in %q", args, leaks)
			}
		}
	})
}

// A URL given where a command was expected is echoed redacted: Run's
// scrubbing of the whole output leaves secrets shorter than 4 characters
// alone, so the echo itself must hide them.
func TestUnknownCommandEchoHidesShortSecrets(t *testing.T) {
	r := run(t, t.Context(), noClusterConfig(t), "http://h.example/?token=Zq7&a=1")
	if r.code != ExitUsage {
		t.Fatalf("exit code %d, want %d: %s", r.code, ExitUsage, r.stderr)
	}
	if !strings.Contains(r.stderr, `unknown command "http://h.example/?token=xxxxx&a=1"`) || strings.Contains(r.stdout+r.stderr, "Zq7") {
		t.Errorf("stderr %q: want the URL echoed with its token redacted", r.stderr)
	}
}

// Hints name flags, in the result, the error and the log lines of the
// libraries alike.
func TestHintsNameFlags(t *testing.T) {
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer unavailable.Close()
	for _, output := range []string{"table", "json"} {
		r := run(t, t.Context(), noClusterConfig(t), "wait-server", unavailable.URL, "--max-attempts", "1", "-o", output)
		if r.code != ExitError {
			t.Fatalf("exit code %d, want %d: %s", r.code, ExitError, r.stderr)
		}
		if n := strings.Count(r.stdout+r.stderr, "--status"); n < 2 || strings.Contains(r.stdout+r.stderr, "StatusCodes") {
			t.Errorf("-o %s: the hint names --status %d times (want it in the log line and the error) or names the Go field:\nstdout:\n%s\nstderr:\n%s", output, n, r.stdout, r.stderr)
		}
	}
}
