package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/redact/redacttest"
)

// TestBlackBox builds the udrain binary once and runs against it the
// reproductions of issue 14 that concern serve-readiness, wait-server and
// the command line's usage errors, asserting the fixed behaviour. Set
// UDRAIN_BINARY to run them against another build (an older release, to
// measure what changed); -v logs the figures.
func TestBlackBox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and opens thousands of connections")
	}
	bin := testkit.UdrainBinary(t)
	t.Run("serve-readiness under hostile connections", func(t *testing.T) { testHostileConnections(t, bin) })
	t.Run("serve-readiness with many members that hang", func(t *testing.T) { testManyMembers(t, bin) })
	t.Run("serve-readiness hides member secrets", func(t *testing.T) { testMemberSecrets(t, bin) })
	t.Run("serve-readiness with a private CA", func(t *testing.T) { testPrivateCA(t, bin) })
	t.Run("URLs are redacted everywhere", func(t *testing.T) { testRedaction(t, bin) })
	t.Run("usage errors exit 2 before the cluster", func(t *testing.T) { testUsageErrors(t, bin) })
	t.Run("output names flags", func(t *testing.T) { testFlagNames(t, bin) })
}

// result is what a run of the binary gave.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary to its end (at most 30 s).
func run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("udrain %q: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
}

// server is a running "udrain serve-readiness".
type server struct {
	cmd        *exec.Cmd
	addr       string
	stderrFile string
	done       chan struct{} // closed when the process has exited
}

// stderr returns what the server wrote to stderr so far.
func (s *server) stderr() string {
	b, _ := os.ReadFile(s.stderrFile)
	return string(b)
}

// startServeReadiness starts serve-readiness with args on a loopback port
// of its choice and returns once it says where it serves.
func startServeReadiness(t *testing.T, bin string, args ...string) *server {
	t.Helper()
	s := &server{
		cmd:        exec.Command(bin, append([]string{"serve-readiness", "--listen", "127.0.0.1:0"}, args...)...),
		stderrFile: filepath.Join(t.TempDir(), "stderr"),
		done:       make(chan struct{}),
	}
	f, err := os.Create(s.stderrFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.cmd.Stderr = f
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	serving := regexp.MustCompile(`on http://(\S+)/readyz`)
	for deadline := time.Now().Add(10 * time.Second); s.addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := serving.FindStringSubmatch(s.stderr()); m != nil {
			s.addr = m[1]
			break
		}
		select {
		case <-s.done:
			t.Fatalf("serve-readiness exited: %v\n%s", s.cmd.ProcessState, s.stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve-readiness did not say where it serves:\n%s", s.stderr())
		}
	}
	return s
}

// get GETs path from s on a connection of its own, as the kubelet does.
func (s *server) get(path string) (code int, body string, took time.Duration, err error) {
	start := time.Now()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + s.addr + path)
	if err != nil {
		return 0, "", time.Since(start), err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start), nil
}

