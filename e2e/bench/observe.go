package bench

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/udrain/udrain/e2e/fixture"
)

// Workload is one LeaderWorkerSet-like workload as the observation needs it:
// its name (the LWS name label), its number of groups, and the minAvailable
// of the PDB over its leaders.
type Workload struct {
	Name         string `json:"name"`
	Groups       int    `json:"groups"`
	MinAvailable int    `json:"minAvailable"`
}

// GroupKey names a group: its workload and group index.
type GroupKey struct {
	Workload string `json:"workload"`
	Index    int    `json:"index"`
}

func (k GroupKey) String() string { return fmt.Sprintf("%s/%d", k.Workload, k.Index) }

// Transition is a group turning unhealthy or healthy again.
type Transition struct {
	At      time.Time `json:"at"`
	Group   GroupKey  `json:"group"`
	Healthy bool      `json:"healthy"`
	// Lost, on a turn to healthy, says whether the group lost a member
	// (deleted or terminating) while it was unhealthy; Glitch whether that
	// unhealthy stretch was a glitch (see [ObserveOptions.GlitchBelow]).
	Lost   bool `json:"lost,omitempty"`
	Glitch bool `json:"glitch,omitempty"`
}

// EvictedPod is a scheduled pod first seen terminating in the observed
// window.
type EvictedPod struct {
	UID    types.UID `json:"uid"`
	Name   string    `json:"name"`
	Node   string    `json:"node"`
	Domain string    `json:"domain"`
	Group  GroupKey  `json:"group"`
	Leader bool      `json:"leader"`
	// At is when it was first seen terminating; Gone when it was deleted
	// (zero if not in the window).
	At   time.Time `json:"at"`
	Gone time.Time `json:"gone,omitempty"`
}

// WorkloadSafety is how low one workload's healthy groups went.
type WorkloadSafety struct {
	Workload
	// MinHealthy is the fewest healthy groups at any recorded moment of the
	// window, glitches not counted as unhealthy; MinHealthyAt when that was
	// first seen. MinHealthyRaw counts glitches too.
	MinHealthy    int       `json:"minHealthy"`
	MinHealthyAt  time.Time `json:"minHealthyAt"`
	MinHealthyRaw int       `json:"minHealthyRaw"`
}

// DefaultGlitchBelow is the longest unhealthy stretch without a lost
// member that counts as a glitch.
const DefaultGlitchBelow = time.Second

// ObserveOptions says what to observe.
type ObserveOptions struct {
	// UDOf maps node names to upgrade domains.
	UDOf map[string]string
	// Workloads are the workloads whose groups are observed.
	Workloads []Workload
	// From and Until bound the window; a zero Until means to the end.
	From, Until time.Time
	// GlitchBelow: a group that turns unhealthy without losing a member
	// (none deleted or terminating) and is healthy again within less than
	// this is a glitch, not a disruption. kwok's stage controller makes
	// such glitches: it keys its delayed jobs by namespace/name and
	// applies a stale one now and then (a Ready condition computed from an
	// old snapshot, flipped back milliseconds later), which no kubelet
	// does. 0 means DefaultGlitchBelow; negative counts every dip.
	GlitchBelow time.Duration
}

// Observation is what a pod recording shows about a stretch of time: the
// groups' transitions, the disruptions per group, the fewest healthy groups
// per workload, and the pods evicted.
type Observation struct {
	From, Until time.Time
	// Disruptions counts, per group, its turns from healthy to unhealthy
	// that were not glitches; Glitches the others.
	Disruptions map[GroupKey]int
	Glitches    map[GroupKey]int
	// Domain is the upgrade domain of each group's leader at the start.
	Domain      map[GroupKey]string
	Workloads   []WorkloadSafety
	Transitions []Transition
	Evicted     []EvictedPod
}

