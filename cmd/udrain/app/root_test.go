package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
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
	cfg, err := restConfig(flags, DefaultQPS, DefaultBurst)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://b.example:6443" || cfg.QPS != 50 || cfg.Burst != 100 || !strings.HasPrefix(cfg.UserAgent, "udrain/") {
		t.Errorf("config host %s qps %v burst %d agent %q; want context b's server, 50, 100, udrain/...", cfg.Host, cfg.QPS, cfg.Burst, cfg.UserAgent)
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
