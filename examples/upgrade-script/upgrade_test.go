package upgradescript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stub is the path of the stub udrain, built once.
var stub string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "upgrade-script-test")
	if err != nil {
		panic(err)
	}
	stub = filepath.Join(dir, "udrain")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	if out, err := exec.Command(gobin, "build", "-o", stub, "./testdata/stub-udrain").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building the stub udrain: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestSyntax(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "upgrade.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n upgrade.sh: %v\n%s", err, out)
	}
	info, err := os.Stat("upgrade.sh")
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&0o111 == 0 {
		t.Error("upgrade.sh is not executable")
	}
}

// The command lines upgrade.sh runs, as the stub logs them.
const (
	rollout = "--context prod --domain-label topology.kubernetes.io/zone rollout --upgrade-command ./upgrade-nodes.sh 1.37.2 --ignore-daemonsets --timeout 30m"
	wait    = "--context prod --domain-label topology.kubernetes.io/zone wait-healthy --timeout 10m"
	audit   = "--context prod --domain-label topology.kubernetes.io/zone audit"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rolloutCodes string
		waitCode     string
		env          []string
		wantCode     int
		wantCalls    []string
		wantStderr   string
	}{
		{name: "done", rolloutCodes: "0", wantCode: 0, wantCalls: []string{rollout}, wantStderr: "rollout complete"},
		{name: "blocked twice, then resumed to the end", rolloutCodes: "3,3,0", wantCode: 0,
			wantCalls: []string{rollout, wait, rollout, wait, rollout}, wantStderr: "a PodDisruptionBudget blocks (exit code 3)"},
		{name: "blocked until the attempts run out", rolloutCodes: "3", env: []string{"MAX_ATTEMPTS=3"}, wantCode: 3,
			wantCalls: []string{rollout, wait, rollout, wait, rollout}, wantStderr: "still blocks after 3 attempts"},
		{name: "not healthy in time: try anyway", rolloutCodes: "3,0", waitCode: "1", wantCode: 0,
			wantCalls: []string{rollout, wait, rollout}},
		{name: "wait-healthy misused", rolloutCodes: "3", waitCode: "2", wantCode: 2,
			wantCalls: []string{rollout, wait}, wantStderr: "wait-healthy failed (exit code 2)"},
		{name: "contract violated: the audit", rolloutCodes: "4", wantCode: 4,
			wantCalls: []string{rollout, audit}, wantStderr: "AUDIT REPORT: 2 errors"},
		{name: "usage error: no retry", rolloutCodes: "2", wantCode: 2, wantCalls: []string{rollout}},
		{name: "error: no retry", rolloutCodes: "1", wantCode: 1, wantCalls: []string{rollout}, wantStderr: "rollout failed (exit code 1)"},
		{name: "interrupted", rolloutCodes: "130", wantCode: 130, wantCalls: []string{rollout}, wantStderr: "run upgrade.sh again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls")
			cmd := exec.Command("./upgrade.sh", "./upgrade-nodes.sh 1.37.2", "--ignore-daemonsets", "--timeout", "30m")
			cmd.Env = append(os.Environ(), "UDRAIN="+stub, "STUB_LOG="+log, "STUB_ROLLOUT_CODES="+tc.rolloutCodes, "STUB_WAIT_CODE="+tc.waitCode,
				"UDRAIN_FLAGS=--context prod --domain-label topology.kubernetes.io/zone")
			cmd.Env = append(cmd.Env, tc.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			calls := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("udrain calls (-want +got):\n%s", diff)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr does not say %q:\n%s", tc.wantStderr, stderr.String())
			}
		})
	}
}

func TestUsage(t *testing.T) {
	cmd := exec.Command("./upgrade.sh")
	cmd.Env = append(os.Environ(), "UDRAIN="+stub)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "usage: upgrade.sh UPGRADE_COMMAND") {
		t.Errorf("without arguments: %v, %q; want exit code 2 and the usage", err, out)
	}
}

// TestNoCommonFlags: without UDRAIN_FLAGS the script passes none (an empty
// array under set -u).
func TestNoCommonFlags(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	cmd := exec.Command("./upgrade.sh", "true")
	cmd.Env = append(os.Environ(), "UDRAIN="+stub, "STUB_LOG="+log, "STUB_ROLLOUT_CODES=0", "UDRAIN_FLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, _ := os.ReadFile(log)
	if got := strings.TrimSpace(string(data)); got != "rollout --upgrade-command true" {
		t.Errorf("call %q, want %q", got, "rollout --upgrade-command true")
	}
}