// Observe replays recorded pod events (in arrival order) over the window.
// A group is healthy as [fixture.GroupStatus] says: whole, every member's
// containers ready, its leader Ready. Only the groups of the named
// workloads are observed; a workload's groups that have no pod count as
// unhealthy.
func Observe(events []fixture.PodEvent, opts ObserveOptions) *Observation {
	from, until := opts.From.Round(0), opts.Until.Round(0)
	glitchBelow := opts.GlitchBelow
	if glitchBelow == 0 {
		glitchBelow = DefaultGlitchBelow
	}
	o := &Observation{From: from, Until: until, Disruptions: map[GroupKey]int{}, Glitches: map[GroupKey]int{}, Domain: map[GroupKey]string{}}
	byName := map[string]int{}
	for i, w := range opts.Workloads {
		byName[w.Name] = i
		o.Workloads = append(o.Workloads, WorkloadSafety{Workload: w})
	}
	members := map[GroupKey]map[types.UID]*corev1.Pod{}
	seen := map[types.UID]bool{}
	evictedAt := map[types.UID]int{}

	// Pass 1: each group's unhealthy stretches, and the evicted pods.
	var stretches []*stretch
	open := map[GroupKey]*stretch{}
	healthy := map[GroupKey]bool{}
	started := false
	start := func() {
		started = true
		for k, ms := range members {
			for _, p := range ms {
				if p.Labels[fixture.LWSWorkerIndexLabel] == "0" && p.DeletionTimestamp == nil {
					o.Domain[k] = opts.UDOf[p.Spec.NodeName]
				}
			}
		}
	}
	for _, e := range events {
		at := e.At.Round(0)
		if !until.IsZero() && !at.Before(until) {
			break
		}
		if !started && !at.Before(from) {
			start()
		}
		key, ok := groupOf(e.Pod)
		if _, known := byName[key.Workload]; !ok || !known {
			continue
		}
		if e.Type == watch.Deleted {
			delete(members[key], e.Pod.UID)
			if i, ok := evictedAt[e.Pod.UID]; ok {
				o.Evicted[i].Gone = at
			}
		} else {
			if members[key] == nil {
				members[key] = map[types.UID]*corev1.Pod{}
			}
			members[key][e.Pod.UID] = e.Pod
			if started && e.Pod.DeletionTimestamp != nil && e.Pod.Spec.NodeName != "" && !seen[e.Pod.UID] {
				seen[e.Pod.UID] = true
				evictedAt[e.Pod.UID] = len(o.Evicted)
				o.Evicted = append(o.Evicted, EvictedPod{UID: e.Pod.UID, Name: e.Pod.Name, Node: e.Pod.Spec.NodeName,
					Domain: opts.UDOf[e.Pod.Spec.NodeName], Group: key, Leader: e.Pod.Labels[fixture.LWSWorkerIndexLabel] == "0", At: at})
			}
		}
		if _, ok := healthy[key]; !ok {
			// A new group: unhealthy until it is whole.
			healthy[key] = false
			s := &stretch{group: key, start: at, before: !started, created: true}
			open[key] = s
			stretches = append(stretches, s)
		}
		st := groupStatus(members[key], key)
		now := st.Healthy()
		if s := open[key]; s != nil && st.Members < st.Size && !s.created {
			s.lost = true
		}
		if now == healthy[key] {
			continue
		}
		healthy[key] = now
		if !now {
			s := &stretch{group: key, start: at, lost: st.Members < st.Size, before: !started}
			open[key] = s
			stretches = append(stretches, s)
			continue
		}
		s := open[key]
		delete(open, key)
		s.end = at
		glitch := s.glitch(glitchBelow)
		if !s.before && !s.created {
			o.Transitions = append(o.Transitions, Transition{At: s.start, Group: key})
			if glitch {
				o.Glitches[key]++
			} else {
				o.Disruptions[key]++
			}
		}
		if started {
			o.Transitions = append(o.Transitions, Transition{At: at, Group: key, Healthy: true, Lost: s.lost, Glitch: glitch})
		}
	}
	if !started {
		start()
	}
	for _, s := range open {
		if !s.before && !s.created {
			o.Transitions = append(o.Transitions, Transition{At: s.start, Group: s.group})
			o.Disruptions[s.group]++
		}
	}
	sort.SliceStable(o.Transitions, func(i, j int) bool { return o.Transitions[i].At.Before(o.Transitions[j].At) })

	// Pass 2: the fewest healthy groups per workload, with and without
	// the glitches.
	for wi := range o.Workloads {
		w := &o.Workloads[wi]
		type step struct {
			at     time.Time
			delta  int
			glitch bool
		}
		var steps []step
		down, downRaw := 0, 0
		for _, s := range stretches {
			if byName[s.group.Workload] != wi {
				continue
			}
			glitch := s.glitch(glitchBelow)
			if s.before {
				downRaw++
				if !glitch {
					down++
				}
			} else {
				steps = append(steps, step{s.start, -1, glitch})
			}
			if !s.end.IsZero() {
				if s.before && s.end.Before(from) {
					downRaw--
					if !glitch {
						down--
					}
					continue
				}
				steps = append(steps, step{s.end, +1, glitch})
			}
		}
		// Groups that never had a pod are unhealthy throughout.
		present := map[GroupKey]bool{}
		for _, s := range stretches {
			present[s.group] = true
		}
		for k := range members {
			present[k] = true
		}
		missing := 0
		for g := range w.Groups {
			if !present[GroupKey{Workload: w.Name, Index: g}] {
				missing++
			}
		}
		healthyNow, healthyRaw := w.Groups-missing-down, w.Groups-missing-downRaw
		w.MinHealthy, w.MinHealthyAt, w.MinHealthyRaw = healthyNow, from, healthyRaw
		sort.SliceStable(steps, func(i, j int) bool {
			if !steps[i].at.Equal(steps[j].at) {
				return steps[i].at.Before(steps[j].at)
			}
			return steps[i].delta > steps[j].delta // recoveries first at the same instant
		})
		for _, st := range steps {
			healthyRaw += st.delta
			w.MinHealthyRaw = min(w.MinHealthyRaw, healthyRaw)
			if st.glitch {
				continue
			}
			healthyNow += st.delta
			if healthyNow < w.MinHealthy {
				w.MinHealthy, w.MinHealthyAt = healthyNow, st.at
			}
		}
	}
	return o
}

