package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// domainEvents are one domain's events of a rollout, at offsets from t0.
func domainEvents(domain string, at map[eviction.EventType]time.Duration, pods map[string][2]time.Duration, blocked ...string) []eviction.Event {
	ev := func(t eviction.EventType, phase eviction.Stage, pod string, off time.Duration) eviction.Event {
		e := eviction.Event{Time: t0.Add(off), Type: t, Domain: domain, Stage: phase}
		if ns, name, ok := strings.Cut(pod, "/"); ok {
			e.Pod = &topology.PodRef{Namespace: ns, Name: name, UID: types.UID(pod)}
		}
		return e
	}
	out := []eviction.Event{
		ev(eviction.EventDomainStarted, "", "", at[eviction.EventDomainStarted]),
		ev(eviction.EventPhaseStarted, eviction.StagePhase1, "", at[eviction.EventPhaseStarted]),
	}
	for pod, t := range pods {
		out = append(out, ev(eviction.EventEvicting, "", pod, t[0]), ev(eviction.EventEvicted, "", pod, t[1]))
	}
	for _, pod := range blocked {
		out = append(out, ev(eviction.EventBlocked, eviction.StagePhase1, pod, at[eviction.EventPhaseStarted]))
	}
	for _, t := range []eviction.EventType{eviction.EventPhaseDone, eviction.EventDrained, eviction.EventUpgradeStarted,
		eviction.EventUpgradeDone, eviction.EventUncordoned, eviction.EventRecovered, eviction.EventDomainDone} {
		out = append(out, ev(t, "", "", at[t]))
	}
	return out
}

func TestAnalyze(t *testing.T) {
	ms := time.Millisecond
	s := time.Second
	// Group 0 of "llm" in domain ud0: its pods evicted at 1s, healthy
	// again at 14s; the domain was uncordoned at 8s.
	o := Observe(events(healthyGroups(3), evict(0, 0, 1*s, 13*s)), ObserveOptions{
		UDOf: map[string]string{"ud0-0": "ud0", "ud1-0": "ud1", "ud2-0": "ud2"}, Workloads: []Workload{{Name: "llm", Groups: 3, MinAvailable: 2}}, From: t0})
	evs := domainEvents("ud0", map[eviction.EventType]time.Duration{
		eviction.EventDomainStarted: 500 * ms, eviction.EventPhaseStarted: 600 * ms, eviction.EventPhaseDone: 1100 * ms,
		eviction.EventDrained: 4200 * ms, eviction.EventUpgradeStarted: 4200 * ms, eviction.EventUpgradeDone: 6200 * ms,
		eviction.EventUncordoned: 6300 * ms, eviction.EventRecovered: 14*s + 300*ms, eviction.EventDomainDone: 14*s + 300*ms,
	}, map[string][2]time.Duration{
		"ns/llm-0-0":   {600 * ms, 640 * ms},
		"ns/llm-0-w-1": {700 * ms, 760 * ms},
		// Refused first: not a round trip.
		"ns/other": {600 * ms, 1000 * ms},
	}, "ns/other")
	d := Delays{Terminate: 3 * s, UpgradeStep: 2 * s}
	got := Analyze(evs, o, d, t0, 15*s)
	// The recording saw the group's pods terminating at 1s and 1.001s,
	// gone at 1.002s and 1.003s.
	want := Breakdown{
		Wall: 15 * s, Startup: 500 * ms, Bound: 60*ms + 3*s + 2*s + 7700*ms, BoundObserved: 60*ms + 2*ms + 2*s + 7700*ms,
		Domains: []DomainTimes{{
			Domain: "ud0", Groups: 1, Total: 13*s + 800*ms, Prepare: 100 * ms, Evict: 500 * ms, EvictionRoundTrip: 60 * ms,
			WaitGone: 3100 * ms, Upgrade: 2 * s, Uncordon: 100 * ms,
			// Uncordoned at 6.3s, healthy at 14s.
			GroupsReady: 7700 * ms, RecoveryLag: 300 * ms, Finish: 0,
			Bound: 60*ms + 3*s + 2*s + 7700*ms, Termination: 2 * ms, BoundObserved: 60*ms + 2*ms + 2*s + 7700*ms,
		}},
	}
	want.Ratio = float64(want.Wall) / float64(want.Bound)
	want.RatioObserved = float64(want.Wall) / float64(want.BoundObserved)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// A group that never recovers in the recording: no bound for it.
	o = Observe(events(healthyGroups(3), evict(0, 0, 1*s, time.Hour)), ObserveOptions{
		UDOf: map[string]string{"ud0-0": "ud0"}, Workloads: []Workload{{Name: "llm", Groups: 3, MinAvailable: 2}}, From: t0, Until: t0.Add(20 * s)})
	got = Analyze(evs, o, d, t0, 15*s)
	if g := got.Domains[0]; g.GroupsReady >= 0 || g.Bound != 60*ms+5*s {
		t.Errorf("unrecovered domain: GroupsReady %s, bound %s; want negative and 5.06s", g.GroupsReady, g.Bound)
	}
}

