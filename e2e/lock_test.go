package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

// TestRolloutLockDrill is the "two rollouts at once" drill, with the udrain
// binary as users run it: two `udrain rollout` processes with the same ID
// start together and exactly one runs (the other exits 1 at once, naming
// the holder, having changed nothing); the holder is killed with SIGKILL
// during the second domain's upgrade, its upgrade command with it, as a
// crashed pod would be; a rollout started before the Lease expires is
// refused, one started after takes the Lease over and resumes: it skips
// the finished domain, upgrades the interrupted one again and completes.
// Across all processes each group is disrupted exactly once and each pod
// evicted once (the independent pod recording judges it).
func TestRolloutLockDrill(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	bin := buildUdrain(t)
	dir := t.TempDir()
	const id = "e2e-lock"
	lease := "udrain-rollout-" + id
	// Each upgrade records its domain and its process group, then takes
	// a while: long enough for the SIGKILL to land inside it.
	upgrade := fmt.Sprintf(`echo "$UDRAIN_DOMAIN $$" >> %s/upgrades; sleep 6`, dir)
	args := []string{"rollout", "--kubeconfig", s.tt.Testbed().Kubeconfig(), "--id", id,
		"--domains", strings.Join(s.domains(), ","), "--upgrade-command", upgrade,
		"--recovery-timeout", "3m", "-o", "json"}

	start := time.Now()
	a, b := startUdrain(t, s.tt, bin, "first", args), startUdrain(t, s.tt, bin, "second", args)
	// The one that does not hold the Lease fails at once.
	var holder, loser *udrainProcess
	select {
	case <-a.done:
		loser, holder = a, b
	case <-b.done:
		loser, holder = b, a
	case <-time.After(time.Minute):
		t.Fatalf("neither rollout stopped within a minute: both run (Lease %s/%s)", eviction.DefaultLockNamespace, lease)
	}
	refusedAfter := time.Since(start)
	rep := loser.report(t)
	if loser.code != app.ExitError || rep.Error == nil || !strings.Contains(rep.Error.Message, "is running elsewhere") ||
		!strings.Contains(rep.Error.Message, fmt.Sprintf("-%d-", holder.cmd.Process.Pid)) {
		t.Fatalf("the second rollout: exit code %d, error %+v; want exit code %d and an error naming the holder (pid %d)\n%s",
			loser.code, rep.Error, app.ExitError, holder.cmd.Process.Pid, loser.stderr())
	}
	for _, d := range rep.Result.Domains {
		if d.State != eviction.StatePending || d.Drain != nil {
			t.Errorf("the refused rollout touched domain %s: %s", d.Domain, d.State)
		}
	}
	t.Logf("two rollouts %s at once: pid %d holds the Lease, pid %d refused after %s: %s", id, holder.cmd.Process.Pid,
		loser.cmd.Process.Pid, refusedAfter.Round(time.Millisecond), rep.Error.Message)

	// SIGKILL the holder in the second domain's upgrade step.
	second := s.nodes.UD(1)
	var upgradePID int
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		for _, line := range upgradeLines(dir) {
			if line[0] == second {
				upgradePID, _ = strconv.Atoi(line[1])
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the holder never reached the upgrade of %s (upgrades %v):\n%s", second, upgradeLines(dir), holder.stderr())
	}
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(-upgradePID, syscall.SIGKILL)
	<-holder.done
	killedAt := time.Now()
	l, err := s.tt.Client.CoordinationV1().Leases(eviction.DefaultLockNamespace).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewed := l.Spec.RenewTime.Time
	expires := renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	t.Logf("killed pid %d (exit %d) in the upgrade of %s; its Lease was last renewed %s before, expires in %s",
		holder.cmd.Process.Pid, holder.code, second, killedAt.Sub(renewed).Round(time.Millisecond), time.Until(expires).Round(time.Millisecond))

	// Before expiry: refused, naming the dead holder.
	early := startUdrain(t, s.tt, bin, "early", args)
	<-early.done
	if r := early.report(t); early.code != app.ExitError || r.Error == nil || !strings.Contains(r.Error.Message, "is running elsewhere") {
		t.Fatalf("a rollout started %s after the kill, before the Lease expired: exit code %d, error %+v; want it refused\n%s",
			time.Since(killedAt).Round(time.Millisecond), early.code, r.Error, early.stderr())
	}
	t.Logf("a rollout started before the Lease expired was refused: %s", early.report(t).Error.Message)
	if time.Now().After(expires) {
		t.Fatalf("the refused rollout ended after the Lease expired (%s): the test cannot tell", expires.Format(time.TimeOnly))
	}

	// After expiry: taken over, resumed, completed.
	time.Sleep(time.Until(expires) + 500*time.Millisecond)
	resumedAt := time.Now()
	// -v 1 logs the library's decisions, the takeover among them.
	resumed := startUdrain(t, s.tt, bin, "resumed", append(slices.Clone(args), "-v", "1"))
	select {
	case <-resumed.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the resumed rollout did not finish in 5 minutes:\n%s", resumed.stderr())
	}
	r := resumed.report(t)
	if resumed.code != app.ExitOK || !r.Result.Completed {
		t.Fatalf("the rollout that took the Lease over: exit code %d, error %+v\n%s", resumed.code, r.Error, resumed.stderr())
	}
	if !strings.Contains(resumed.stderr(), "Taking over an expired rollout Lease") || !strings.Contains(resumed.stderr(), fmt.Sprintf("-%d-", holder.cmd.Process.Pid)) {
		t.Errorf("the resumed rollout does not log that it took the Lease over from pid %d:\n%s", holder.cmd.Process.Pid, resumed.stderr())
	}
	statuses := make([]eviction.DomainState, len(r.Result.Domains))
	for i, d := range r.Result.Domains {
		statuses[i] = d.State
	}
	if want := []eviction.DomainState{eviction.StateSkipped, eviction.StateDone, eviction.StateDone}; !slices.Equal(statuses, want) {
		t.Errorf("the resumed rollout's domains: %v, want %v", statuses, want)
	}
	if d := r.Result.Domains[1].Drain; d == nil || d.Pods.Phase1Evicted+d.Pods.Phase2Evicted != 0 {
		t.Errorf("the resumed rollout evicted pods in %s, drained already by the killed one: %+v", second, d)
	}
	var upgraded []string
	for _, line := range upgradeLines(dir) {
		upgraded = append(upgraded, line[0])
	}
	if want := []string{s.nodes.UD(0), second, second, s.nodes.UD(2)}; !slices.Equal(upgraded, want) {
		t.Errorf("upgrade steps ran for %v, want %v (the killed one's again, none twice otherwise)", upgraded, want)
	}
	if l, err := s.tt.Client.CoordinationV1().Leases(eviction.DefaultLockNamespace).Get(ctx, lease, metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity != nil {
		t.Errorf("the Lease after the rollout: %+v (err %v), want released", l.Spec, err)
	}
	t.Logf("a rollout started %s after the kill took the Lease over and completed in %s (domains %v)",
		resumedAt.Sub(killedAt).Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond), statuses)
	checkWholeRollout(t, s, start, "all runs")
	checkUpgradedAndUncordoned(t, s, id)
}

// udrainProcess is a udrain binary running as its own process.
type udrainProcess struct {
	cmd         *exec.Cmd
	out, errOut *bytes.Buffer
	done        chan struct{}
	code        int
	name        string
}

// startUdrain starts the udrain binary with args; its stderr goes into the
// test's artifacts as udrain-<name>.log if the test fails, and the process
// is killed when the test ends.
func startUdrain(t *testing.T, tt *testbed.Test, bin, name string, args []string) *udrainProcess {
	t.Helper()
	p := &udrainProcess{cmd: exec.Command(bin, args...), out: &bytes.Buffer{}, errOut: &bytes.Buffer{}, done: make(chan struct{}), name: name}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errOut
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		if err != nil && p.code == 0 {
			p.code = -1
		}
		close(p.done)
	}()
	tt.OnFailure("udrain-"+name+".log", func(w io.Writer) error {
		<-p.done
		_, err := w.Write(p.errOut.Bytes())
		return err
	})
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// stderr is what the process wrote on stderr; call it once it has ended.
func (p *udrainProcess) stderr() string { return p.errOut.String() }

// report decodes the rollout's JSON report; call it once it has ended.
func (p *udrainProcess) report(t *testing.T) report.RolloutReport {
	t.Helper()
	var r report.RolloutReport
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil || r.Result == nil {
		t.Fatalf("udrain %s: exit code %d, no rollout report on stdout (%v):\n%s\nstderr:\n%s", p.name, p.code, err, p.out, p.errOut)
	}
	return r
}

// upgradeLines returns the upgrade steps recorded in dir/upgrades, each as
// its domain and process ID.
func upgradeLines(dir string) [][2]string {
	data, _ := os.ReadFile(filepath.Join(dir, "upgrades"))
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if dom, pid, ok := strings.Cut(line, " "); ok {
			out = append(out, [2]string{dom, pid})
		}
	}
	return out
}

// buildUdrain builds the udrain binary of this checkout into the test's
// temporary folder.
func buildUdrain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "udrain")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/udrain")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/udrain: %v\n%s", err, out)
	}
	return bin
}
