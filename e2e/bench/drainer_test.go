package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
)

// The report keeps every event's time, type, domain and message, and
// none of their health snapshots (not used by the analysis, and most of
// the drainer's measured heap when kept).
func TestReportedEventDropsHealthOnly(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	e := eviction.Event{
		Type: eviction.EventWaitingRecovery, Time: at, Domain: "ud-1", Message: "group ns/llm-0: llm-0-w-1 Pending",
		Health: &eviction.DomainHealth{Domain: "ud-1", Groups: []health.GroupStatus{{Message: "llm-0-w-1 Pending"}}},
	}
	want := e
	want.Health = nil
	if diff := cmp.Diff(want, reportedEvent(e)); diff != "" {
		t.Errorf("reportedEvent (-want +got):\n%s", diff)
	}
	if e.Health == nil {
		t.Errorf("reportedEvent changed the event it was given")
	}
}

func TestHeapProfileBesideTheCPUProfile(t *testing.T) {
	for in, want := range map[string]string{
		"logs/bench-fleet-1.cpu.pprof": "logs/bench-fleet-1.heap.pprof",
		"cpu.out":                      "cpu.out.heap",
	} {
		if got := heapProfileName(in); got != want {
			t.Errorf("heapProfileName(%q) = %q, want %q", in, got, want)
		}
	}
}
