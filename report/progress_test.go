package report_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

var progressNow = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

// TestProgressLines: without Live, every event, note and line of output is
// one line, in FormatEvent's grammar with RFC 3339 times; nothing is
// redrawn.
func TestProgressLines(t *testing.T) {
	clk := clocktesting.NewFakeClock(progressNow)
	block := &eviction.BlockInfo{BudgetRef: health.BudgetRef{Namespace: "inference", PDB: "llama-leaders"}, Since: progressNow}
	for name, tc := range map[string]struct {
		show func(p *report.Progress)
		want []string
	}{
		"events, each one": {func(p *report.Progress) {
			p.Event(context.Background(), eviction.Event{Time: progressNow, Type: eviction.EventDomainStarted, Domain: "ud-1"})
			p.Event(context.Background(), eviction.Event{Time: progressNow.Add(time.Second), Type: eviction.EventBlocked, Domain: "ud-1", Stage: eviction.StagePhase1, Block: block})
			p.Event(context.Background(), eviction.Event{Time: progressNow.Add(2 * time.Second), Type: eviction.EventBlocked, Domain: "ud-1", Stage: eviction.StagePhase1, Block: block})
		}, []string{
			"2026-07-01T10:00:00Z DomainStarted domain=ud-1",
			"2026-07-01T10:00:01Z Blocked domain=ud-1 phase=1 pdb=inference/llama-leaders allowed=0 healthy=0 desired=0 expected=0",
			"2026-07-01T10:00:02Z Blocked domain=ud-1 phase=1 pdb=inference/llama-leaders allowed=0 healthy=0 desired=0 expected=0",
		}},
		"a note at the clock's time": {func(p *report.Progress) {
			p.Note("RolloutID", "", "rollout r over 2 domains")
		}, []string{`2026-07-01T10:00:00Z RolloutID msg="rollout r over 2 domains"`}},
		"output, a line a write": {func(p *report.Progress) {
			io.WriteString(p.Output("[upgrade ud-1] "), "rebooting gpu-1\n")
			io.WriteString(p.Output("[upgrade ud-1] "), "two\nlines\n")
			io.WriteString(p.Output("[upgrade ud-1] "), "no newline")
		}, []string{"[upgrade ud-1] rebooting gpu-1", "[upgrade ud-1] two", "[upgrade ud-1] lines", "[upgrade ud-1] no newline"}},
	} {
		t.Run(name, func(t *testing.T) {
			var buf testkit.SyncBuffer
			p := report.NewProgress(&buf, report.ProgressOptions{Clock: clk, Width: 10})
			p.SetTotal(2)
			tc.show(p)
			p.Close()
			p.Close()
			if diff := cmp.Diff(tc.want, strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLiveProgress: Live redraws a block of lines, prints notable events
// (and a block once per budget) above it, redraws the elapsed times as the
// clock goes, and prints output lines above it.
func TestLiveProgress(t *testing.T) {
	clk := clocktesting.NewFakeClock(progressNow)
	var buf testkit.SyncBuffer
	p := report.NewProgress(&buf, report.ProgressOptions{Live: true, Width: 200, Clock: clk})
	p.SetTotal(2)
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainStarted, Domain: "ud-2"})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventPhaseStarted, Domain: "ud-2", Stage: eviction.StagePhase1,
		Progress: eviction.PodCounts{Phase1Total: 1, Phase2Total: 3}})
	block := &eviction.BlockInfo{BudgetRef: health.BudgetRef{Namespace: "inference", PDB: "llama-leaders"}, BudgetCounts: health.BudgetCounts{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}, Since: clk.Now(),
		Pods: []topology.PodRef{{Namespace: "inference", Name: "llama-1"}}}
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventBlocked, Domain: "ud-2", Stage: eviction.StagePhase1, Block: block,
		Progress: eviction.PodCounts{Phase1Total: 1, Phase2Total: 3}, Message: "spent"})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventBlocked, Domain: "ud-2", Stage: eviction.StagePhase1, Block: block,
		Progress: eviction.PodCounts{Phase1Total: 1, Phase2Total: 3}, Message: "spent"})
	out := buf.String()
	if n := strings.Count(out, "Blocked domain=ud-2"); n != 1 {
		t.Errorf("the block was printed %d times above the live view, want once:\n%q", n, out)
	}
	const blocked = "  blocked by PodDisruptionBudget inference/llama-leaders: allowed 0, healthy 1, needs 1, expected 2; for %s (1 pod waiting)\n"
	if want := "udrain domain ud-2 (1/2)  phase 1  evicting  elapsed 0s\n  phase 1 evicted 0/1  phase 2 evicted 0/3  pods left 4\n" + strings.Replace(blocked, "%s", "0s", 1); !strings.HasSuffix(out, want) {
		t.Errorf("live view:\n%q\nwant it to end with\n%q", out, want)
	}

	// Time passes: the ticker redraws the elapsed time and the block's age.
	clk.Step(75 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "elapsed 1m15s") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(buf.String(), strings.Replace(blocked, "%s", "1m15s", 1)) {
		t.Errorf("the block's age was not redrawn:\n%q", buf.String())
	}

	// Recovery: what it waits for gets a line of its own.
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventUnblocked, Domain: "ud-2", Block: block})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDrained, Domain: "ud-2"})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventWaitingRecovery, Domain: "ud-2", Message: "group inference/llama-1: 1/2 members Ready"})
	if want := "udrain domain ud-2 (1/2)  recovering  elapsed 1m15s\n  phase 1 evicted 0/1  phase 2 evicted 0/3  pods left 4\n  waiting for: group inference/llama-1: 1/2 members Ready\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("live view:\n%q\nwant it to end with\n%q", buf.String(), want)
	}

	// Lines of the upgrade command go above the block, which is redrawn.
	w := p.Output("[upgrade ud-2] ")
	io.WriteString(w, "rebooting gpu-3\n")
	io.WriteString(w, "rebooting")
	p.Note("RolloutID", "", "noted")
	p.Close()
	out = buf.String()
	for _, want := range []string{"\x1b[1A\x1b[2K[upgrade ud-2] rebooting gpu-3\n", "[upgrade ud-2] rebooting\n", "10:01:15 RolloutID msg=\"noted\"\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q:\n%q", want, out)
		}
	}
	p.Close() // a second close is harmless
}