// waitReady waits until /readyz answers want.
func (s *server) waitReady(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, _, err := s.get("/readyz")
		if err == nil && code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz answers %d (%v), want %d\n%s", code, err, want, s.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stats are what the kernel says of a process.
type stats struct {
	// anon is the process's anonymous resident memory (RssAnon), in bytes:
	// what a container's memory limit holds it to. The rest of its RSS is
	// the binary's own pages, which the kernel can drop and read again.
	anon int64
	fds  int
}

func statsOf(t *testing.T, pid int) stats {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var s stats
	if m := regexp.MustCompile(`RssAnon:\s+(\d+) kB`).FindSubmatch(status); m != nil {
		kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
		s.anon = kb << 10
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	s.fds = len(fds)
	return s
}

// probeBudget is the kubelet's default probe timeout (timeoutSeconds 1).
const probeBudget = time.Second

// watch probes /readyz and samples the process's stats every 100 ms for d,
// and returns the peak stats, the slowest probe and the failed probes.
func (s *server) watch(t *testing.T, d time.Duration) (peak stats, slowest time.Duration, failed []string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		st := statsOf(t, s.cmd.Process.Pid)
		peak.anon, peak.fds = max(peak.anon, st.anon), max(peak.fds, st.fds)
		code, _, took, err := s.get("/readyz")
		slowest = max(slowest, took)
		if err != nil || code != http.StatusOK || took > probeBudget {
			failed = append(failed, fmt.Sprintf("%d in %v (%v)", code, took.Round(time.Millisecond), err))
		}
	}
	return peak, slowest, failed
}

// tcpMember is a member that accepts connections, for as long as the test
// runs.
func tcpMember(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// The issue: 100 connections each sending an unfinished 1 MB header took
// the process from 5.6 to 248 MB; 3,000 idle connections held 3,010 fds;
// a POST with a large Content-Length and a 1 byte/s body was held 40 s; a
// slow-body client made SIGTERM exit 1. The bounds: at most
// --max-connections connections (64) whatever clients do, the process's
// anonymous memory within app.ServeReadinessMemory (which the example
// sidecar's memory limit is checked against), /readyz answered within the
// probe's budget throughout.
func testHostileConnections(t *testing.T, bin string) {
	s := startServeReadiness(t, bin, "--member", "leader=tcp://"+tcpMember(t))
	s.waitReady(t, http.StatusOK)
	time.Sleep(500 * time.Millisecond)
	base := statsOf(t, s.cmd.Process.Pid)
	t.Logf("idle: anonymous RSS %s, %d fds", mib(base.anon), base.fds)
	bound := app.ServeReadinessMemory(readiness.ServeOptions{}, 1)
	if base.anon > bound {
		t.Errorf("idle: anonymous RSS %s, above the bound of %s", mib(base.anon), mib(bound))
	}
	fdBound := readiness.DefaultMaxConnections + 8

	check := func(what string, peak stats, slowest time.Duration, failed []string) {
		t.Helper()
		t.Logf("%s: peak anonymous RSS %s (+%s), peak %d fds (+%d), slowest probe %v, %d failed probes",
			what, mib(peak.anon), mib(peak.anon-base.anon), peak.fds, peak.fds-base.fds, slowest.Round(time.Millisecond), len(failed))
		if peak.anon > bound {
			t.Errorf("%s: anonymous RSS %s, want at most %s (app.ServeReadinessMemory)", what, mib(peak.anon), mib(bound))
		}
		if grew := peak.fds - base.fds; grew > fdBound {
			t.Errorf("%s: %d more fds, want at most %d", what, grew, fdBound)
		}
		if len(failed) > 0 {
			t.Errorf("%s: probes failed or took longer than %v: %q", what, probeBudget, failed)
		}
	}

	// 100 connections, each sending an unfinished 1 MB header.
	var wg sync.WaitGroup
	var conns []net.Conn
	pad := bytes.Repeat([]byte("a"), 1<<20)
	for range 100 {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		wg.Go(func() {
			c.SetWriteDeadline(time.Now().Add(3 * time.Second))
			fmt.Fprint(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
			c.Write(pad)
		})
	}
	peak, slowest, failed := s.watch(t, 3*time.Second)
	check("100 unfinished 1 MB headers", peak, slowest, failed)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()

	// 3,000 connections held open without a request (fewer if this
	// process may not open that many files).
	idle := 3000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(idle)+256 {
		idle = int(lim.Cur) - 256
		t.Logf("open files limited to %d: %d idle connections", lim.Cur, idle)
	}
	conns = conns[:0]
	for i := range idle {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	peak, slowest, failed = s.watch(t, 2*time.Second)
	check(fmt.Sprintf("%d idle connections", idle), peak, slowest, failed)
	for _, c := range conns {
		c.Close()
	}

	// A POST with a large Content-Length and a body of 1 byte a second.
	slowBody := func() (net.Conn, func()) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		fmt.Fprint(c, "POST /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
					c.Write([]byte("x"))
				}
			}
		}()
		return c, func() { close(stop); c.Close() }
	}
	c, stop := slowBody()
	start := time.Now()
	c.SetReadDeadline(start.Add(10 * time.Second))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	answered := time.Since(start)
	if err != nil {
		t.Errorf("slow-body POST: no answer within 10s: %v", err)
	} else {
		io.Copy(io.Discard, resp.Body)
		_, err = r.ReadByte() // EOF once the server closes
		closed := time.Since(start)
		t.Logf("slow-body POST: %s after %v, connection closed after %v (%v)", resp.Status, answered.Round(time.Millisecond), closed.Round(time.Millisecond), err)
		if resp.StatusCode != http.StatusMethodNotAllowed || answered > probeBudget || err != io.EOF || closed > 2*time.Second {
			t.Errorf("slow-body POST: %s after %v, closed after %v (%v); want 405 within %v and the connection closed within 2s", resp.Status, answered, closed, err, probeBudget)
		}
	}
	stop()

	// SIGTERM while a slow-body client and an unfinished header are
	// connected: exit code 0 within the grace period (5 s).
	_, stop = slowBody()
	defer stop()
	unfinished, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer unfinished.Close()
	fmt.Fprint(unfinished, "GET /readyz HTTP/1.1\r\nHost: x\r\n")
	time.Sleep(200 * time.Millisecond)
	start = time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatal("serve-readiness still runs 15s after SIGTERM")
	}
	took := time.Since(start)
	t.Logf("SIGTERM with slow clients: exit code %d after %v", s.cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
	if code := s.cmd.ProcessState.ExitCode(); code != 0 || took > readiness.DefaultShutdownTimeout+time.Second {
		t.Errorf("SIGTERM with slow clients: exit code %d after %v, want 0 within %v", code, took, readiness.DefaultShutdownTimeout)
	}
}

// Members that accept connections and never answer hold one check each in
// flight: the process stays within app.ServeReadinessMemory for them.
func testManyMembers(t *testing.T, bin string) {
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hanging.Close()
	const members = 256
	var args []string
	for i := range members {
		args = append(args, "--member", fmt.Sprintf("m-%d=%s/health", i, hanging.URL))
	}
	s := startServeReadiness(t, bin, append(args, "--ttl", "100ms")...)
	base := statsOf(t, s.cmd.Process.Pid)
	var peak stats
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		s.get("/readyz")
		st := statsOf(t, s.cmd.Process.Pid)
		peak.anon, peak.fds = max(peak.anon, st.anon), max(peak.fds, st.fds)
	}
	bound := app.ServeReadinessMemory(readiness.ServeOptions{}, members)
	t.Logf("%d members that hang: anonymous RSS %s at start, peak %s (bound %s), peak %d fds", members, mib(base.anon), mib(peak.anon), mib(bound), peak.fds)
	if peak.anon > bound {
		t.Errorf("anonymous RSS %s with %d members that hang, want at most %s", mib(peak.anon), members, mib(bound))
	}
}

