package testbed

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/udrain/udrain/e2e/fixture"
)

func TestDNSLabel(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"TestPDBStatus/sub_case", 63, "testpdbstatus-sub-case"},
		{"--A__b--", 63, "a-b"},
		{"abcdefghij", 5, "abcde"},
		{"abcd-efgh", 5, "abcd"},
		{"___", 10, "x"},
		{"e2e", 20, "e2e"},
	}
	for _, tc := range tests {
		if got := dnsLabel(tc.in, tc.n); got != tc.want {
			t.Errorf("dnsLabel(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		want     Options
		wantErr  string
		noDocker bool
	}{
		{
			name: "default: a kwok cluster named after the package folder",
			want: Options{Provider: Kwok, ClusterName: "udrain-e2e-testbed"},
		},
		{
			name: "existing cluster, with the kwokctl cluster behind it",
			env:  map[string]string{"E2E_KUBECONFIG": "/k", "E2E_KWOK_CLUSTER": "udrain"},
			want: Options{Provider: Existing, Kubeconfig: "/k", ClusterName: "udrain"},
		},
		{
			name:    "existing cluster and a provider",
			env:     map[string]string{"E2E_KUBECONFIG": "/k", "E2E_PROVIDER": "kind"},
			wantErr: "unset one",
		},
		{
			name:    "unknown provider",
			env:     map[string]string{"E2E_PROVIDER": "minikube"},
			wantErr: `unknown provider "minikube"`,
		},
		{
			name:     "kind without docker",
			env:      map[string]string{"E2E_PROVIDER": "kind"},
			wantErr:  "needs docker",
			noDocker: true,
		},
		{
			name: "named cluster and artifacts folder",
			env:  map[string]string{"E2E_CLUSTER": "mine", "E2E_ARTIFACTS": "/tmp/a"},
			want: Options{Provider: Kwok, ClusterName: "mine", ArtifactsDir: "/tmp/a"},
		},
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"E2E_KUBECONFIG", "E2E_KWOK_CLUSTER", "E2E_PROVIDER", "E2E_CLUSTER", "E2E_ARTIFACTS"} {
				t.Setenv(k, tc.env[k])
			}
			if tc.noDocker {
				t.Setenv("PATH", t.TempDir())
			}
			got, err := OptionsFromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.ArtifactsDir == "" {
				tc.want.ArtifactsDir = filepath.Join(root, "e2e", "_artifacts")
			}
			tc.want.RepoRoot = root
			if tc.want.ClusterName == "udrain-e2e-testbed" {
				// The default name ends with a hash of the checkout's
				// path: checkouts side by side get clusters of their own.
				sum := sha256.Sum256([]byte(root))
				tc.want.ClusterName += "-" + hex.EncodeToString(sum[:])[:6]
			}
			got.Logf = nil
			if got.Provider != tc.want.Provider || got.ClusterName != tc.want.ClusterName || got.Kubeconfig != tc.want.Kubeconfig ||
				got.RepoRoot != tc.want.RepoRoot || got.ArtifactsDir != tc.want.ArtifactsDir {
				t.Errorf("OptionsFromEnv() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFindRepoRootOutsideTheCheckout(t *testing.T) {
	dir := t.TempDir()
	if _, err := findRepoRoot(dir); err == nil || !strings.Contains(err.Error(), "udrain checkout") {
		t.Errorf("findRepoRoot(%s) error = %v, want one that says to run from the checkout", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hack", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hack", "cluster.sh"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := findRepoRoot(filepath.Join(dir, "hack", "x"))
	if err != nil || got != dir {
		t.Errorf("findRepoRoot = %q, %v; want %q", got, err, dir)
	}
}

// TestTestNameFitsTheFixture: a test's name is used as namespace and as node
// pool, whatever the length of the Go test's name.
func TestTestNameFitsTheFixture(t *testing.T) {
	name := testName("TestDrainBlocksWhileAnotherGroupIsDown/with_a_very_long_subtest_name", "abcd")
	if _, err := (fixture.Nodes{Pool: name, UDs: 10, PerUD: 1}).Build(); err != nil {
		t.Errorf("pool %q (%d characters): %v", name, len(name), err)
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		t.Errorf("namespace %q: %v", name, msgs)
	}
}