// stretch is a time a group was unhealthy.
type stretch struct {
	group      GroupKey
	start, end time.Time // end zero: still unhealthy at the end
	// lost: a member was deleted or terminating during the stretch.
	lost bool
	// before: the stretch began before the window.
	before bool
	// created: the stretch is the group's creation (its first pods),
	// not a disruption.
	created bool
}

// glitch reports whether the stretch is a glitch: over, short, no member
// lost.
func (s *stretch) glitch(below time.Duration) bool {
	return !s.created && !s.end.IsZero() && !s.lost && below > 0 && s.end.Sub(s.start) < below
}

// groupOf returns the workload and group index a pod's LWS labels name.
func groupOf(p *corev1.Pod) (GroupKey, bool) {
	name := p.Labels[fixture.LWSNameLabel]
	idx, err := strconv.Atoi(p.Labels[fixture.LWSGroupIndexLabel])
	if name == "" || err != nil {
		return GroupKey{}, false
	}
	return GroupKey{Workload: name, Index: idx}, true
}

// groupStatus is the status of one group from its member pods; a group
// without pods has no members and is not healthy.
func groupStatus(members map[types.UID]*corev1.Pod, key GroupKey) fixture.GroupStatus {
	list := make([]corev1.Pod, 0, len(members))
	for _, p := range members {
		list = append(list, *p)
	}
	st := fixture.Groups(list, nil, key.Workload, "")
	if len(st) != 1 {
		return fixture.GroupStatus{Index: key.Index, Size: 1}
	}
	return st[0]
}

// HealthyAgain returns the first time at or after t that the group turned
// healthy, or false if it did not in the window.
func (o *Observation) HealthyAgain(g GroupKey, t time.Time) (time.Time, bool) {
	for _, tr := range o.Transitions {
		if tr.Group == g && tr.Healthy && !tr.At.Before(t) {
			return tr.At, true
		}
	}
	return time.Time{}, false
}

// Safety summarises an observation against the goals: every group
// disrupted exactly once, no workload below its PDB's minAvailable.
func (o *Observation) Safety(groups []GroupKey) Safety {
	s := Safety{Groups: len(groups), Workloads: o.Workloads}
	for _, g := range groups {
		s.Glitches += o.Glitches[g]
		n := o.Disruptions[g]
		s.Disruptions += n
		switch {
		case n == 0:
			s.NeverDisrupted++
		case n == 1:
			s.DisruptedOnce++
		default:
			s.DisruptedMore++
		}
		s.MaxDisruptions = max(s.MaxDisruptions, n)
	}
	s.MinMargin, s.MinMarginRaw = 1<<30, 1<<30
	for _, w := range o.Workloads {
		s.MinMargin = min(s.MinMargin, w.MinHealthy-w.MinAvailable)
		s.MinMarginRaw = min(s.MinMarginRaw, w.MinHealthyRaw-w.MinAvailable)
	}
	if len(o.Workloads) == 0 {
		s.MinMargin, s.MinMarginRaw = 0, 0
	}
	return s
}