// A member URL with credentials, answering 503 with a body: /readyz/<member>
// shows the class only, and no credential reaches the answer or the log,
// with --expose-member-errors either.
func testMemberSecrets(t *testing.T, bin string) {
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "model still loading", http.StatusServiceUnavailable)
	}))
	defer member.Close()
	secrets := []string{"user-secret-1", "query-secret-2", "frag-secret-3"}
	target := strings.Replace(member.URL, "http://", "http://admin:user-secret-1@", 1) + "/health?token=query-secret-2#frag-secret-3"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "internal server error: HTTP status 503\n"},
		{[]string{"--expose-member-errors"}, `internal server error: GET http://xxxxx@` + strings.TrimPrefix(member.URL, "http://") + `/health?token=xxxxx#xxxxx: 503 Service Unavailable: "model still loading\n"` + "\n"},
	} {
		s := startServeReadiness(t, bin, append([]string{"--member", "w-1=" + target}, tc.args...)...)
		s.waitReady(t, http.StatusInternalServerError)
		code, body, _, err := s.get("/readyz/w-1")
		if err != nil || code != http.StatusInternalServerError || body != tc.want {
			t.Errorf("%q: GET /readyz/w-1 = %d %q (%v), want 500 %q", tc.args, code, body, err, tc.want)
		}
		waitFor(t, func() bool { return strings.Contains(s.stderr(), "Member unhealthy") })
		for _, secret := range secrets {
			if strings.Contains(body, secret) || strings.Contains(s.stderr(), secret) {
				t.Errorf("%q: %q leaks:\nanswer %q\nstderr:\n%s", tc.args, secret, body, s.stderr())
			}
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

// quietTLSServer is an https server with a certificate of its own CA,
// which does not log the handshakes that fail against it.
func quietTLSServer(t *testing.T) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// An https member whose certificate a private CA signs: not ready without
// the CA (the reason says TLS), ready with --ca-file; kubectl's TLS flags,
// which have no effect here, are refused.
func testPrivateCA(t *testing.T, bin string) {
	member := quietTLSServer(t)
	ca := testkit.ServerCAFile(t, member)
	spec := "w-1=" + member.URL + "/health"

	s := startServeReadiness(t, bin, "--member", spec)
	s.waitReady(t, http.StatusInternalServerError)
	if _, body, _, _ := s.get("/readyz/w-1"); body != "internal server error: TLS handshake failed\n" {
		t.Errorf("without --ca-file: /readyz/w-1 = %q, want the TLS reason", body)
	}
	s = startServeReadiness(t, bin, "--member", spec, "--ca-file", ca)
	s.waitReady(t, http.StatusOK)

	for _, args := range [][]string{
		{"serve-readiness", "--member", spec, "--certificate-authority", ca},
		{"wait-server", member.URL, "--certificate-authority", ca},
	} {
		r := run(t, bin, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "has no effect on "+args[0]+"; use --ca-file") {
			t.Errorf("udrain %q: exit code %d, stderr %q; want 2 and a pointer to --ca-file", args, r.code, r.stderr)
		}
	}
}

// URLs that the issue found printed in clear (?pw=, ?passphrase=, a
// #access_token= fragment, passwords with an unescaped '/' or '#', the URL
// echoed by the "takes one URL" usage error), in every output.
func testRedaction(t *testing.T, bin string) {
	refused := testkit.ClosedAddr(t)
	for _, s := range redacttest.Seeds() {
		raw := redacttest.MarkedURL("http", refused, "/healthz", s.Position, s.Key, s.Before, s.After)
		if strings.ContainsRune(raw, 0) {
			continue // no command line can carry a NUL
		}
		for _, args := range [][]string{
			{"wait-server", raw, "--max-attempts", "1"},
			{"wait-server", raw, "--max-attempts", "1", "-o", "json"},
			{"wait-server", raw, "extra-arg"},
			{"serve-readiness", raw},
			{"serve-readiness", "--member", "w-1=" + strings.Replace(raw, "http:", "ftp:", 1)},
		} {
			r := run(t, bin, args...)
			if r.code != 1 && r.code != 2 {
				t.Errorf("udrain %q: exit code %d, want 1 or 2", args, r.code)
			}
			if leaks := redacttest.Leaks(r.stdout, r.stderr); len(leaks) > 0 {
				t.Errorf("udrain %q: the secret leaks in %q", args, leaks)
			}
		}
	}
}

// countingAPIServer stands in for an API server: it counts the requests
// that reach it and fails them. It returns a kubeconfig for it (whose
// context is "test") and the count.
func countingAPIServer(t *testing.T) (kubeconfig string, requests *atomic.Int32) {
	requests = new(atomic.Int32)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "not a real API server", http.StatusInternalServerError)
	}))
	t.Cleanup(api.Close)
	return testkit.Kubeconfig(t, api.URL), requests
}

