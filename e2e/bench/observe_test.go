package bench

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/udrain/udrain/e2e/fixture"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// podState is a pod of workload "llm" with groups of 2 pods (a leader and
// one worker), on node "ud<group>-0".
type podState struct {
	group, worker int
	gen           int // the pod's incarnation: a new UID
	ready         bool
	terminating   bool
	unscheduled   bool
}

func (s podState) pod() *corev1.Pod {
	name := fmt.Sprintf("llm-%d-0", s.group)
	if s.worker > 0 {
		name = fmt.Sprintf("llm-%d-w-%d", s.group, s.worker)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID(fmt.Sprintf("%s-%d", name, s.gen)),
			Labels: map[string]string{fixture.LWSNameLabel: "llm", fixture.LWSGroupIndexLabel: fmt.Sprint(s.group),
				fixture.LWSWorkerIndexLabel: fmt.Sprint(s.worker)},
			Annotations: map[string]string{fixture.LWSSizeAnnotation: "2"},
		},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("ud%d-0", s.group)},
	}
	if s.unscheduled {
		p.Spec.NodeName = ""
	}
	status := corev1.ConditionFalse
	if s.ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: status}, {Type: corev1.PodReady, Status: status}}
	if s.terminating {
		p.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return p
}

type step struct {
	at  time.Duration // after t0
	typ watch.EventType
	pod podState
}

// healthyGroups are the events of n healthy groups at t0.
func healthyGroups(n int) []step {
	var out []step
	for g := range n {
		out = append(out, step{0, watch.Added, podState{group: g, ready: true}}, step{0, watch.Added, podState{group: g, worker: 1, ready: true}})
	}
	return out
}

// evict is group g's pods of incarnation gen evicted at `at` and
// replaced, healthy `down` later.
func evict(g, gen int, at, down time.Duration) []step {
	ms := time.Millisecond
	return []step{
		{at, watch.Modified, podState{group: g, gen: gen, ready: true, terminating: true}},
		{at + ms, watch.Modified, podState{group: g, worker: 1, gen: gen, ready: true, terminating: true}},
		{at + 2*ms, watch.Deleted, podState{group: g, gen: gen, ready: true, terminating: true}},
		{at + 3*ms, watch.Deleted, podState{group: g, worker: 1, gen: gen, ready: true, terminating: true}},
		{at + 4*ms, watch.Added, podState{group: g, gen: gen + 1, unscheduled: true}},
		{at + 5*ms, watch.Added, podState{group: g, worker: 1, gen: gen + 1}},
		{at + down, watch.Modified, podState{group: g, gen: gen + 1, ready: true}},
		{at + down, watch.Modified, podState{group: g, worker: 1, gen: gen + 1, ready: true}},
	}
}

// flap is group g's leader unready from `at` for `d`.
func flap(g int, at, d time.Duration) []step {
	return []step{
		{at, watch.Modified, podState{group: g}},
		{at + d, watch.Modified, podState{group: g, ready: true}},
	}
}

