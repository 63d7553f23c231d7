package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/e2e/fixture"
)

// BenchmarkReadinessGateProcess measures what the readiness-gate controller
// of deploy/readiness-gate costs, to size its requests and limits: the
// udrain binary runs "readiness-gate-controller" with the Deployment's
// selector and leader election, in a process of its own, over 100 groups of
// 8 pods (800 pods on 100 nodes in 10 upgrade domains). Each iteration
// deletes the pods of one domain's 10 groups (what a domain's drain does)
// and waits until every group is healthy again, the controller having
// written every leader's condition back. It reports the process's peak
// resident memory (VmHWM), its CPU time per iteration and while idle.
//
//	cd e2e && go test -run '^$' -bench ReadinessGateProcess -benchtime 10x .
func BenchmarkReadinessGateProcess(b *testing.B) {
	tt := bed.ForTest(b)
	ctx := b.Context()
	bin := filepath.Join(b.TempDir(), "udrain")
	build := exec.Command("go", "build", "-o", bin, "./cmd/udrain")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	gpu := fixture.GPU{Count: 8, Product: "NVIDIA-H100-80GB-HBM3"}
	s := &scenario{tt: tt, nodes: fixture.Nodes{Pool: tt.Name, UDs: 10, PerUD: 10, GPU: &gpu}}
	if _, err := s.nodes.Create(ctx, tt.Client); err != nil {
		b.Fatal(err)
	}
	s.lws = fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: 100, Size: 8, Pool: tt.Name, GPUsPerPod: 1,
		ReadyDelay: time.Second, TerminateDelay: 100 * time.Millisecond, GracePeriodSeconds: 1}

	var log bytes.Buffer
	cmd := exec.Command(bin, "readiness-gate-controller", "--selector", "leaderworkerset.sigs.k8s.io/name",
		"--lease-namespace", tt.Name, "--kubeconfig", bed.Kubeconfig())
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			b.Errorf("the controller exited with %v after SIGTERM:\n%s", err, log.String())
		}
	}()
	pid := cmd.Process.Pid
	var mu sync.Mutex
	peakRSS := int64(0)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go func() {
		for sampleCtx.Err() == nil {
			if rss, ok := procStatusKiB(pid, "VmRSS"); ok {
				mu.Lock()
				peakRSS = max(peakRSS, rss)
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	start := time.Now()
	if err := s.lws.Create(ctx, tt.Client); err != nil {
		b.Fatal(err)
	}
	s.waitHealthy(b, 10*time.Minute)
	cpuStart := procCPU(b, pid)
	b.Logf("800 pods healthy %s after the controller started; its CPU so far %s", time.Since(start).Round(time.Second), cpuStart)

	b.ResetTimer()
	for i := range b.N {
		ud := i % s.nodes.UDs
		nodes := map[string]bool{}
		for j := range s.nodes.PerUD {
			nodes[s.nodes.Name(ud, j)] = true
		}
		pods, err := tt.Client.CoreV1().Pods(tt.Name).List(ctx, metav1.ListOptions{LabelSelector: s.lws.Selector().String()})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pods.Items {
			if nodes[p.Spec.NodeName] {
				if err := tt.Client.CoreV1().Pods(tt.Name).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		s.waitHealthy(b, 5*time.Minute)
	}
	b.StopTimer()
	churn := procCPU(b, pid) - cpuStart
	idleStart := procCPU(b, pid)
	const idle = 20 * time.Second
	time.Sleep(idle)
	idleCPU := procCPU(b, pid) - idleStart
	hwm, _ := procStatusKiB(pid, "VmHWM")
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(float64(max(hwm, peakRSS))/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(churn.Milliseconds())/float64(b.N), "CPU-ms/domain")
	b.ReportMetric(float64(idleCPU.Microseconds())/float64(idle.Milliseconds()), "idle-mCPU")
	b.ReportMetric(float64(cpuStart.Milliseconds()), "startup-CPU-ms")
}

// procStatusKiB reads a field of /proc/PID/status in KiB (VmRSS, VmHWM).
func procStatusKiB(pid int, field string) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// procCPU is the user and system CPU time of a running process so far.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): utime and stime are the 14th and 15th fields of the line.
	rest := string(data[bytes.LastIndexByte(data, ')')+2:])
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}