// The command line's mistakes exit 2 before any request reaches the API
// server (a server that counts requests stands in for it).
func testUsageErrors(t *testing.T, bin string) {
	kubeconfig, requests := countingAPIServer(t)
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"plan", ""}, "not an empty argument"},
		{[]string{"plan", "ud-1", "--domain-label", "bad key!"}, "is not a label key"},
		{[]string{"drain", "ud-1", "--domain-label", "bad key!"}, "is not a label key"},
		{[]string{"domains", "--request-timeout", "abc"}, "--request-timeout"},
		{[]string{"domains", "--context", "nosuch"}, `invalid --context: "nosuch": the kubeconfig has no such context (it has: test)`},
		// Issue 24: these exited 1 after requests.
		{[]string{"rollout", "--domains", ""}, "--domains is empty"},
		{[]string{"rollout", "--domains", ",,,"}, "invalid --domains: holds an empty name"},
		{[]string{"rollout", "--domains", "ud-1,ud-1"}, `--domains: "ud-1" is named twice`},
		{[]string{"rollout", "--lock-namespace", "BAD NS"}, `--lock-namespace: "BAD NS" is not a namespace name`},
		// Issue 22/23: steering, order and IDs are checked before any request.
		{[]string{"rollout", "--steering", "Sometimes"}, `--steering: "Sometimes" is not a steering mode`},
		{[]string{"rollout", "--order", "Random"}, `--order: "Random" is not an order`},
		{[]string{"rollout", "--id", "has spaces / slashes"}, `invalid --id: "has spaces / slashes" cannot name a rollout`},
		{[]string{"drain", "ud-1", "--id", "has spaces"}, `invalid --id: "has spaces" cannot name a drain`},
		{[]string{"rollout", "status", "has spaces"}, `invalid ID: "has spaces" cannot name a rollout`},
		// Issue 25: the library's validation, in flag terms.
		{[]string{"rollout", "--gpu-check-grace", "-1s"}, `invalid --gpu-check-grace: -1s is negative`},
		{[]string{"rollout", "--recovery-timeout", "-1s"}, `invalid --recovery-timeout: -1s is negative`},
		{[]string{"drain", "ud-1", "--concurrency", "-1"}, `invalid --concurrency: -1 is negative`},
	} {
		requests.Store(0)
		r := run(t, bin, append(tc.args, "--kubeconfig", kubeconfig)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.wantStderr) {
			t.Errorf("udrain %q: exit code %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.wantStderr)
		}
		if n := requests.Load(); n > 0 {
			t.Errorf("udrain %q: %d requests reached the API server before the usage error", tc.args, n)
		}
	}
	// Issue 24: these started serving.
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"serve-readiness", "--listen", "127.0.0.1:0", "--member", "a=http://u:p@127.0.0.1:99999/"}, `port "99999"`},
		{[]string{"serve-readiness", "--listen", "127.0.0.1:0", "--member", "a=http://127.0.0.1:1/", "--max-header-bytes=2000000000"}, "--max-header-bytes"},
	} {
		r := run(t, bin, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.wantStderr) {
			t.Errorf("udrain %q: exit code %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.wantStderr)
		}
	}
}