func events(steps ...[]step) []fixture.PodEvent {
	var out []fixture.PodEvent
	for _, ss := range steps {
		for _, s := range ss {
			out = append(out, fixture.PodEvent{At: t0.Add(s.at), Type: s.typ, Pod: s.pod.pod()})
		}
	}
	// The recorder's order: arrival.
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func TestObserve(t *testing.T) {
	s := time.Second
	udOf := map[string]string{"ud0-0": "ud0", "ud1-0": "ud1", "ud2-0": "ud2"}
	w := []Workload{{Name: "llm", Groups: 3, MinAvailable: 2}}
	g := func(i int) GroupKey { return GroupKey{Workload: "llm", Index: i} }
	type want struct {
		Disruptions, Glitches     map[GroupKey]int
		MinHealthy, MinHealthyRaw int
		Evicted                   int
		Margin, MarginRaw         int
		EachOnce                  bool
	}
	for _, tc := range []struct {
		name     string
		events   []fixture.PodEvent
		from     time.Duration
		until    time.Duration
		glitch   time.Duration
		want     want
		recovery map[GroupKey]time.Duration // HealthyAgain after `from`
	}{
		{
			name:   "a rollout: one group at a time",
			events: events(healthyGroups(3), evict(0, 0, 10*s, 5*s), evict(1, 0, 20*s, 5*s), evict(2, 0, 30*s, 5*s)),
			from:   5 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1, g(1): 1, g(2): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 2, MinHealthyRaw: 2, Evicted: 6, EachOnce: true},
			recovery: map[GroupKey]time.Duration{g(0): 15 * s, g(1): 25 * s, g(2): 35 * s},
		},
		{
			name:   "two groups down at once, one twice",
			events: events(healthyGroups(3), evict(0, 0, 10*s, 5*s), evict(1, 0, 12*s, 5*s), evict(0, 1, 20*s, 5*s)),
			from:   5 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 2, g(1): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 1, MinHealthyRaw: 1, Evicted: 6, Margin: -1, MarginRaw: -1},
		},
		{
			name:   "a short readiness flip is a glitch, not a disruption",
			events: events(healthyGroups(3), evict(0, 0, 10*s, 5*s), flap(1, 12*s, 15*time.Millisecond)),
			from:   5 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1}, Glitches: map[GroupKey]int{g(1): 1},
				MinHealthy: 2, MinHealthyRaw: 1, Evicted: 2, MarginRaw: -1},
		},
		{
			name:   "every dip counts with glitches off",
			events: events(healthyGroups(3), evict(0, 0, 10*s, 5*s), flap(1, 12*s, 15*time.Millisecond)),
			from:   5 * s, glitch: -1,
			want: want{Disruptions: map[GroupKey]int{g(0): 1, g(1): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 1, MinHealthyRaw: 1, Evicted: 2, Margin: -1, MarginRaw: -1},
		},
		{
			name:   "a long outage is not a glitch",
			events: events(healthyGroups(3), evict(0, 0, 10*s, 5*s), flap(1, 12*s, 2*s)),
			from:   5 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1, g(1): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 1, MinHealthyRaw: 1, Evicted: 2, Margin: -1, MarginRaw: -1},
		},
		{
			name:   "a group unhealthy from before the window counts as down, not as disrupted",
			events: events(healthyGroups(3), flap(1, 2*s, 30*s), evict(0, 0, 40*s, 5*s)),
			from:   5 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 2, MinHealthyRaw: 2, Evicted: 2},
		},
		{
			name:   "a group evicted while another is held down breaks the budget",
			events: events(healthyGroups(3), flap(1, 2*s, 30*s), evict(0, 0, 10*s, 5*s)),
			from:   5 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 1, MinHealthyRaw: 1, Evicted: 2, Margin: -1, MarginRaw: -1},
		},
		{
			name:   "events after until are not observed",
			events: events(healthyGroups(3), evict(0, 0, 10*s, 5*s), evict(1, 0, 20*s, 5*s)),
			from:   5 * s, until: 18 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 2, MinHealthyRaw: 2, Evicted: 2},
		},
		{
			name:   "a group still down at the end is disrupted",
			events: events(healthyGroups(3), evict(0, 0, 10*s, time.Hour)),
			from:   5 * s, until: 20 * s,
			want: want{Disruptions: map[GroupKey]int{g(0): 1}, Glitches: map[GroupKey]int{},
				MinHealthy: 2, MinHealthyRaw: 2, Evicted: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ObserveOptions{UDOf: udOf, Workloads: w, From: t0.Add(tc.from), GlitchBelow: tc.glitch}
			if tc.until > 0 {
				opts.Until = t0.Add(tc.until)
			}
			o := Observe(tc.events, opts)
			sf := o.Safety(AllGroups(w))
			got := want{Disruptions: o.Disruptions, Glitches: o.Glitches, MinHealthy: o.Workloads[0].MinHealthy,
				MinHealthyRaw: o.Workloads[0].MinHealthyRaw, Evicted: len(o.Evicted), Margin: sf.MinMargin, MarginRaw: sf.MinMarginRaw, EachOnce: sf.EachOnce()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for grp, after := range tc.recovery {
				at, ok := o.HealthyAgain(grp, opts.From)
				if !ok || !at.Equal(t0.Add(after)) {
					t.Errorf("group %s healthy again at %v (%v), want %v", grp, at, ok, t0.Add(after))
				}
			}
			if tc.name == "a rollout: one group at a time" {
				if diff := cmp.Diff(map[GroupKey]string{g(0): "ud0", g(1): "ud1", g(2): "ud2"}, o.Domain); diff != "" {
					t.Errorf("domains (-want +got):\n%s", diff)
				}
			}
		})
	}
}
