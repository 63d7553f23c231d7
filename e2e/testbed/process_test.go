package testbed

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: ask the kernel
	}
	m := regexp.MustCompile(`\) (\S)`).FindSubmatch(data)
	return m != nil && string(m[1]) != "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopStopsProcessesBeforeTheCluster(t *testing.T) {
	repo := newFakeRepo(t)
	b := New(repo.options("c-proc"))
	must(t, b.Start(t.Context()))
	p, err := b.startProcess("sleeper", []string{"sleep", "600"}, nil, filepath.Join(repo.root, "sleeper.log"))
	must(t, err)
	if done, _ := p.exited(); done {
		t.Fatal("the process exited at once")
	}
	must(t, b.Stop(t.Context()))
	if done, _ := p.exited(); !done {
		t.Error("the process still runs after Stop")
	}
	if diff := cmp.Diff([]string{"kubeconfig c-proc", "up c-proc", "down c-proc"}, repo.calls(t)); diff != "" {
		t.Errorf("cluster.sh calls (-want +got):\n%s", diff)
	}
	if _, err := b.startProcess("late", []string{"sleep", "600"}, nil, filepath.Join(repo.root, "late.log")); err == nil {
		t.Error("a process started after Stop")
	}
}

func TestStopStopsProcessesOfAnExistingCluster(t *testing.T) {
	repo := newFakeRepo(t)
	b := New(Options{Provider: Existing, Kubeconfig: repo.kubeconfig, RepoRoot: repo.root})
	must(t, b.Start(t.Context()))
	p, err := b.startProcess("sleeper", []string{"sleep", "600"}, nil, filepath.Join(repo.root, "sleeper.log"))
	must(t, err)
	must(t, b.Stop(t.Context()))
	if done, _ := p.exited(); !done {
		t.Error("the process still runs after Stop")
	}
	if got := repo.calls(t); len(got) != 0 {
		t.Errorf("cluster.sh was called for an existing cluster: %v", got)
	}
}

func TestTeardownKillsProcessesWhenATestPanics(t *testing.T) {
	repo := newFakeRepo(t)
	out, err := helper(t, repo, "panic-process", "c-panic-proc").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("helper did not fail: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`pid (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("helper printed no pid:\n%s", out)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	repo.waitCalls(t, []string{"kubeconfig c-panic-proc", "up c-panic-proc", "down c-panic-proc"})
	waitGone(t, pid)
}

func TestFeatureGatesReachClusterSh(t *testing.T) {
	repo := newFakeRepo(t)
	opts := repo.options("c-gates")
	opts.FeatureGates, opts.RuntimeConfig = "GenericWorkload=true", "scheduling.k8s.io/v1beta1=true"
	b := New(opts)
	must(t, b.Start(t.Context()))
	must(t, b.Stop(t.Context()))
	want := []string{
		"kubeconfig c-gates",
		"up -- --kube-feature-gates=GenericWorkload=true --kube-runtime-config=scheduling.k8s.io/v1beta1=true c-gates",
		"down c-gates",
	}
	if diff := cmp.Diff(want, repo.calls(t)); diff != "" {
		t.Errorf("cluster.sh calls (-want +got):\n%s", diff)
	}
}
