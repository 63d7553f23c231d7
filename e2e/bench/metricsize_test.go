package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/metrics"
	"github.com/udrain/udrain/topology"
)

// rolloutEvents are the events of a rollout over domains of pods pods each:
// every pod evicted after one refusal by its budget.
func rolloutEvents(domains, pods int) []eviction.Event {
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	var evs []eviction.Event
	add := func(e eviction.Event) {
		at = at.Add(time.Second)
		e.Time, e.ID = at, "r"
		evs = append(evs, e)
	}
	var names []string
	for d := range domains {
		names = append(names, fmt.Sprintf("ud-%d", d))
	}
	add(eviction.Event{Type: eviction.EventLockAcquired})
	add(eviction.Event{Type: eviction.EventRolloutStarted, Domains: names})
	for _, dom := range names {
		add(eviction.Event{Type: eviction.EventDomainStarted, Domain: dom})
		add(eviction.Event{Type: eviction.EventPlanned, Domain: dom})
		add(eviction.Event{Type: eviction.EventPhaseStarted, Domain: dom, Stage: eviction.StagePhase1})
		for p := range pods {
			ref := &topology.PodRef{Namespace: "ns", Name: fmt.Sprintf("%s-p%d", dom, p), UID: types.UID(fmt.Sprintf("%s-%d", dom, p)), Node: dom + "-n0"}
			add(eviction.Event{Type: eviction.EventBlocked, Domain: dom, Pod: ref, Request: eviction.RequestBudgetRefused})
			add(eviction.Event{Type: eviction.EventEvicted, Domain: dom, Pod: ref, Request: eviction.RequestEvicted})
		}
		add(eviction.Event{Type: eviction.EventPhaseDone, Domain: dom, Stage: eviction.StagePhase1})
		add(eviction.Event{Type: eviction.EventDrained, Domain: dom})
		add(eviction.Event{Type: eviction.EventUncordoned, Domain: dom})
		add(eviction.Event{Type: eviction.EventWaitingRecovery, Domain: dom})
		add(eviction.Event{Type: eviction.EventRecovered, Domain: dom})
		add(eviction.Event{Type: eviction.EventDomainDone, Domain: dom})
	}
	add(eviction.Event{Type: eviction.EventRolloutDone})
	return evs
}

// The metrics' series grow with the domains, never with the pods: no label
// takes a pod's or a node's name. A replayed events file (no Health) gives
// the series the live Recorder would.
func TestMetricsSizeGrowsWithDomainsOnly(t *testing.T) {
	size := func(domains, pods int) *MetricsSize {
		t.Helper()
		s, err := MetricsSizeOf(rolloutEvents(domains, pods))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	small, manyPods, manyDomains := size(2, 3), size(2, 300), size(20, 3)
	if diff := cmp.Diff(small, manyPods); diff != "" {
		t.Errorf("series with 3 and 300 pods per domain differ (-3 +300):\n%s", diff)
	}
	perDomain := (manyDomains.Series - small.Series) / 18
	if perDomain < 1 || manyDomains.Series != small.Series+18*perDomain {
		t.Errorf("series: %d with 2 domains, %d with 20; want a fixed number per domain", small.Series, manyDomains.Series)
	}
	// Every domain has its state, its groups-down gauge (made from the
	// replay's empty Health) and its phase durations.
	for _, name := range []string{metrics.DomainState, metrics.GroupsDown} {
		if got := manyDomains.ByMetric[name]; got != 20 {
			t.Errorf("%s: %d series for 20 domains, want 20", name, got)
		}
	}
	if manyDomains.Samples <= manyDomains.Series {
		t.Errorf("%d samples for %d series: the histograms' buckets are not counted", manyDomains.Samples, manyDomains.Series)
	}
}

// The live count (RunDrainerJob's) and the replay agree on the same events.
func TestMetricsSizeLiveAndReplayAgree(t *testing.T) {
	evs := rolloutEvents(3, 4)
	live, err := newMetricsCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == eviction.EventWaitingRecovery || e.Type == eviction.EventRecovered {
			e.Health = &health.DomainStatus{Domain: e.Domain}
		}
		live.rec.Record(context.Background(), e)
	}
	got, err := live.size()
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := MetricsSizeOf(evs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, replayed, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("live and replayed sizes (-live +replay):\n%s", diff)
	}
}
