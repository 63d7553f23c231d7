package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// The report keeps every event's time, type, domain and message, and
// none of their health snapshots (not used by the analysis, and most of
// the drainer's measured heap when kept).
func TestReportedEventDropsHealthOnly(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	e := eviction.Event{
		Type: eviction.EventWaitingRecovery, Time: at, Domain: "ud-1", Message: "group ns/llm-0: llm-0-w-1 Pending",
		Health: &health.DomainStatus{Domain: "ud-1", Groups: []health.GroupStatus{{Message: "llm-0-w-1 Pending"}}},
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

// Events written as JSON lines by the drainer come back as they were.
func TestEventsFileRoundTrip(t *testing.T) {
	name := filepath.Join(t.TempDir(), "events.jsonl")
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	want := []eviction.Event{
		{Type: eviction.EventEvicted, Time: at, Domain: "ud-1", Pod: &topology.PodRef{Namespace: "ns", Name: "llm-0", UID: "u1", Node: "n1"}},
		{Type: eviction.EventRecovered, Time: at.Add(time.Second), Domain: "ud-1", Message: "ok"},
	}
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for _, e := range want {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	got, err := readEvents(name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(name, []byte("{\"type\":"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readEvents(name); err == nil {
		t.Errorf("a cut line read without an error")
	}
}

func TestJobRSSPrefersThePeakDuringTheJob(t *testing.T) {
	if got := (Memory{JobMaxRSS: 100, MaxRSS: 300}).jobRSS(); got != 100 {
		t.Errorf("jobRSS = %d, want 100", got)
	}
	if got := (Memory{MaxRSS: 300}).jobRSS(); got != 300 {
		t.Errorf("jobRSS without JobMaxRSS = %d, want 300", got)
	}
	if runtime.GOOS == "linux" {
		if rss, err := processPeakRSS(os.Getpid()); err != nil || rss <= 0 {
			t.Errorf("processPeakRSS(self) = %d, %v on Linux", rss, err)
		}
	}
}
