package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeRepo is a checkout whose hack/cluster.sh only logs its calls and whose
// "cluster" is an HTTP server answering /readyz, so that the testbed's
// lifecycle can be tested without a control plane.
type fakeRepo struct {
	root, log, kubeconfig string
}

func newFakeRepo(t *testing.T) fakeRepo {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			fmt.Fprint(w, "ok")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	r := fakeRepo{root: root, log: filepath.Join(root, "calls.log"), kubeconfig: filepath.Join(root, "kubeconfig.yaml")}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
users: [{name: fake, user: {}}]
current-context: fake
`, srv.URL)
	script := fmt.Sprintf(`#!/bin/sh
echo "$* $UDRAIN_CLUSTER" >>%q
case "$1" in
  up) echo "export KUBECONFIG=%s" ;;
  kubeconfig) echo %q ;;
esac
`, r.log, r.kubeconfig, r.kubeconfig)
	must(t, os.MkdirAll(filepath.Join(root, "hack"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "hack", "cluster.sh"), []byte(script), 0o755))
	must(t, os.WriteFile(r.kubeconfig, []byte(kubeconfig), 0o644))
	// The component logs, next to the kubeconfig as in a kwokctl cluster.
	must(t, os.MkdirAll(filepath.Join(root, "logs"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "logs", "kube-apiserver.log"), []byte("log\n"), 0o644))
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (r fakeRepo) options(cluster string) Options {
	return Options{Provider: Kwok, ClusterName: cluster, RepoRoot: r.root, ArtifactsDir: filepath.Join(r.root, "artifacts")}
}

func (r fakeRepo) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(r.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	must(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// waitCalls waits for the reaper, which runs after this process's child ended.
func (r fakeRepo) waitCalls(t *testing.T, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.calls(t)
		if cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster.sh calls (-want +got):\n%s", cmp.Diff(want, got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartStopDeletesOnce(t *testing.T) {
	repo := newFakeRepo(t)
	b := New(repo.options("c1"))
	must(t, b.Start(t.Context()))
	if b.Kubeconfig() != repo.kubeconfig {
		t.Errorf("kubeconfig %q, want %q", b.Kubeconfig(), repo.kubeconfig)
	}
	must(t, b.Stop(t.Context()))
	must(t, b.Stop(t.Context())) // a second Stop (signal, then Finish) does nothing
	// The disarmed reaper does not delete the cluster again.
	time.Sleep(200 * time.Millisecond)
	if diff := cmp.Diff([]string{"kubeconfig c1", "up c1", "down c1"}, repo.calls(t)); diff != "" {
		t.Errorf("cluster.sh calls (-want +got):\n%s", diff)
	}
}

func TestExistingClusterIsNeverDeleted(t *testing.T) {
	repo := newFakeRepo(t)
	b := New(Options{Provider: Existing, Kubeconfig: repo.kubeconfig, RepoRoot: repo.root})
	must(t, b.Start(t.Context()))
	must(t, b.Stop(t.Context()))
	if got := repo.calls(t); len(got) != 0 {
		t.Errorf("cluster.sh was called for an existing cluster: %v", got)
	}
	if err := b.RestartAPIServer(t.Context()); !errors.Is(err, ErrNotSupported) {
		t.Errorf("RestartAPIServer on a foreign cluster: %v, want ErrNotSupported", err)
	}
}

// The helper process: a test binary that starts a testbed and then ends the
// way TESTBED_HELPER says, as a real e2e run might.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("TESTBED_HELPER")
	if mode == "" {
		t.Skip("helper process for the teardown tests")
	}
	b := New(Options{Provider: Kwok, ClusterName: os.Getenv("TESTBED_CLUSTER"), RepoRoot: os.Getenv("TESTBED_ROOT")})
	if err := b.Start(context.Background()); err != nil {
		fmt.Println("start:", err)
		os.Exit(3)
	}
	switch mode {
	case "panic-process":
		// A process run next to the cluster, then a panic: the reaper
		// must kill it too.
		p, err := b.startProcess("sleeper", []string{"sleep", "600"}, nil, filepath.Join(os.Getenv("TESTBED_ROOT"), "sleeper.log"))
		if err != nil {
			fmt.Println("start process:", err)
			os.Exit(3)
		}
		fmt.Printf("pid %d\n", p.cmd.Process.Pid)
		go func() { panic("a test panicked") }()
		time.Sleep(time.Minute)
	case "panic":
		// A panic in a test's goroutine kills the process: no deferred
		// function, no Finish.
		go func() { panic("a test panicked") }()
		time.Sleep(time.Minute)
	case "signal":
		stop := b.onSignal()
		defer stop()
		fmt.Println("ready")
		time.Sleep(time.Minute)
	}
	os.Exit(4)
}

func helper(t *testing.T, repo fakeRepo, mode, cluster string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTBED_HELPER="+mode, "TESTBED_CLUSTER="+cluster, "TESTBED_ROOT="+repo.root)
	return cmd
}

func TestTeardownWhenATestPanics(t *testing.T) {
	repo := newFakeRepo(t)
	cmd := helper(t, repo, "panic", "c-panic")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "a test panicked") {
		t.Fatalf("helper did not panic: %v\n%s", err, out)
	}
	repo.waitCalls(t, []string{"kubeconfig c-panic", "up c-panic", "down c-panic"})
	// The reaper saved the control-plane logs first.
	saved, err := filepath.Glob(filepath.Join(repo.root, "e2e", "_artifacts", "*", "teardown", "logs", "kube-apiserver.log"))
	if err != nil || len(saved) != 1 {
		t.Errorf("saved logs %v (%v), want the apiserver's log under e2e/_artifacts/<run>/teardown/logs", saved, err)
	}
}

func TestTeardownOnSIGTERM(t *testing.T) {
	repo := newFakeRepo(t)
	cmd := helper(t, repo, "signal", "c-term")
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 143 {
		t.Fatalf("helper after SIGTERM: %v, want exit code 143", err)
	}
	// Torn down before exiting: no need to wait for a reaper.
	if diff := cmp.Diff([]string{"kubeconfig c-term", "up c-term", "down c-term"}, repo.calls(t)); diff != "" {
		t.Errorf("cluster.sh calls (-want +got):\n%s", diff)
	}
}

// failUps makes the fake cluster.sh's first n `up` calls fail, as a control
// plane that does not become usable in time does.
func (r fakeRepo) failUps(t *testing.T, n int) {
	t.Helper()
	count := filepath.Join(r.root, "ups")
	script := fmt.Sprintf(`#!/bin/sh
