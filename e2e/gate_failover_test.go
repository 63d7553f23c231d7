package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/readiness/gate"
)

// The leader election of TestGateFailoverAfterLeaderCrash: the CLI's
// defaults, which deploy/readiness-gate runs with.
const (
	failoverLeaseDuration = gate.DefaultLeaseDuration // 15s
	failoverRenewDeadline = gate.DefaultRenewDeadline // 10s
	failoverRetryPeriod   = gate.DefaultRetryPeriod   // 2s
)

// TestGateFailoverAfterLeaderCrash runs two replicas of "udrain
// readiness-gate-controller", each a process of its own electing a leader
// through one Lease, with their health checks on --health-address. It
// kills the leader with SIGKILL (a crash: its Lease is not released), then
// makes a worker of a group unready, and measures the time from the kill
// until the standby has written the group's leader False.
//
// The bound: the standby takes a Lease once it has seen no renewal for a
// LeaseDuration. The dead leader renewed at most a RetryPeriod before the
// kill; the standby tries every RetryPeriod plus up to 1.2 RetryPeriods of
// jitter, so it sees the last renewal, and finds the Lease expired, each
// at most 2.2 RetryPeriods late: LeaseDuration + 4.4 RetryPeriods (23.8 s
// with 15s and 2s), plus 5 s for the new leader's first pass and this
// test's polling on a loaded machine. From the dead leader's last renewal
// (its Lease's renewTime, read after the kill) it is at least
// LeaseDuration, or the Lease was released, not left to expire; from the
// kill it can be less (a renewal late on a busy machine came more than a
// RetryPeriod before it).
//
// The health checks: the leader's /readyz says it leads, with the age of
// its last sync; the standby's says "standby" while the dead leader's
// Lease runs out, and that it leads once it took over.
func TestGateFailoverAfterLeaderCrash(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	bin := buildUdrain(t)
	gpu := fixture.H100()
	s := &scenario{tt: tt, nodes: fixture.Nodes{Pool: tt.Name, UDs: 2, PerUD: 1, GPU: &gpu}}
	if _, err := s.nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	s.lws = fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: 2, Size: 2, Pool: tt.Name, GPUsPerPod: 4,
		ReadyDelay: time.Second, TerminateDelay: 500 * time.Millisecond, GracePeriodSeconds: 5}

	replicas := map[string]*gateProcess{}
	for _, id := range []string{"replica-a", "replica-b"} {
		replicas[id] = startGateProcess(t, tt, bin, id, "readiness-gate-controller",
			"-n", tt.Name, "--selector", s.lws.Selector().String(),
			"--lease-namespace", tt.Name, "--id", id,
			"--lease-duration", failoverLeaseDuration.String(), "--renew-deadline", failoverRenewDeadline.String(),
			"--retry-period", failoverRetryPeriod.String(), "--health-address", "127.0.0.1:0")
	}
	if err := s.lws.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	s.waitHealthy(t, 3*time.Minute)

	lease, err := tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || replicas[*lease.Spec.HolderIdentity] == nil {
		t.Fatalf("Lease %s/%s: %v, want held by a replica", tt.Name, gate.DefaultLeaseName, err)
	}
	leader := replicas[*lease.Spec.HolderIdentity]
	var standby *gateProcess
	for _, p := range replicas {
		if p != leader {
			standby = p
		}
	}
	t.Logf("%s leads, %s stands by", leader.id, standby.id)
	leader.waitHealth(t, "/readyz", http.StatusOK, "leading for ", "last successful sync ")
	leader.waitHealth(t, "/healthz", http.StatusOK)
	standby.waitHealth(t, "/readyz", http.StatusOK, "standby; pod cache synced")
	standby.waitHealth(t, "/healthz", http.StatusOK)

	// The crash, then a worker of group 0 unready, and the watch of its
	// leader's condition.
	group, worker := s.lws.LeaderName(0), s.lws.WorkerName(0, 1)
	if st := conditionStatus(ctx, t, tt, group); st != corev1.ConditionTrue {
		t.Fatalf("%s's %s is %q before the crash, want True", group, gate.ConditionType, st)
	}
	killed := leader.kill(t)
	// The dead leader's last renewal: a standby takes the Lease no sooner
	// than a Lease duration after it saw that renewal.
	lease, err = tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Lease %s/%s after the kill: %v", tt.Name, gate.DefaultLeaseName, err)
	}
	if lease.Spec.RenewTime == nil {
		t.Fatalf("Lease %s/%s after the kill has no renew time", tt.Name, gate.DefaultLeaseName)
	}
	renewed := lease.Spec.RenewTime.Time
	if err := fixture.HoldUnready(ctx, tt.Client, tt.Name, worker, true); err != nil {
		t.Fatal(err)
	}
	unready := time.Now()
	if code, body := standby.get("/readyz"); code != http.StatusOK || !strings.Contains(body, "standby") {
		t.Errorf("the standby's /readyz while the dead leader's Lease runs out: %d %q, want 200, standby", code, body)
	}
	if code, body := leader.get("/healthz"); code != 0 {
		t.Errorf("the dead leader's /healthz answered %d %q", code, body)
	}
	bound := failoverLeaseDuration + time.Duration(4.4*float64(failoverRetryPeriod)) + 5*time.Second
	var written time.Time
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, bound+30*time.Second, true, func(ctx context.Context) (bool, error) {
		if conditionStatus(ctx, t, tt, group) == corev1.ConditionFalse {
			written = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s's %s still not False %s after the leader's kill: %v", group, gate.ConditionType, time.Since(killed).Round(time.Millisecond), err)
	}
	failover := written.Sub(killed)
	t.Logf("failover: the standby wrote %s's condition False %s after the leader's SIGKILL (%s after its last renewal, %s after the worker went unready); lease duration %s, renew deadline %s, retry period %s; bound %s",
		group, failover.Round(10*time.Millisecond), written.Sub(renewed).Round(10*time.Millisecond), written.Sub(unready).Round(10*time.Millisecond),
		failoverLeaseDuration, failoverRenewDeadline, failoverRetryPeriod, bound)
	if failover > bound {
		t.Errorf("failover took %s, longer than the bound %s", failover.Round(10*time.Millisecond), bound)
	}
	// Measured from the last renewal, not the kill: a leader slow to renew
	// on a busy machine renewed longer than a retry period before it.
	if sinceRenewal := written.Sub(renewed); sinceRenewal < failoverLeaseDuration-100*time.Millisecond {
		t.Errorf("the standby wrote the condition %s after the dead leader's last renewal (at %s), less than the Lease duration %s: the Lease was released, not left to expire",
			sinceRenewal.Round(10*time.Millisecond), renewed.Format("15:04:05.000"), failoverLeaseDuration)
	}
	lease, err = tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != standby.id {
		t.Errorf("Lease after the failover: %v, %v; want held by %s", lease.Spec.HolderIdentity, err, standby.id)
	}
	standby.waitHealth(t, "/readyz", http.StatusOK, "leading for ", "last successful sync ")
	standby.waitHealth(t, "/healthz", http.StatusOK)

	// The new leader follows the group back.
	if err := fixture.HoldUnready(ctx, tt.Client, tt.Name, worker, false); err != nil {
		t.Fatal(err)
	}
	s.waitHealthy(t, 2*time.Minute)
}