// A domain the rollout stopped in (no DomainDone) counts to its last event,
// not from the zero time.
func TestAnalyzeUnfinishedDomain(t *testing.T) {
	evs := []eviction.Event{
		{Time: t0, Type: eviction.EventDomainStarted, Domain: "ud0"},
		{Time: t0.Add(time.Second), Type: eviction.EventPhaseStarted, Domain: "ud0", Stage: eviction.StagePhase1},
		{Time: t0.Add(40 * time.Second), Type: eviction.EventDrained, Domain: "ud0"},
	}
	b := Analyze(evs, &Observation{}, Delays{Terminate: 3 * time.Second}, t0, time.Minute)
	if len(b.Domains) != 1 || b.Domains[0].Total != 40*time.Second {
		t.Fatalf("domains %+v, want ud0 with a total of 40s", b.Domains)
	}
}

// A group that finds room elsewhere (a spare or upgraded domain) is
// healthy again before its old domain is uncordoned: it counts as ready at
// the uncordon, not at its next recovery after it (a later disruption, in
// the old behaviour when it moved to a domain still to be drained).
func TestAnalyzeGroupRecoveredBeforeUncordon(t *testing.T) {
	ms, s := time.Millisecond, time.Second
	evs := domainEvents("ud0", map[eviction.EventType]time.Duration{
		eviction.EventDomainStarted: 500 * ms, eviction.EventPhaseStarted: 600 * ms, eviction.EventPhaseDone: 1100 * ms,
		eviction.EventDrained: 4200 * ms, eviction.EventUpgradeStarted: 4200 * ms, eviction.EventUpgradeDone: 6200 * ms,
		eviction.EventUncordoned: 6300 * ms, eviction.EventRecovered: 6400 * ms, eviction.EventDomainDone: 6400 * ms,
	}, map[string][2]time.Duration{"ns/llm-0-0": {600 * ms, 640 * ms}})
	opts := ObserveOptions{UDOf: map[string]string{"ud0-0": "ud0", "ud1-0": "ud1", "ud2-0": "ud2"},
		Workloads: []Workload{{Name: "llm", Groups: 3, MinAvailable: 2}}, From: t0}
	for _, tc := range []struct {
		name  string
		steps [][]step
		want  time.Duration
	}{
		{"healthy elsewhere at 5s, never disrupted again", [][]step{healthyGroups(3), evict(0, 0, 1*s, 4*s)}, 0},
		{"healthy elsewhere at 5s, disrupted again at 20s", [][]step{healthyGroups(3), evict(0, 0, 1*s, 4*s), evict(0, 1, 20*s, 5*s)}, 0},
		{"healthy at 14s, after the uncordon at 6.3s", [][]step{healthyGroups(3), evict(0, 0, 1*s, 13*s)}, 7700 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Analyze(evs, Observe(events(tc.steps...), opts), Delays{Terminate: 3 * s, UpgradeStep: 2 * s}, t0, 30*s)
			if len(b.Domains) != 1 {
				t.Fatalf("domains %+v, want ud0", b.Domains)
			}
			got := b.Domains[0]
			if diff := cmp.Diff([2]any{1, tc.want}, [2]any{got.Groups, got.GroupsReady}); diff != "" {
				t.Errorf("groups, GroupsReady (-want +got):\n%s", diff)
			}
		})
	}
}