// Safety is what a run did to the groups.
type Safety struct {
	// Groups is the number of groups the run should disrupt once each.
	Groups         int `json:"groups"`
	Disruptions    int `json:"disruptions"`
	DisruptedOnce  int `json:"disruptedOnce"`
	DisruptedMore  int `json:"disruptedMoreThanOnce"`
	NeverDisrupted int `json:"neverDisrupted"`
	MaxDisruptions int `json:"maxDisruptionsOfOneGroup"`
	// Glitches counts unhealthy dips that were glitches, not disruptions.
	Glitches int `json:"glitches"`
	// MinMargin is the smallest (fewest healthy groups − minAvailable) over
	// the workloads, glitches not counted: negative means a PDB's promise
	// was broken. MinMarginRaw counts the glitches as unhealthy.
	MinMargin    int              `json:"minMargin"`
	MinMarginRaw int              `json:"minMarginRaw"`
	Workloads    []WorkloadSafety `json:"workloads"`
	// WorkersBeforeLeaders counts the group pods other than leaders seen
	// terminating before the last leader of their domain was (see
	// [Observation.WorkersBeforeLeaders]): 0 means leaders first.
	WorkersBeforeLeaders int `json:"workersBeforeLeaders"`
	// EvictedBeforeLeaders counts the same among the pods whose eviction
	// the API server accepted (the audit log; see
	// [Observation.EvictedBeforeLeaders]), leaving out those a controller
	// deleted: the drainer's own order. Nil when unknown (no audit log).
	EvictedBeforeLeaders *int `json:"evictedBeforeLeaders,omitempty"`
}

// LeadersFirst reports whether no drainer put a worker before a leader of
// its domain: by the pods it evicted when the audit log says which, else
// by every pod seen terminating.
func (s Safety) LeadersFirst() bool {
	if s.EvictedBeforeLeaders != nil {
		return *s.EvictedBeforeLeaders == 0
	}
	return s.WorkersBeforeLeaders == 0
}

// WorkersBeforeLeaders counts the evicted pods of groups that are not
// leaders and were seen terminating before the last leader of their
// domain, in the window: udrain evicts a domain's leaders (the pods under
// a PDB) first, and a worker evicted while a leader of its domain is still
// refused is an unprotected pod taken down next to a protected one.
func (o *Observation) WorkersBeforeLeaders() int {
	return o.beforeLeaders(func(EvictedPod) bool { return true })
}

// EvictedBeforeLeaders is WorkersBeforeLeaders over the pods evicted, not
// deleted: those seen terminating at most evictionLag after an eviction of
// their name that the API server accepted (evictions: the times it
// received them, by pod name). A pod a controller deletes (a group's
// Pending replacement, a member LWS restarts) is not the drainer's.
func (o *Observation) EvictedBeforeLeaders(evictions map[string][]time.Time) int {
	return o.beforeLeaders(func(p EvictedPod) bool {
		for _, at := range evictions[p.Name] {
			if !at.After(p.At) && p.At.Sub(at) <= evictionLag {
				return true
			}
		}
		return false
	})
}

// evictionLag is the longest an evicted pod may take to be seen
// terminating after the API server received its eviction (a watch event
// follows the request at once; a saturated testbed delays it by seconds).
const evictionLag = time.Minute

func (o *Observation) beforeLeaders(counted func(EvictedPod) bool) int {
	lastLeader := map[string]time.Time{}
	for _, p := range o.Evicted {
		if p.Leader && counted(p) && p.At.After(lastLeader[p.Domain]) {
			lastLeader[p.Domain] = p.At
		}
	}
	n := 0
	for _, p := range o.Evicted {
		if !p.Leader && counted(p) && p.At.Before(lastLeader[p.Domain]) {
			n++
		}
	}
	return n
}

// EachOnce reports whether every group was disrupted exactly once.
func (s Safety) EachOnce() bool { return s.DisruptedOnce == s.Groups && s.Disruptions == s.Groups }

// AllGroups lists the groups of the workloads, in order.
func AllGroups(workloads []Workload) []GroupKey {
	var out []GroupKey
	for _, w := range workloads {
		for g := range w.Groups {
			out = append(out, GroupKey{Workload: w.Name, Index: g})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Workload != out[j].Workload {
			return out[i].Workload < out[j].Workload
		}
		return out[i].Index < out[j].Index
	})
	return out
}
