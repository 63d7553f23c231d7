package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/udrain/udrain/eviction"
)

func TestCountInFlight(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(s int, typ eviction.EventType, domain string) eviction.Event {
		return eviction.Event{Time: at(s), Type: typ, Domain: domain}
	}
	held := eviction.Event{Time: at(5), Type: eviction.EventDomainHeld, Domain: "ud2", Message: "room",
		Hold: &eviction.BlockInfo{Domain: "ud2", Reason: eviction.BlockRoom}}
	for _, tc := range []struct {
		name   string
		events []eviction.Event
		want   InFlight
	}{
		{name: "none"},
		{
			name: "one at a time, an end and a start at the same moment",
			events: []eviction.Event{
				ev(0, eviction.EventDomainStarted, "ud0"), ev(6, eviction.EventRecoveryStarted, "ud0"), ev(10, eviction.EventDomainDone, "ud0"),
				ev(10, eviction.EventDomainStarted, "ud1"), ev(16, eviction.EventRecoveryStarted, "ud1"), ev(20, eviction.EventDomainDone, "ud1"),
			},
			want: InFlight{Most: 1, Mean: 1, MostClosed: 1, MeanClosed: 0.6},
		},
		{
			name: "the next starts in the recovery of the first, one held back",
			events: []eviction.Event{
				ev(20, eviction.EventDomainDone, "ud1"), held, // out of order
				ev(0, eviction.EventDomainStarted, "ud0"), ev(6, eviction.EventRecoveryStarted, "ud0"), ev(10, eviction.EventDomainDone, "ud0"),
				ev(6, eviction.EventDomainStarted, "ud1"), ev(16, eviction.EventRecoveryStarted, "ud1"),
			},
			// in flight: 1 for 6 s, 2 for 4 s, 1 for 10 s: 24 / 20;
			// closed: ud0 0-6, ud1 6-16: 16 s of 20.
			want: InFlight{Most: 2, Mean: 1.2, MostClosed: 1, MeanClosed: 0.8,
				Held: map[eviction.BlockReason]int{eviction.BlockRoom: 1}, HeldExamples: []string{"ud2: room"}},
		},
		{
			name: "a domain upgraded by an earlier run still recovers",
			events: []eviction.Event{
				ev(0, eviction.EventDomainStarted, "ud0"), ev(0, eviction.EventDomainSkipped, "ud0"), ev(1, eviction.EventRecoveryStarted, "ud0"),
				ev(1, eviction.EventDomainStarted, "ud1"), ev(2, eviction.EventDomainDone, "ud0"), ev(9, eviction.EventRecoveryStarted, "ud1"),
				ev(10, eviction.EventDomainDone, "ud1"),
			},
			want: InFlight{Most: 2, Mean: 1.1, MostClosed: 1, MeanClosed: 0.9},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CountInFlight(tc.events)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
