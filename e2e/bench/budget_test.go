package bench

import (
	"testing"
	"time"
)

func TestFirstAllowed(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	statuses := []BudgetStatus{
		{At: at(0), DisruptionsAllowed: 1},
		{At: at(100), DisruptionsAllowed: 0}, // the held group turns unhealthy
		{At: at(30000), DisruptionsAllowed: 0, CurrentHealthy: 2},
		{At: at(30250), DisruptionsAllowed: 1, CurrentHealthy: 3}, // freed
		{At: at(30400), DisruptionsAllowed: 0},                    // the leader evicted
	}
	for _, tc := range []struct {
		name  string
		after time.Time
		want  time.Time
		ok    bool
	}{
		{"freed after the release", at(30000), at(30250), true},
		{"allowing from before the block", at(0), at(0), true},
		{"nothing after", at(30300), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := firstAllowed(statuses, tc.after)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("firstAllowed = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{ms(30, 10, 20), 0.5, 20 * time.Millisecond},
		{ms(10, 20, 30, 40, 50, 60, 70, 80, 90, 100), 0.95, 100 * time.Millisecond}, // nearest rank: the 10th of 10
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21), 0.95, 20 * time.Millisecond},
		{nil, 0.95, 0},
	} {
		if got := percentile(tc.ds, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.ds, tc.p, got, tc.want)
		}
	}
}

func TestWorkersBeforeLeaders(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	pod := func(domain string, leader bool, s int) EvictedPod {
		return EvictedPod{Domain: domain, Leader: leader, At: at(s)}
	}
	for _, tc := range []struct {
		name    string
		evicted []EvictedPod
		want    int
	}{
		{"leaders first in every domain", []EvictedPod{pod("ud0", true, 0), pod("ud0", true, 1), pod("ud0", false, 2), pod("ud1", true, 10), pod("ud1", false, 11)}, 0},
		// kubectl drain: a worker next to a refused leader goes first.
		{"workers while a leader is refused", []EvictedPod{pod("ud0", true, 0), pod("ud0", false, 1), pod("ud0", false, 2), pod("ud0", true, 30), pod("ud0", false, 31)}, 2},
		{"a later domain's leader does not count", []EvictedPod{pod("ud0", false, 0), pod("ud1", true, 5)}, 0},
		{"no leader evicted", []EvictedPod{pod("ud0", false, 0)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Observation{Evicted: tc.evicted}
			if got := o.WorkersBeforeLeaders(); got != tc.want {
				t.Errorf("WorkersBeforeLeaders() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEvictedBeforeLeaders(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	pod := func(name string, leader bool, s int) EvictedPod {
		return EvictedPod{Name: name, Domain: "ud0", Leader: leader, At: at(s)}
	}
	for _, tc := range []struct {
		name      string
		evicted   []EvictedPod
		evictions map[string][]time.Time
		want      int
	}{
		{"leaders first", []EvictedPod{pod("l0", true, 1), pod("w0", false, 3)},
			map[string][]time.Time{"l0": {at(0)}, "w0": {at(2)}}, 0},
		{"a worker evicted before a leader", []EvictedPod{pod("w0", false, 1), pod("l0", true, 3)},
			map[string][]time.Time{"l0": {at(2)}, "w0": {at(0)}}, 1},
		// A controller's deletion (a group's Pending replacement) is not
		// the drainer's order.
		{"a worker deleted, not evicted", []EvictedPod{pod("w0", false, 1), pod("l0", true, 3)},
			map[string][]time.Time{"l0": {at(2)}}, 0},
		// Pods of a StatefulSet keep their names: an eviction of an
		// earlier pod of that name does not make a later one evicted.
		{"an eviction of the name long before", []EvictedPod{pod("w0", false, 100), pod("l0", true, 103)},
			map[string][]time.Time{"l0": {at(102)}, "w0": {at(0)}}, 0},
		{"an eviction after it was seen terminating", []EvictedPod{pod("w0", false, 1), pod("l0", true, 3)},
			map[string][]time.Time{"l0": {at(2)}, "w0": {at(2)}}, 0},
		{"a leader deleted, not evicted, sets no bound", []EvictedPod{pod("w0", false, 1), pod("l0", true, 3)},
			map[string][]time.Time{"w0": {at(0)}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Observation{Evicted: tc.evicted}
			if got := o.EvictedBeforeLeaders(tc.evictions); got != tc.want {
				t.Errorf("EvictedBeforeLeaders() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLeadersFirst(t *testing.T) {
	zero, one := 0, 1
	for _, tc := range []struct {
		name string
		s    Safety
		want bool
	}{
		{"no audit log: every pod seen terminating", Safety{WorkersBeforeLeaders: 2}, false},
		{"no audit log, none", Safety{}, true},
		{"deleted by others, none evicted", Safety{WorkersBeforeLeaders: 90, EvictedBeforeLeaders: &zero}, true},
		{"one evicted", Safety{WorkersBeforeLeaders: 1, EvictedBeforeLeaders: &one}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.LeadersFirst(); got != tc.want {
				t.Errorf("LeadersFirst() = %v, want %v", got, tc.want)
			}
		})
	}
}
