package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/upgrade"
)

// TestRolloutUpgradeCommand runs a whole rollout on the fake cluster (pods
// come back Ready after their eviction): the upgrade command runs once per
// domain with UDRAIN_DOMAIN, UDRAIN_NODES, UDRAIN_ROLLOUT_ID and
// UDRAIN_DOMAIN_LABEL, its output on stderr prefixed; the nodes end
// uncordoned and marked upgraded; running the same command again skips
// every domain; another command starts a new rollout.
func TestRolloutUpgradeCommand(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	const upgrade = `echo "domain=$UDRAIN_DOMAIN nodes=$UDRAIN_NODES id=$UDRAIN_ROLLOUT_ID label=$UDRAIN_DOMAIN_LABEL home=${HOME:-unset}"; printf 'partial line to stderr' >&2`
	id := eviction.RolloutIDOf("topology.udrain.dev/upgrade-domain", upgrade)

	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-command", upgrade, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"[upgrade ud-1] domain=ud-1 nodes=cpu-1,gpu-1,gpu-2 id=" + id + " label=topology.udrain.dev/upgrade-domain home=unset\n",
		"[upgrade ud-1] partial line to stderr\n",
		"[upgrade ud-2] domain=ud-2 nodes=gpu-3,gpu-4 id=" + id + " label=topology.udrain.dev/upgrade-domain home=unset\n",
		" RolloutID msg=\"rollout " + id + " over 2 domains (ud-1, ud-2); if it stops, run the same command again to resume (or pass --id " + id + ")\"\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not have %q:\n%s", want, r.stderr)
		}
	}
	var res report.RolloutReport
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Done", "Done"}, statuses(res)); diff != "" {
		t.Errorf("domain statuses (-want +got):\n%s", diff)
	}
	if res.Result.ID != id || !res.Result.Completed || res.Summary.DomainsDone != 2 || res.Summary.Phase1Evicted != 2 || res.Summary.Phase2Evicted != 3 || res.Summary.GroupsDisrupted != 2 {
		t.Errorf("result: id %s completed %v summary %+v; want id %s, 2 domains done, 2+3 pods evicted, 2 groups", res.Result.ID, res.Result.Completed, res.Summary, id)
	}
	for _, n := range []string{"cpu-1", "gpu-1", "gpu-2", "gpu-3", "gpu-4"} {
		node := c.node(t, n)
		if node.Spec.Unschedulable || node.Annotations[udrain.UpgradedByAnnotation] != id {
			t.Errorf("node %s: unschedulable %v, upgraded-by %q; want schedulable and upgraded by %s", n, node.Spec.Unschedulable, node.Annotations[udrain.UpgradedByAnnotation], id)
		}
	}
	evictions := len(c.evicted())

	// The same command again: every domain was done by this rollout.
	r = runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-command", upgrade, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("resume: exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Skipped", "Skipped"}, statuses(res)); diff != "" {
		t.Errorf("resumed domain statuses (-want +got):\n%s", diff)
	}
	if strings.Contains(r.stderr, "[upgrade ") {
		t.Errorf("the resumed rollout ran the upgrade command again:\n%s", r.stderr)
	}
	if got := len(c.evicted()); got != evictions {
		t.Errorf("the resumed rollout evicted %d more pods", got-evictions)
	}

	// Another command: a new rollout over every domain.
	r = runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-command", "true", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("new rollout: exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Done", "Done"}, statuses(res)); diff != "" {
		t.Errorf("new rollout's domain statuses (-want +got):\n%s", diff)
	}
}

// TestRolloutStopsAtFailedUpgrade: the rollout stops at the domain whose
// upgrade command fails, leaves it cordoned, reports the later domains as
// Pending, and says how to resume.
func TestRolloutStopsAtFailedUpgrade(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-command", `test "$UDRAIN_DOMAIN" != ud-1`)
	if r.code != ExitError {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, ExitError, r.stderr)
	}
	for _, want := range []string{"ud-1    Failed", "ud-2    Pending", "To resume, run the same command again (rollout ID udrain-"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not have %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "the upgrade command for domain ud-1 exited with status 1") {
		t.Errorf("stderr does not explain the failure:\n%s", r.stderr)
	}
	if n := c.node(t, "gpu-1"); !n.Spec.Unschedulable {
		t.Error("gpu-1 was uncordoned although its upgrade failed")
	}
}

// TestRolloutInterruptedDuringUpgrade: a cancel during the upgrade command
// stops the command (its process group gets SIGTERM) and the rollout with
// exit code 130.
func TestRolloutInterruptedDuringUpgrade(t *testing.T) {
	c := newCluster(t)
	c.recreate = true
	cfg, _ := testConfig(c.client)
	ctx, cancel := contextWithCancel(t)
	start := time.Now()
	// The shell's child (sleep) must stop too, or its open output
	// would hold the rollout for the kill delay.
	out, errOut, done := runInBackground(ctx, cfg, "rollout", "--ignore-daemonsets", "--upgrade-command", "echo started; sleep 60; echo not reached")
	waitFor(t, func() bool { return strings.Contains(errOut.String(), "[upgrade ud-1] started") })
	cancel()
	code := <-done
	if code != ExitInterrupted {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, ExitInterrupted, errOut.String())
	}
	if took := time.Since(start); took >= upgrade.DefaultCommandKillDelay {
		t.Errorf("the rollout took %s to stop: the upgrade command's children were not terminated", took)
	}
	if strings.Contains(errOut.String(), "not reached") {
		t.Error("the upgrade command went on after the cancel")
	}
	if !strings.Contains(out.String(), "ud-1    Interrupted") {
		t.Errorf("stdout does not show ud-1 interrupted:\n%s", out.String())
	}
}

func statuses(r report.RolloutReport) []string {
	var out []string
	for _, d := range r.Result.Domains {
		out = append(out, string(d.State))
	}
	return out
}

// TestRolloutContractViolation: the audit before the first domain stops
// the rollout; nothing is drained, the report says nothing about resuming
// and stderr points at the audit.
func TestRolloutContractViolation(t *testing.T) {
	c := newCluster(t, withViolations())
	r := runOn(t, c, "rollout", "--ignore-daemonsets", "--upgrade-command", "true")
	if r.code != ExitContract {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, ExitContract, r.stderr)
	}
	if strings.Contains(r.stdout, "To resume") || !strings.Contains(r.stdout, "ud-1    Pending") {
		t.Errorf("stdout:\n%s\nwant every domain Pending and no resume advice", r.stdout)
	}
	if !strings.Contains(r.stderr, "'udrain audit' lists every finding") {
		t.Errorf("stderr does not point at the audit:\n%s", r.stderr)
	}
	if ev := c.evicted(); len(ev) > 0 {
		t.Errorf("evicted %v despite the violation", ev)
	}
}
