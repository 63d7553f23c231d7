package app

import (
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
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