echo "$* $UDRAIN_CLUSTER" >>%q
case "$1" in
  up)
    echo x >>%q
    if [ "$(wc -l <%q)" -le %d ]; then echo "cluster.sh: cluster does not serve after 300s" >&2; exit 1; fi
    echo "export KUBECONFIG=%s" ;;
  kubeconfig) echo %q ;;
esac
`, r.log, count, count, n, r.kubeconfig, r.kubeconfig)
	must(t, os.WriteFile(filepath.Join(r.root, "hack", "cluster.sh"), []byte(script), 0o755))
}

func TestStartRemakesAClusterThatDidNotComeUpOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fails   int
		wantErr bool
		want    []string
	}{
		{name: "up at once", fails: 0, want: []string{"kubeconfig c1", "up c1", "down c1"}},
		{name: "up on the second try", fails: 1, want: []string{"kubeconfig c1", "up c1", "kubeconfig c1", "down c1", "up c1", "down c1"}},
		{name: "two failures fail Start", fails: 2, wantErr: true, want: []string{"kubeconfig c1", "up c1", "kubeconfig c1", "down c1", "up c1", "kubeconfig c1", "down c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newFakeRepo(t)
			repo.failUps(t, tc.fails)
			b := New(repo.options("c1"))
			err := b.Start(t.Context())
			if (err != nil) != tc.wantErr {
				t.Fatalf("Start: %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "does not serve after 300s") {
				t.Errorf("Start's error does not carry cluster.sh's reason: %v", err)
			}
			must(t, b.Stop(t.Context()))
			repo.waitCalls(t, tc.want)
		})
	}
}