// TestLiveProgressWidth: the live block's lines are cut to the width, the
// events printed above it are not.
func TestLiveProgressWidth(t *testing.T) {
	var buf testkit.SyncBuffer
	p := report.NewProgress(&buf, report.ProgressOptions{Live: true, Width: 21, Clock: clocktesting.NewFakeClock(progressNow)})
	p.Event(context.Background(), eviction.Event{Time: progressNow, Type: eviction.EventDomainStarted, Domain: "ud-1"})
	p.Close()
	if want := "10:00:00 DomainStarted domain=ud-1\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("output has no %q:\n%q", want, buf.String())
	}
	if want := "udrain domain ud-1 …\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("live view:\n%q\nwant it to end with %q", buf.String(), want)
	}
}

// TestLiveProgressNotable: on a live view, the notable events are printed
// above the block; the others (each pod's, the waits') only update it.
func TestLiveProgressNotable(t *testing.T) {
	printed := map[eviction.EventType]bool{
		eviction.EventPlanned: true, eviction.EventPhaseStarted: true, eviction.EventPhaseDone: true,
		eviction.EventDrained: true, eviction.EventUpgradeStarted: true, eviction.EventUpgradeDone: true,
		eviction.EventRecovered: true, eviction.EventDomainSkipped: true, eviction.EventNodeGone: true,
		eviction.EventLeftCordoned: true, eviction.EventRetrying: true, eviction.EventContractFindings: true,
		eviction.EventRolloutStarted: true, eviction.EventRolloutDone: true, eviction.EventDomainStarted: true,
		eviction.EventDomainDone: true, eviction.EventUnblocked: true,
	}
	all := []eviction.EventType{eviction.EventCordoned, eviction.EventEvicting, eviction.EventEvicted, eviction.EventGone,
		eviction.EventWaitingGPUs, eviction.EventUncordoned, eviction.EventWaitingRecovery, eviction.EventDryRun,
		eviction.EventEvictionFailed, eviction.EventRolloutStopped, eviction.EventRecoveryStarted, eviction.EventDrainStopped,
		eviction.EventLockAcquired, eviction.EventLockLost, eviction.EventLockReleased}
	for typ := range printed {
		all = append(all, typ)
	}
	got := map[eviction.EventType]bool{}
	for _, typ := range all {
		var buf testkit.SyncBuffer
		p := report.NewProgress(&buf, report.ProgressOptions{Live: true, Clock: clocktesting.NewFakeClock(progressNow)})
		p.Event(context.Background(), eviction.Event{Time: progressNow, Type: typ, Domain: "ud-1"})
		p.Close()
		if strings.Contains(buf.String(), "10:00:00 "+string(typ)+" ") {
			got[typ] = true
		}
	}
	if diff := cmp.Diff(printed, got); diff != "" {
		t.Errorf("events printed above the live block (-want +got):\n%s", diff)
	}
}

