package app

import (
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
)

// eventLine is the grammar of a no-terminal progress line.
var eventLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [A-Z][A-Za-z]+( [a-z0-9]+=[^ "]+)*( msg=".*")?$`)

// TestDrainProgressLines: without a terminal, a drain prints one
// timestamped line per event to stderr, in the documented grammar.
func TestDrainProgressLines(t *testing.T) {
	c := newCluster(t)
	r := runOn(t, c, "drain", "ud-1", "--ignore-daemonsets", "--concurrency", "1")
	if r.code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	for _, l := range lines {
		if !eventLine.MatchString(l) {
			t.Errorf("line does not follow the grammar: %q", l)
		}
	}
	for _, want := range []string{
		`2026-07-01T10:00:00Z Planned domain=ud-1 phase1=0/1 phase2=0/2 gone=0 msg="3 node(s); phase 1: 1 pod(s), phase 2: 2 pod(s), 1 skipped, 0 blocker(s)"`,
		`2026-07-01T10:00:00Z Cordoned domain=ud-1 node=gpu-2 phase1=0/1 phase2=0/2 gone=0 msg="cordoned"`,
		`2026-07-01T10:00:00Z PhaseStarted domain=ud-1 phase=1 phase1=0/1 phase2=0/2 gone=0 msg="phase 1: 1 pod(s)"`,
		`2026-07-01T10:00:00Z Evicted domain=ud-1 phase=1 pod=inference/llama-0 node=gpu-1 phase1=0/1 phase2=0/2 gone=0`,
		`2026-07-01T10:00:00Z PhaseDone domain=ud-1 phase=2 phase1=1/1 phase2=2/2 gone=0 msg="phase 2 done: every pod evicted"`,
		`2026-07-01T10:00:00Z Drained domain=ud-1 phase1=1/1 phase2=2/2 gone=3 msg="every evicted pod is gone"`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("stderr has no line\n%s\nin:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\x1b[") {
		t.Error("stderr has terminal escapes although it is not a terminal")
	}
}

// TestDrainLiveProgress: on a terminal, a drain redraws a live block on
// stderr and prints notable events above it.
func TestDrainLiveProgress(t *testing.T) {
	c := newCluster(t)
	cfg, _ := testConfig(c.client)
	cfg.IsTerminal = func(io.Writer) bool { return true }
	cfg.TerminalWidth = func(io.Writer) int { return 100 }
	r := run(t, t.Context(), cfg, "drain", "ud-1", "--ignore-daemonsets")
	if r.code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"\x1b[1A\x1b[2K",
		"10:00:00 PhaseStarted domain=ud-1 phase=1",
		"udrain domain ud-1  drained  elapsed 0s\n  phase 1 evicted 1/1  phase 2 evicted 2/2  pods left 0\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr has no %q:\n%q", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, " Evicting ") {
		t.Error("the live view printed a line per eviction")
	}
}

func TestLiveProgress(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	var buf syncBuffer
	p := newLiveProgress(&buf, clk, 200)
	p.setTotal(2)
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventDomainStarted, Domain: "ud-2"})
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventPhaseStarted, Domain: "ud-2", Phase: eviction.Phase1,
		Progress: eviction.Progress{Phase1Total: 1, Phase2Total: 3}})
	block := &eviction.BlockInfo{Namespace: "inference", PDB: "llama-leaders", BudgetCounts: health.BudgetCounts{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}, Since: clk.Now(),
		Pods: []eviction.PodRef{{Namespace: "inference", Name: "llama-1"}}}
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventBlocked, Domain: "ud-2", Phase: eviction.Phase1, Block: block,
		Progress: eviction.Progress{Phase1Total: 1, Phase2Total: 3}, Message: "spent"})
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventBlocked, Domain: "ud-2", Phase: eviction.Phase1, Block: block,
		Progress: eviction.Progress{Phase1Total: 1, Phase2Total: 3}, Message: "spent"})
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
	waitFor(t, func() bool { return strings.Contains(buf.String(), "elapsed 1m15s") })
	if !strings.Contains(buf.String(), strings.Replace(blocked, "%s", "1m15s", 1)) {
		t.Errorf("the block's age was not redrawn:\n%q", buf.String())
	}

	// Recovery: what it waits for gets a line of its own.
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventUnblocked, Domain: "ud-2", Block: block})
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventDrained, Domain: "ud-2"})
	p.event(eviction.Event{Time: clk.Now(), Type: eviction.EventWaitingRecovery, Domain: "ud-2", Message: "group inference/llama-1: 1/2 members Ready"})
	if want := "udrain domain ud-2 (1/2)  recovering  elapsed 1m15s\n  phase 1 evicted 0/1  phase 2 evicted 0/3  pods left 4\n  waiting for: group inference/llama-1: 1/2 members Ready\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("live view:\n%q\nwant it to end with\n%q", buf.String(), want)
	}

	// Lines of the upgrade command go above the block, which is redrawn.
	w := p.output("[upgrade ud-2] ")
	io.WriteString(w, "rebooting gpu-3\nrebooting")
	w.Close()
	p.close()
	out = buf.String()
	for _, want := range []string{"\x1b[1A\x1b[2K[upgrade ud-2] rebooting gpu-3\n", "[upgrade ud-2] rebooting\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q:\n%q", want, out)
		}
	}
	p.close() // a second close is harmless
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"longer than ten", 10, "longer th…"},
		{"ümlaut über", 6, "ümlau…"},
		{"no width known", 0, "no width known"},
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(s string) { got = append(got, s) }}
	io.WriteString(w, "one\r\ntw")
	io.WriteString(w, "o\n\nthree")
	if want := []string{"one", "two", ""}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("before Close: %q, want %q", got, want)
	}
	w.Close()
	if got[len(got)-1] != "three" {
		t.Errorf("Close did not flush the partial line: %q", got)
	}
}
