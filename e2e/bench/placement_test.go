package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
)

func TestDomainsReached(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	events := []eviction.Event{
		{Type: eviction.EventDomainStarted, Domain: "ud5", Time: at(1)},
		{Type: eviction.EventDrained, Domain: "ud5", Time: at(2)},
		{Type: eviction.EventDomainStarted, Domain: "ud0", Time: at(10)},
		{Type: eviction.EventDomainStarted, Domain: "ud0", Time: at(20)}, // a retry: the first counts
		{Type: eviction.EventDomainStarted, Time: at(30)},                // no domain
	}
	want := map[string]time.Time{"ud5": at(1), "ud0": at(10)}
	if diff := cmp.Diff(want, DomainsReached(events)); diff != "" {
		t.Errorf("reached (-want +got):\n%s", diff)
	}
}

func TestPlacedOnPending(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	udOf := map[string]string{"n0": "ud0", "n1": "ud1", "n2": "ud2", "s0": "ud3"}
	pod := func(uid, name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	ev := func(s int, typ watch.EventType, p *corev1.Pod) fixture.PodEvent {
		return fixture.PodEvent{At: at(s), Type: typ, Pod: p}
	}
	// The rollout starts at 10 s: the spare ud3 at 10, ud0 at 20, ud1 at
	// 40; ud2 is never reached.
	from := at(10)
	reached := map[string]time.Time{"ud3": at(10), "ud0": at(20), "ud1": at(40)}
	for _, tc := range []struct {
		name   string
		events []fixture.PodEvent
		want   []PendingPlacement
	}{
		{"placed before the rollout: not counted", []fixture.PodEvent{ev(0, watch.Added, pod("a", "a", "n1"))}, nil},
		{"on the spare once reached", []fixture.PodEvent{ev(25, watch.Added, pod("b", "b", "s0"))}, nil},
		{"not bound: no placement", []fixture.PodEvent{ev(25, watch.Added, pod("c", "c", ""))}, nil},
		{
			"bound later, on a pending domain",
			[]fixture.PodEvent{ev(25, watch.Added, pod("d", "d", "")), ev(26, watch.Modified, pod("d", "d", "n1")), ev(27, watch.Modified, pod("d", "d", "n1"))},
			[]PendingPlacement{{Pod: "ns/d", Node: "n1", Domain: "ud1", At: at(26)}},
		},
		{
			"on an upgraded domain, on one never reached, on one reached later",
			[]fixture.PodEvent{ev(30, watch.Added, pod("e", "e", "n0")), ev(31, watch.Added, pod("f", "f", "n2")), ev(41, watch.Added, pod("g", "g", "n1"))},
			[]PendingPlacement{{Pod: "ns/f", Node: "n2", Domain: "ud2", At: at(31)}},
		},
		{
			"the same pod counted once; its deletion is no placement",
			[]fixture.PodEvent{ev(5, watch.Added, pod("h", "h", "n1")), ev(30, watch.Deleted, pod("h", "h", "n1")), ev(31, watch.Added, pod("i", "h", "n2")), ev(32, watch.Deleted, pod("i", "h", "n2"))},
			[]PendingPlacement{{Pod: "ns/h", Node: "n2", Domain: "ud2", At: at(31)}},
		},
		{"at the very moment its domain is reached: upgraded", []fixture.PodEvent{ev(20, watch.Added, pod("j", "j", "n0"))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PlacedOnPending(tc.events, udOf, reached, from)); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
		})
	}
	p := PendingPlacement{Pod: "ns/f", Node: "n2", Domain: "ud2", At: at(31)}
	if got, want := p.String(), "ns/f on n2 (ud2) at 10:00:31.000"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