// TestLiveProgressParallelDomains: with several domains in flight, the
// live block has a head and each domain's lines; a held domain is said
// once, until it starts; with one domain left, the block looks as it
// does for one domain at a time.
func TestLiveProgressParallelDomains(t *testing.T) {
	clk := clocktesting.NewFakeClock(progressNow)
	var buf testkit.SyncBuffer
	p := report.NewProgress(&buf, report.ProgressOptions{Live: true, Width: 300, Clock: clk})
	p.SetTotal(3)
	for _, d := range []string{"ud-1", "ud-2"} {
		p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainStarted, Domain: d})
	}
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventPhaseStarted, Domain: "ud-1", Stage: eviction.StagePhase2,
		Progress: eviction.PodCounts{Phase1Total: 1, Phase1Evicted: 1, Phase2Total: 3}})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventUpgradeStarted, Domain: "ud-2"})
	held := &eviction.BlockInfo{Domain: "ud-3", Reason: eviction.BlockBudget, Message: "PodDisruptionBudget inference/llm-leaders allows 2 down"}
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainHeld, Domain: "ud-3", Hold: held, Message: held.Message})
	want := "udrain  2 domains in flight  elapsed 0s\n" +
		"  domain ud-1 (1/3)  phase 2  evicting\n" +
		"    phase 1 evicted 1/1  phase 2 evicted 0/3  pods left 4\n" +
		"  domain ud-2 (2/3)  upgrading\n" +
		"  next domain held back: ud-3: PodDisruptionBudget inference/llm-leaders allows 2 down\n"
	if out := buf.String(); !strings.HasSuffix(out, want) {
		t.Errorf("live view:\n%q\nwant it to end with\n%q", out, want)
	}
	if n := strings.Count(buf.String(), "DomainHeld domain=ud-3"); n != 1 {
		t.Errorf("DomainHeld printed %d times above the live view, want once", n)
	}
	// ud-1 is done: one domain in flight, shown as one domain at a time.
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainDone, Domain: "ud-1"})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainStarted, Domain: "ud-3"})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventUpgradeDone, Domain: "ud-2"})
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainDone, Domain: "ud-2"})
	if want := "udrain domain ud-3 (3/3)  planning  elapsed 0s\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("live view:\n%q\nwant it to end with\n%q", buf.String(), want)
	}
	p.Event(context.Background(), eviction.Event{Time: clk.Now(), Type: eviction.EventDomainDone, Domain: "ud-3"})
	p.Close()
	if want := "udrain domain ud-3 (3/3)  done  elapsed 0s\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("last live view:\n%q\nwant it to end with\n%q", buf.String(), want)
	}
}
