package main

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udrain/udrain/internal/sickserver"
	"github.com/udrain/udrain/internal/testkit"
)

// Against an API server that cannot be reached, the commands that read the
// cluster say so with its address and exit 1, within --timeout when given
// and within the default connect deadline (15s) otherwise; a SIGTERM stops
// them at once. (They used to wait at least 30s in silence.)
func TestUnreachableAPIServer(t *testing.T) {
	bin := testkit.UdrainBinary(t)
	server := "https://" + testkit.ClosedAddr(t) // nothing listens there
	kc := testkit.Kubeconfig(t, server)
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

// Issue 24: against an API server that refuses connections, never
// answers, trickles its answers or fails every request with 500 or 429,
// every command that reads the cluster exits 1 within its --timeout, or
// within the default of 15s, saying which server fails and how, and tries
// to change nothing. Every run starts at once (t.Parallel would run two at
// a time on two cores), so the table takes about 20s. -v logs the figures.
func TestSickAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and waits for timeouts")
	}
	bin := testkit.UdrainBinary(t)
	const slack = 4 * time.Second // process start and exit on a busy machine
	commands := []struct {
		args   []string
		within time.Duration
	}{
		{[]string{"domains"}, 15 * time.Second},
		{[]string{"audit"}, 15 * time.Second},
		{[]string{"gpu"}, 15 * time.Second},
		{[]string{"uncordon", "ud-1"}, 15 * time.Second},
		{[]string{"plan", "ud-1", "--timeout", "3s"}, 3 * time.Second},
		{[]string{"drain", "ud-1", "--timeout", "3s"}, 3 * time.Second},
		{[]string{"wait-healthy", "--timeout", "3s"}, 3 * time.Second},
		{[]string{"rollout", "--timeout", "3s"}, 3 * time.Second},
	}
	type outcome struct {
		server string
		code   int
		took   time.Duration
		stderr string
	}
	servers := sickserver.All()
	outcomes := make([][]outcome, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		server := s.Start(t)
		kc := testkit.Kubeconfig(t, server)
		outcomes[i] = make([]outcome, len(commands))
		for j, c := range commands {
			wg.Go(func() {
				var stderr bytes.Buffer
				cmd := exec.Command(bin, append([]string{"--kubeconfig", kc}, c.args...)...)
				cmd.Stderr = &stderr
				start := time.Now()
				if err := cmd.Start(); err != nil {
					outcomes[i][j] = outcome{server: server, code: -2, stderr: err.Error()}
					return
				}
				// A hang is killed, and reported as exit code -1.
				limit := time.AfterFunc(c.within+30*time.Second, func() { cmd.Process.Kill() })
				defer limit.Stop()
				_ = cmd.Wait()
				outcomes[i][j] = outcome{server: server, code: cmd.ProcessState.ExitCode(), took: time.Since(start), stderr: stderr.String()}
			})
		}
	}
	wg.Wait()
	for i, s := range servers {
		for j, c := range commands {
			t.Run(s.Name+"/"+strings.Join(c.args, " "), func(t *testing.T) {
				o := outcomes[i][j]
				t.Logf("exit %d after %s: %s", o.code, o.took.Round(10*time.Millisecond), strings.TrimSpace(o.stderr))
				if o.code != 1 {
					t.Errorf("exit code %d, want 1", o.code)
				}
				if o.took > c.within+slack {
					t.Errorf("took %s, want at most %s", o.took.Round(time.Millisecond), c.within+slack)
				}
				msg := strings.ToLower(o.stderr)
				if !strings.Contains(msg, strings.TrimPrefix(o.server, "http://")) || !strings.Contains(msg, s.Cause) {
					t.Errorf("stderr does not name the server %s and say %q", o.server, s.Cause)
				}
			})
		}
		if n := s.Writes(); n > 0 {
			t.Errorf("%s: %d requests other than GET reached the server", s.Name, n)
		}
	}
}
