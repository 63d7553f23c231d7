package testbed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/udrain/udrain/eviction"
)

// Provider says where the cluster comes from.
type Provider string

// The providers.
const (
	// Kwok makes a kwok cluster with hack/cluster.sh (the default).
	Kwok Provider = "kwok"
	// Kind makes a kind cluster; it needs Docker and the kind node image.
	Kind Provider = "kind"
	// Existing uses Options.Kubeconfig and never deletes the cluster.
	Existing Provider = "existing"
)

// Options configure a [Testbed].
type Options struct {
	// Provider is where the cluster comes from (default [Kwok], or
	// [Existing] when Kubeconfig is set).
	Provider Provider
	// Kubeconfig is the kubeconfig of an existing cluster.
	Kubeconfig string
	// ClusterName names the kwok or kind cluster the testbed makes; with
	// [Existing], the kwokctl cluster behind Kubeconfig, if it is one (then
	// its logs are collected and its apiserver can be restarted).
	ClusterName string
	// RepoRoot is the udrain checkout (hack/cluster.sh lives there).
	RepoRoot string
	// ArtifactsDir is where failed tests leave their dumps (default
	// <RepoRoot>/e2e/_artifacts).
	ArtifactsDir string
	// FeatureGates and RuntimeConfig turn on Kubernetes features in a
	// cluster the testbed makes (kwok only): FeatureGates goes to the
	// kube-apiserver, kube-controller-manager and kube-scheduler as
	// --feature-gates, RuntimeConfig to the kube-apiserver as
	// --runtime-config, e.g. "GenericWorkload=true" and
	// "scheduling.k8s.io/v1beta1=true" for native PodGroups. A cluster made
	// with other values is never reused for them. An existing cluster is
	// used as it is.
	FeatureGates, RuntimeConfig string
	// KwokctlFlags are more flags of `kwokctl create cluster` for a kwok
	// cluster the testbed makes, such as --disable-qps-limits for a
	// cluster of thousands of nodes (kube-controller-manager and
	// kube-scheduler otherwise keep their client rate limits, 20 and 50
	// QPS). Like FeatureGates, they are part of what the cluster is made
	// from: a cluster made without them is recreated.
	KwokctlFlags []string
	// Logf reports progress (cluster up, teardown); nil discards it.
	Logf func(format string, args ...any)
	// Namespaces are made once the cluster serves (kept if they exist).
	Namespaces []string
}

// OptionsFromEnv reads the options from the environment:
//
//	E2E_KUBECONFIG    use this existing cluster (never deleted)
//	E2E_KWOK_CLUSTER  with E2E_KUBECONFIG: the kwokctl cluster behind it
//	                  (hack/cluster.sh's is "udrain"), for logs and restarts
//	E2E_PROVIDER      kwok (default) or kind
//	E2E_CLUSTER       name of the cluster to make (default
//	                  udrain-e2e-<dir>-<hash>, <dir> being the test package's
//	                  folder and <hash> a hash of the checkout's path, so
//	                  that packages tested in parallel, and checkouts tested
//	                  side by side on one machine, do not share one)
//	E2E_ARTIFACTS     artifacts folder (default <repo>/e2e/_artifacts)
//
// The repository root is found from the working directory (go test runs in
// the package's folder). Progress goes to stderr.
func OptionsFromEnv() (Options, error) {
	wd, err := os.Getwd()
	if err != nil {
		return Options{}, err
	}
	root, err := findRepoRoot(wd)
	if err != nil {
		return Options{}, err
	}
	o := Options{
		Provider:     Provider(os.Getenv("E2E_PROVIDER")),
		Kubeconfig:   os.Getenv("E2E_KUBECONFIG"),
		ClusterName:  os.Getenv("E2E_CLUSTER"),
		RepoRoot:     root,
		ArtifactsDir: os.Getenv("E2E_ARTIFACTS"),
		// udrain's rollouts hold their Lease there (deploy/namespace
		// makes it on a real cluster).
		Namespaces: []string{eviction.DefaultLockNamespace},
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
		},
	}
	if o.Kubeconfig != "" {
		if o.Provider != "" && o.Provider != Existing {
			return Options{}, fmt.Errorf("E2E_KUBECONFIG and E2E_PROVIDER=%s both set: unset one (an existing cluster is never replaced)", o.Provider)
		}
		o.Provider = Existing
		o.ClusterName = os.Getenv("E2E_KWOK_CLUSTER")
	}
	if o.ClusterName == "" && o.Provider != Existing {
		sum := sha256.Sum256([]byte(root))
		o.ClusterName = "udrain-e2e-" + dnsLabel(filepath.Base(wd), 20) + "-" + hex.EncodeToString(sum[:])[:6]
	}
	return o, o.validate()
}

func (o *Options) validate() error {
	switch o.Provider {
	case "":
		o.Provider = Kwok
		if o.Kubeconfig != "" {
			o.Provider = Existing
		}
	case Kwok, Existing:
	case Kind:
		if _, err := exec.LookPath("docker"); err != nil {
			return errors.New("E2E_PROVIDER=kind needs docker in PATH (and the kind node image); unset E2E_PROVIDER to use the kwok testbed")
		}
	default:
		return fmt.Errorf("unknown provider %q: use kwok (default), kind, or set E2E_KUBECONFIG", o.Provider)
	}
	if o.Provider == Kind && (o.FeatureGates != "" || o.RuntimeConfig != "" || len(o.KwokctlFlags) > 0) {
		return errors.New("FeatureGates, RuntimeConfig and KwokctlFlags need the kwok provider (kind takes them in its own cluster config); unset E2E_PROVIDER")
	}
	if o.Provider == Existing && o.Kubeconfig == "" {
		return errors.New("the existing provider needs a kubeconfig (E2E_KUBECONFIG)")
	}
	if o.Provider != Existing && o.ClusterName == "" {
		return fmt.Errorf("provider %s needs a cluster name", o.Provider)
	}
	if o.RepoRoot == "" {
		return errors.New("RepoRoot must be set (the udrain checkout)")
	}
	if o.ArtifactsDir == "" {
		o.ArtifactsDir = filepath.Join(o.RepoRoot, "e2e", "_artifacts")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}

// findRepoRoot walks up from dir to the folder that holds hack/cluster.sh.
func findRepoRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "cluster.sh")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no hack/cluster.sh above %s: run the e2e tests from the udrain checkout", dir)
		}
	}
}

// dnsLabel lower-cases s, replaces what a DNS label cannot hold with '-',
// and cuts it to at most n characters without a leading or trailing '-'.
func dnsLabel(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= n {
			break
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > n {
		out = strings.TrimRight(out[:n], "-")
	}
	if out == "" {
		out = "x"
	}
	return out
}
