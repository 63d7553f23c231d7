package bench

import (
	"slices"
	"time"

	"github.com/udrain/udrain/eviction"
)

// InFlight is how many domains a rollout had in flight at once, from its
// events: in flight from DomainStarted to DomainDone, as the library
// counts them (a domain an earlier run upgraded, DomainSkipped, too: it
// still recovers); closed from DomainStarted to RecoveryStarted
// (cordoned: draining or in its upgrade step).
type InFlight struct {
	// Most and Mean are the domains in flight: the most at once, and the
	// mean over the time from the first start to the last end.
	Most int     `json:"most"`
	Mean float64 `json:"mean"`
	// MostClosed and MeanClosed are the same for the domains closed (the
	// mean over the same span).
	MostClosed int     `json:"mostClosed"`
	MeanClosed float64 `json:"meanClosed"`
	// Held counts the DomainHeld events by reason (sent when the domain
	// held back or the reason changes); HeldExamples are the first few
	// distinct messages.
	Held         map[eviction.BlockReason]int `json:"held,omitempty"`
	HeldExamples []string                     `json:"heldExamples,omitempty"`
}

// edge is a domain entering (+1) or leaving (−1) a state at a moment.
type edge struct {
	at    time.Time
	delta int
}

// CountInFlight reads a rollout's events (in any order) for [InFlight].
func CountInFlight(events []eviction.Event) InFlight {
	var open, closed []edge
	var out InFlight
	for _, e := range events {
		at := e.Time.Round(0)
		switch e.Type {
		case eviction.EventDomainStarted:
			open = append(open, edge{at, 1})
			closed = append(closed, edge{at, 1})
		case eviction.EventDomainDone:
			open = append(open, edge{at, -1})
		case eviction.EventRecoveryStarted:
			closed = append(closed, edge{at, -1})
		case eviction.EventDomainHeld:
			if e.Hold == nil {
				continue
			}
			if out.Held == nil {
				out.Held = map[eviction.BlockReason]int{}
			}
			out.Held[e.Hold.Reason]++
			msg := e.Domain + ": " + e.Message
			if len(out.HeldExamples) < 5 && !slices.Contains(out.HeldExamples, msg) {
				out.HeldExamples = append(out.HeldExamples, msg)
			}
		}
	}
	var span time.Duration
	if len(open) > 0 {
		sortEdges(open)
		span = open[len(open)-1].at.Sub(open[0].at)
	}
	sortEdges(closed)
	out.Most, out.Mean = overlap(open, span)
	out.MostClosed, out.MeanClosed = overlap(closed, span)
	return out
}

// sortEdges sorts edges by time; at one moment, ends before starts (a
// domain that ends as another starts does not overlap it).
func sortEdges(edges []edge) {
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
}

// overlap is the most intervals open at once among sorted edges, and
// their mean count over span.
func overlap(edges []edge, span time.Duration) (int, float64) {
	most, n := 0, 0
	var area float64
	for i, e := range edges {
		if i > 0 {
			area += float64(n) * e.at.Sub(edges[i-1].at).Seconds()
		}
		n += e.delta
		most = max(most, n)
	}
	if span <= 0 {
		return most, 0
	}
	return most, area / span.Seconds()
}
