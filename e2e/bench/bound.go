package bench

import (
	"sort"
	"time"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// Delays are the times of a rollout that are configured, not measured: the
// pods' termination delay (kwok's udrain.dev/kwok-terminate-delay) and the
// upgrade step per domain. (The start-up delay is inside the recovery the
// recording measures.)
type Delays struct {
	Terminate   time.Duration `json:"terminate"`
	UpgradeStep time.Duration `json:"upgradeStep"`
}

// DomainTimes is where one domain's time went in a udrain rollout, from its
// events (the drainer's clock) and the pod recording (the harness's clock,
// the same machine).
type DomainTimes struct {
	Domain string `json:"domain"`
	Groups int    `json:"groups"`
	// Total is DomainStarted to DomainDone.
	Total time.Duration `json:"total"`
	// Prepare is DomainStarted to phase 1's start: snapshot, plan, cordon.
	Prepare time.Duration `json:"prepare"`
	// Evict is phase 1's start to phase 2's end: every eviction accepted.
	Evict time.Duration `json:"evict"`
	// EvictionRoundTrip is the median of Evicting→Evicted over the
	// domain's pods that no PDB refused.
	EvictionRoundTrip time.Duration `json:"evictionRoundTrip"`
	// WaitGone is phase 2's end to Drained: every evicted pod gone.
	WaitGone time.Duration `json:"waitGone"`
	// Upgrade is the upgrade step as run.
	Upgrade time.Duration `json:"upgrade"`
	// Uncordon is the upgrade's end (or Drained) to the last Uncordoned:
	// marking the nodes upgraded and uncordoning them.
	Uncordon time.Duration `json:"uncordon"`
	// GroupsReady is the last Uncordoned to the moment the pod recording
	// shows every group evicted from the domain healthy again (each at
	// its first healthy turn after its eviction, wherever it runs; 0 if
	// all were before the uncordon): scheduling, start-up delay, the
	// readiness-gate controller. Negative if a group did not recover in
	// the recording.
	GroupsReady time.Duration `json:"groupsReady"`
	// RecoveryLag is GroupsReady's moment to udrain's Recovered event: the
	// PDBs' status catching up and udrain seeing it.
	RecoveryLag time.Duration `json:"recoveryLag"`
	// Finish is Recovered to DomainDone.
	Finish time.Duration `json:"finish"`
	// Bound is the domain's share of the lower bound: EvictionRoundTrip +
	// the termination delay + the upgrade step + GroupsReady.
	Bound time.Duration `json:"bound"`
	// Termination is the longest time one of the domain's evicted pods
	// took from terminating to gone in the recording; BoundObserved is
	// Bound with it in place of the configured termination delay.
	Termination   time.Duration `json:"termination"`
	BoundObserved time.Duration `json:"boundObserved"`
}

// Breakdown is a udrain rollout's time against its lower bound.
type Breakdown struct {
	// Wall is the rollout's duration (Rollout's own measure, from before
	// its watches are synced to the last domain done).
	Wall time.Duration `json:"wall"`
	// Startup is the rollout's start to the first DomainStarted: watches,
	// snapshot, audit.
	Startup time.Duration `json:"startup"`
	// Bound is the sum of the domains' bounds, Ratio Wall over it;
	// BoundObserved and RatioObserved the same with the termination
	// times observed.
	Bound         time.Duration `json:"bound"`
	Ratio         float64       `json:"ratio"`
	BoundObserved time.Duration `json:"boundObserved"`
	RatioObserved float64       `json:"ratioObserved"`
	Domains       []DomainTimes `json:"domains"`
}

// Analyze splits a rollout's time per domain and computes its lower bound:
// the sum over domains of (eviction round trip + termination delay +
// upgrade step + the time from uncordon until the recording shows the
// domain's groups Ready). rolloutStart and wall are the rollout's own
// measures (eviction.RolloutResult's Started and Duration).
func Analyze(events []eviction.Event, o *Observation, d Delays, rolloutStart time.Time, wall time.Duration) Breakdown {
	b := Breakdown{Wall: wall}
	byDomain := map[string][]eviction.Event{}
	var order []string
	for _, e := range events {
		if e.Domain == "" {
			continue
		}
		if _, ok := byDomain[e.Domain]; !ok {
			order = append(order, e.Domain)
		}
		byDomain[e.Domain] = append(byDomain[e.Domain], e)
	}
	for _, name := range order {
		evs := byDomain[name]
		first := func(t eviction.EventType, phase eviction.Stage) (time.Time, bool) {
			for _, e := range evs {
				if e.Type == t && (phase == "" || e.Stage == phase) {
					return e.Time.Round(0), true
				}
			}
			return time.Time{}, false
		}
		last := func(t eviction.EventType) (time.Time, bool) {
			var at time.Time
			found := false
			for _, e := range evs {
				if e.Type == t {
					at, found = e.Time.Round(0), true
				}
			}
			return at, found
		}
		started, ok := first(eviction.EventDomainStarted, "")
		if !ok {
			continue
		}
		if len(b.Domains) == 0 {
			b.Startup = started.Sub(rolloutStart.Round(0))
		}
		dt := DomainTimes{Domain: name}
		done, _ := first(eviction.EventDomainDone, "")
		p1, _ := first(eviction.EventPhaseStarted, eviction.StagePhase1)
		p2done, _ := last(eviction.EventPhaseDone)
		drained, _ := first(eviction.EventDrained, "")
		upStart, hasUpgrade := first(eviction.EventUpgradeStarted, "")
		upDone, _ := first(eviction.EventUpgradeDone, "")
		uncordoned, ok := last(eviction.EventUncordoned)
		if !ok {
			uncordoned = drained
		}
		recovered, _ := first(eviction.EventRecovered, "")
		if done.IsZero() {
			// The domain did not finish (the rollout stopped in it):
			// count to the last event seen.
			done = evs[len(evs)-1].Time.Round(0)
		}
		dt.Total = done.Sub(started)
		dt.Prepare = p1.Sub(started)
		dt.Evict = p2done.Sub(p1)
		dt.WaitGone = drained.Sub(p2done)
		afterDrain := drained
		if hasUpgrade {
			dt.Upgrade = upDone.Sub(upStart)
			afterDrain = upDone
		}
		dt.Uncordon = uncordoned.Sub(afterDrain)
		dt.Finish = done.Sub(recovered)
		dt.EvictionRoundTrip = roundTrip(evs)

		// Each group evicted here, with its first pod seen terminating.
		groups := map[GroupKey]time.Time{}
		for _, p := range o.Evicted {
			if !p.At.Before(started) && (done.IsZero() || p.At.Before(done)) && p.Domain == name {
				if at, ok := groups[p.Group]; !ok || p.At.Before(at) {
					groups[p.Group] = p.At
				}
			}
			// The pods this drain evicted: terminating before Drained.
			if !p.At.Before(started) && !p.At.After(drained) && p.Domain == name && !p.Gone.IsZero() {
				dt.Termination = max(dt.Termination, p.Gone.Sub(p.At))
			}
		}
		dt.Groups = len(groups)
		// A group is ready again when it first turns healthy after its
		// eviction here: in its own domain after the uncordon, or, moved
		// to a domain with room (a spare, an upgraded one), maybe before
		// it, which counts as ready at the uncordon.
		ready := uncordoned
		for g, evicted := range groups {
			at, ok := o.HealthyAgain(g, evicted)
			if !ok {
				ready = time.Time{}
				break
			}
			if at.After(ready) {
				ready = at
			}
		}
		if ready.IsZero() {
			dt.GroupsReady = -1
		} else {
			dt.GroupsReady = ready.Sub(uncordoned)
			dt.RecoveryLag = recovered.Sub(ready)
		}
		dt.Bound = dt.EvictionRoundTrip + d.Terminate + d.UpgradeStep + max(dt.GroupsReady, 0)
		dt.BoundObserved = dt.Bound - d.Terminate + dt.Termination
		b.Bound += dt.Bound
		b.BoundObserved += dt.BoundObserved
		b.Domains = append(b.Domains, dt)
	}
	if b.Bound > 0 {
		b.Ratio = float64(b.Wall) / float64(b.Bound)
	}
	if b.BoundObserved > 0 {
		b.RatioObserved = float64(b.Wall) / float64(b.BoundObserved)
	}
	return b
}

// roundTrip is the median Evicting→Evicted time of the pods that were not
// refused by a PDB in between.
func roundTrip(evs []eviction.Event) time.Duration {
	sent := map[topology.PodRef]time.Time{}
	blocked := map[topology.PodRef]bool{}
	var rtts []time.Duration
	for _, e := range evs {
		if e.Pod == nil {
			continue
		}
		switch e.Type {
		case eviction.EventEvicting:
			sent[*e.Pod] = e.Time.Round(0)
		case eviction.EventBlocked, eviction.EventRetrying:
			blocked[*e.Pod] = true
		case eviction.EventEvicted:
			if t, ok := sent[*e.Pod]; ok && !blocked[*e.Pod] {
				rtts = append(rtts, e.Time.Round(0).Sub(t))
			}
		}
	}
	if len(rtts) == 0 {
		return 0
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	return rtts[len(rtts)/2]
}
