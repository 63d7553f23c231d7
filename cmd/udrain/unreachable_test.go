package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildUdrain builds the binary under test into dir.
func buildUdrain(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "udrain")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// closedPortKubeconfig writes a kubeconfig for an API server on a port
// where nothing listens, and returns its path and the server's address.
func closedPortKubeconfig(t *testing.T, dir string) (string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	server := "https://" + addr
	kc := filepath.Join(dir, "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "` + server + `", insecure-skip-tls-verify: true}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: c
current-context: c
users:
- name: u
  user: {token: x}
`
	if err := os.WriteFile(kc, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc, server
}

// Against an API server that cannot be reached, the commands that read the
// cluster say so with its address and exit 1, within --timeout when given
// and within the default connect deadline (15s) otherwise; a SIGTERM stops
// them at once. (They used to wait at least 30s in silence.)
func TestUnreachableAPIServer(t *testing.T) {
	dir := t.TempDir()
	bin := buildUdrain(t, dir)
	kc, server := closedPortKubeconfig(t, dir)
	for _, tc := range []struct {
		args   []string
		within time.Duration
	}{
		{[]string{"plan", "ud-1"}, 25 * time.Second},
		{[]string{"drain", "ud-1", "--timeout", "5s"}, 12 * time.Second},
		{[]string{"wait-healthy", "--timeout", "5s"}, 12 * time.Second},
		{[]string{"rollout", "--timeout", "3s"}, 9 * time.Second},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, append([]string{"--kubeconfig", kc}, tc.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit code %d (%v), want 1; stderr:\n%s", code, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "cannot reach") && !strings.Contains(stderr.String(), "connection refused") || !strings.Contains(stderr.String(), strings.TrimPrefix(server, "https://")) {
				t.Errorf("stderr does not say the API server %s cannot be reached:\n%s", server, stderr.String())
			}
			if took > tc.within {
				t.Errorf("took %s, want at most %s", took.Round(time.Millisecond), tc.within)
			}
			t.Logf("exit %d after %s: %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
		})
	}
	t.Run("SIGTERM", func(t *testing.T) {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "--kubeconfig", kc, "plan", "ud-1")
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("exited %s after SIGTERM, want at once", took)
		}
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("exit code %d after SIGTERM, want 130; stderr:\n%s", code, stderr.String())
		}
	})
}