// TestNoShellForUpgradeCommand: the binary with no sh in PATH (as in
// udrain's image) refuses --upgrade-command with exit code 2 before it
// sends any request, so nothing is cordoned or drained.
func TestNoShellForUpgradeCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testkit.UdrainBinary(t)
	kubeconfig, requests := countingAPIServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "rollout", "--kubeconfig", kubeconfig, "--upgrade-command", "./upgrade.sh")
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want exit code 2; stderr:\n%s", err, errOut.String())
	}
	if want := "invalid --upgrade-command: runs through sh, and no sh was found in PATH"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr does not have %q:\n%s", want, errOut.String())
	}
	if n := requests.Load(); n > 0 {
		t.Errorf("%d requests reached the API server before the refusal", n)
	}
}

// Errors and hints name flags the command has, never Go fields.
func testFlagNames(t *testing.T, bin string) {
	goField := regexp.MustCompile(`\b(readiness|bootstrap|gate)\.|Options\.`)
	hasFlags := func(t *testing.T, command, text string) {
		t.Helper()
		help := run(t, bin, command, "--help").stdout
		for _, flag := range regexp.MustCompile(`--[a-z][a-z-]+`).FindAllString(text, -1) {
			if !strings.Contains(help, flag+" ") && flag != "--help" {
				t.Errorf("udrain %s names %s, which it does not have:\n%s", command, flag, text)
			}
		}
		if f := goField.FindString(text); f != "" {
			t.Errorf("udrain %s names a Go field (%s):\n%s", command, f, text)
		}
	}
	r := run(t, bin, "serve-readiness", "--member", "a=http://127.0.0.1:1", "--member-timeout", "2s")
	if r.code != 2 || !strings.Contains(r.stderr, "invalid --member-timeout") {
		t.Errorf("--member-timeout 2s: exit code %d, stderr %q", r.code, r.stderr)
	}
	hasFlags(t, "serve-readiness", r.stderr)

	tlsServer := quietTLSServer(t)
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer unavailable.Close()
	for url, want := range map[string]string{tlsServer.URL: "--ca-file", unavailable.URL: "--status"} {
		for _, output := range []string{"table", "json"} {
			r := run(t, bin, "wait-server", url, "--max-attempts", "1", "-o", output)
			if r.code != 1 || !strings.Contains(r.stdout+r.stderr, want) {
				t.Errorf("wait-server %s -o %s: exit code %d, output does not name %s:\n%s%s", url, output, r.code, want, r.stdout, r.stderr)
			}
			hasFlags(t, "wait-server", r.stdout+r.stderr)
		}
	}
}