// conditionStatus is the status of a pod's readiness-gate condition; ""
// if it has none or cannot be read now.
func conditionStatus(ctx context.Context, t *testing.T, tt *testbed.Test, pod string) corev1.ConditionStatus {
	p, err := tt.Client.CoreV1().Pods(tt.Name).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Logf("get pod %s: %v", pod, err)
		return ""
	}
	if c := gate.CurrentCondition(p); c != nil {
		return c.Status
	}
	return ""
}

// gateProcess is a udrain command running in a process of its own.
type gateProcess struct {
	id     string
	cmd    *exec.Cmd
	out    *watchedOutput
	health string // the address of its health checks
	exited chan error
	killed bool
}

var servingHealth = regexp.MustCompile(`serving health checks on http://([^/\s]+)/healthz`)

// startGateProcess runs bin with args until the test ends (then SIGTERM,
// and exit code 0 is expected, unless the test killed it) and waits until
// it says where its health checks are.
func startGateProcess(t *testing.T, tt *testbed.Test, bin, id string, args ...string) *gateProcess {
	t.Helper()
	p := &gateProcess{id: id, out: &watchedOutput{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, append(args, "--kubeconfig", bed.Kubeconfig())...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	tt.OnFailure(id+".log", func(w io.Writer) error { _, err := io.WriteString(w, p.out.String()); return err })
	t.Cleanup(func() {
		if p.killed {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.exited:
			if err != nil {
				t.Errorf("%s exited with %v after SIGTERM:\n%s", id, err, p.out.String())
			}
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("%s did not exit within 30s of SIGTERM:\n%s", id, p.out.String())
		}
	})
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if m := servingHealth.FindStringSubmatch(p.out.String()); m != nil {
			p.health = m[1]
			return true, nil
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			return false, errors.New("exited")
		default:
			return false, nil
		}
	})
	if err != nil {
		t.Fatalf("%s does not say where its health checks are: %v\n%s", id, err, p.out.String())
	}
	return p
}

// kill kills the process with SIGKILL, as a crash or an OOM kill would,
// and returns when it has gone.
func (p *gateProcess) kill(t *testing.T) time.Time {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	p.killed = true
	<-p.exited
	return killed
}

// get asks one of the health checks; code 0 if nothing answered.
func (p *gateProcess) get(path string) (int, string) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + p.health + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitHealth waits until a health check answers code with a body holding
// every one of want.
func (p *gateProcess) waitHealth(t *testing.T, path string, code int, want ...string) {
	t.Helper()
	var gotCode int
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		gotCode, body = p.get(path)
		if gotCode != code {
			return false, nil
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s %s: %d %q, want %d with %q", p.id, path, gotCode, body, code, want)
	}
	t.Logf("%s %s: %d %q", p.id, path, gotCode, body)
}

// watchedOutput collects a process's output for reading while it runs.
type watchedOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *watchedOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

func (o *watchedOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
