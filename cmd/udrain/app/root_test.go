package app

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/kubeclient"
)

func TestDisplayName(t *testing.T) {
	for argv0, want := range map[string]string{
		"/usr/local/bin/kubectl-udrain": "kubectl udrain",
		"kubectl-udrain.exe":            "kubectl udrain",
		"./bin/udrain":                  "udrain",
		"udrain-v2":                     "udrain-v2",
		"kubectl-":                      "kubectl-",
		"":                              "udrain",
	} {
		if got := DisplayName(argv0); got != want {
			t.Errorf("DisplayName(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// TestPluginHelp: invoked as kubectl-udrain, the help shows "kubectl
// udrain" in usage lines and examples.
func TestPluginHelp(t *testing.T) {
	cfg, _ := testConfig(nil)
	cfg.Name = DisplayName("/usr/bin/kubectl-udrain")
	r := run(t, t.Context(), cfg, "drain", "--help")
	if r.code != ExitOK {
		t.Fatalf("exit code %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"  kubectl udrain drain DOMAIN [flags]", "--ignore-daemonsets", "--kubeconfig string", "--kube-api-qps float32"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help has no %q:\n%s", want, r.stdout)
		}
	}
	r = run(t, t.Context(), cfg, "--help")
	if !strings.Contains(r.stdout, "  kubectl udrain rollout --ignore-daemonsets --upgrade-command") || !strings.Contains(r.stdout, "limited to 50 per second in bursts of 100") {
		t.Errorf("root help does not show the plugin name and the rate limits:\n%s", r.stdout)
	}
	r = run(t, t.Context(), cfg, "plan")
	if !strings.Contains(r.stderr, "See 'kubectl udrain plan --help' for usage.") {
		t.Errorf("usage hint does not use the plugin name:\n%s", r.stderr)
	}
}

// TestRootWithoutCommand prints the help and succeeds.
func TestRootWithoutCommand(t *testing.T) {
	cfg, _ := testConfig(nil)
	r := run(t, t.Context(), cfg)
	if r.code != ExitOK || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("exit code %d, stdout %q", r.code, r.stdout)
	}
}

// TestRESTConfig: the connection flags reach the client configuration, with
// raised rate limits.
func TestRESTConfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: a
  context: {cluster: a, user: u}
- name: b
  context: {cluster: b, user: u}
current-context: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	*flags.KubeConfig = kubeconfig
	*flags.Context = "b"
	cfg, err := kubeclient.ConfigFromFlags(flags, (&options{}).clientOptions())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://b.example:6443" || cfg.QPS != 50 || cfg.Burst != 100 || !strings.HasPrefix(cfg.UserAgent, "udrain/") {
		t.Errorf("config host %s qps %v burst %d agent %q; want context b's server, 50, 100, udrain/...", cfg.Host, cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
}

// A request the API server does not answer within --request-timeout fails
// with kubeclient's RequestTimeoutError, described by the flag that sets
// the bound, in the error and in the JSON report alike; without a limit
// (--request-timeout 0) the command waits, here until its context ends.
func TestRequestTimeoutNamesItsFlag(t *testing.T) {
	done := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer stalled.Close()
	defer close(done)
	kubeconfig := testkit.Kubeconfig(t, stalled.URL)
	cfg, _ := testConfig(nil)
	cfg.NewClient = nil // the real one, over the connection flags
	for _, output := range []string{"table", "json"} {
		r := run(t, t.Context(), cfg, "domains", "--kubeconfig", kubeconfig, "--request-timeout", "300ms", "-o", output)
		if r.code != ExitError || !strings.Contains(r.stdout+r.stderr, "no answer within 300ms (--request-timeout)") || strings.Contains(r.stdout+r.stderr, "kubeclient.") {
			t.Errorf("-o %s: exit code %d, want %d and the error naming --request-timeout, not the Go setting:\nstdout:\n%s\nstderr:\n%s", output, r.code, ExitError, r.stdout, r.stderr)
		}
	}
}

// The client settings of the flags: --request-timeout 0 means no limit, as
// kubectl's, where kubeclient's zero is its default; requests name udrain
// and its version.
func TestClientOptions(t *testing.T) {
	agent := kubeclient.UserAgent("udrain", thisBuild().Version)
	for _, tc := range []struct {
		o    options
		want kubeclient.Options
	}{
		{options{qps: 50, burst: 100, requestTimeout: kubeclient.DefaultRequestTimeout}, kubeclient.Options{QPS: 50, Burst: 100, RequestTimeout: kubeclient.DefaultRequestTimeout, UserAgent: agent}},
		{options{qps: 50, burst: 100}, kubeclient.Options{QPS: 50, Burst: 100, RequestTimeout: kubeclient.NoRequestTimeout, UserAgent: agent}},
		{options{qps: 7, burst: 9, requestTimeout: 5 * time.Second}, kubeclient.Options{QPS: 7, Burst: 9, RequestTimeout: 5 * time.Second, UserAgent: agent}},
	} {
		if diff := cmp.Diff(tc.want, tc.o.clientOptions()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

// TestRateLimitFlags: --kube-api-qps and --kube-api-burst must be
// positive.
func TestRateLimitFlags(t *testing.T) {
	cfg, _ := testConfig(nil)
	r := run(t, t.Context(), cfg, "version", "--kube-api-qps", "0")
	if r.code != ExitUsage {
		t.Errorf("--kube-api-qps 0: exit code %d, want %d", r.code, ExitUsage)
	}
	r = run(t, t.Context(), cfg, "version", "--kube-api-burst", "-1")
	if r.code != ExitUsage {
		t.Errorf("--kube-api-burst -1: exit code %d, want %d", r.code, ExitUsage)
	}
}
