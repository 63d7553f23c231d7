package eviction

import (
	"context"
	"sync"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// GroupDowntime is how long a group that a rollout disrupted was down:
// from the eviction of its first pod until package health found it
// healthy again, wherever it runs then (its evicted pods gone from the
// drained domain first: a new leader beside old workers is no recovery).
type GroupDowntime struct {
	Group topology.GroupID `json:"group"`
	// From is the domain it was evicted from; To the domain its leader
	// (or, without one, its first member) runs in once healthy: From
	// again after the upgrade, or an upgraded domain it found room in.
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Evicted is when its first pod was evicted; Healthy when it was
	// first seen healthy again (nil: not yet).
	Evicted time.Time  `json:"evicted"`
	Healthy *time.Time `json:"healthy,omitempty"`
	// Downtime is Healthy less Evicted (zero while not healthy).
	Downtime udrain.Seconds `json:"downtimeSeconds"`
}

// downtimes follows the groups a domain's drain disrupts, from their first
// eviction until they are healthy again: an evaluation of the groups still
// down on each change of the view (at most every recoveryEvery), during
// the drain, the upgrade step and the recovery alike, so that a group that
// found room in an upgraded domain is seen healthy when it is, not when
// the domain it left is done.
type downtimes struct {
	v        *view
	layout   *topology.Layout
	from     string
	groupers []topology.Grouper
	every    time.Duration
	now      func() time.Time

	mu      sync.Mutex
	byPod   map[topology.PodRef]topology.GroupID
	order   []topology.GroupID
	groups  map[topology.GroupID]*groupDown
	drained bool
}

type groupDown struct {
	want             wantedGroup
	planned, evicted int
	evictedAt        time.Time
	healthyAt        time.Time
	to               string
}

func newDowntimes(d *Drainer, v *view, layout *topology.Layout, plan *Plan, target recoveryTarget, groupers []topology.Grouper) *downtimes {
	t := &downtimes{v: v, layout: layout, from: plan.Domain, groupers: groupers, every: d.s.recoveryEvery, now: d.s.Clock.Now,
		byPod: map[topology.PodRef]topology.GroupID{}, groups: map[topology.GroupID]*groupDown{}}
	for _, w := range target.groups {
		t.groups[w.id] = &groupDown{want: w}
	}
	for _, p := range plan.Pods() {
		if p.Group == nil || t.groups[*p.Group] == nil {
			continue
		}
		t.byPod[p.PodRef] = *p.Group
		t.groups[*p.Group].planned++
	}
	return t
}

// observe takes the drain's events: an Evicted event starts its group's
// downtime.
func (t *downtimes) observe(e Event) {
	if e.Type != EventEvicted || e.Pod == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.byPod[*e.Pod]
	if !ok {
		return
	}
	g := t.groups[id]
	if g.evictedAt.IsZero() {
		g.evictedAt = e.Time
		t.order = append(t.order, id)
	}
	g.evicted++
}

// drainDone says every evicted pod of the domain is gone.
func (t *downtimes) drainDone() {
	t.mu.Lock()
	t.drained = true
	t.mu.Unlock()
}

// down returns the groups evicted, all of whose pods in the domain are
// gone or evicted, not yet seen healthy.
func (t *downtimes) down() []wantedGroup {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []wantedGroup
	for _, id := range t.order {
		g := t.groups[id]
		if g.healthyAt.IsZero() && (t.drained || g.evicted >= g.planned) {
			out = append(out, g.want)
		}
	}
	return out
}

// evaluate judges the groups that are down now.
func (t *downtimes) evaluate(memo *podcache.Memo) {
	wants := t.down()
	if len(wants) == 0 {
		return
	}
	now := t.now()
	byNS := map[string][]wantedGroup{}
	for _, w := range wants {
		byNS[w.id.Namespace] = append(byNS[w.id.Namespace], w)
	}
	for ns, ws := range byNS {
		found := t.v.groupsIn(ns, ws, t.groupers, memo)
		for _, w := range ws {
			g := found[w.id]
			if g == nil || !mayBeHealthy(g, w.size) || !health.Evaluate(g, health.Options{MinSize: w.size, RequireLeader: w.leader != ""}).Healthy {
				continue
			}
			t.healthy(w.id, now, t.domainOf(g))
		}
	}
}

// mayBeHealthy is false when health.Evaluate would find g unhealthy with
// size as its MinSize for a reason seen at a glance: a member missing, or
// one not healthy (health.MemberHealthy: terminating, not running or not
// Ready), judged up to the first. The groups a downtime follows
// are down most of the time, and Evaluate words the why of each member.
func mayBeHealthy(g *topology.Group, size int) bool {
	if len(g.Members) == 0 || len(g.Members) < max(g.ExpectedSize(), size) {
		return false
	}
	for _, m := range g.Members {
		if !health.MemberHealthy(m) {
			return false
		}
	}
	return true
}

func (t *downtimes) healthy(id topology.GroupID, at time.Time, to string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[id]; g != nil && g.healthyAt.IsZero() && !g.evictedAt.IsZero() {
		g.healthyAt, g.to = at, to
	}
}

// domainOf is the domain of the group's leader, or of its first member
// that runs somewhere.
func (t *downtimes) domainOf(g *topology.Group) string {
	if g.Leader != nil {
		if d, ok := t.layout.DomainOf(g.Leader.Spec.NodeName); ok {
			return d
		}
	}
	for _, m := range g.Members {
		if d, ok := t.layout.DomainOf(m.Spec.NodeName); ok {
			return d
		}
	}
	return ""
}

// follow evaluates the groups that are down on every change of the view
// until ctx ends.
func (t *downtimes) follow(ctx context.Context) {
	memo := podcache.NewMemo()
	for {
		changed := t.v.Changed()
		t.evaluate(memo)
		memo.Turn()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		pause := time.NewTimer(t.every)
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

// result returns the downtime of every group evicted, in the order of
// their first eviction; recovered (the recovery's last judgment) marks
// healthy at its end the groups the evaluations had not seen healthy yet.
func (t *downtimes) result(recovered *health.DomainStatus) []GroupDowntime {
	if recovered != nil && recovered.Healthy {
		t.mu.Lock()
		drained := t.drained
		t.mu.Unlock()
		if drained {
			t.evaluate(nil)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]GroupDowntime, 0, len(t.order))
	for _, id := range t.order {
		g := t.groups[id]
		gd := GroupDowntime{Group: id, From: t.from, To: g.to, Evicted: g.evictedAt}
		if !g.healthyAt.IsZero() {
			at := g.healthyAt
			gd.Healthy, gd.Downtime = &at, udrain.Seconds(at.Sub(g.evictedAt))
		}
		out = append(out, gd)
	}
	return out
}
