package eviction

import (
	"cmp"
	"context"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/lease"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// DefaultWatchInterval is how often WatchRolloutStatus looks again
// without RolloutOptions.StatusInterval.
const DefaultWatchInterval = 2 * time.Second

// RolloutStatus is where a rollout stands, read back from the cluster.
//
// Its JSON (the CLI's RolloutStatus document) nests the Lock* fields in
// an object "lock" (its "held" is Running) and the ETA* fields in an
// object "eta", each absent when LockName, or ETA, is (MarshalJSON).
type RolloutStatus struct {
	ID string `json:"id"`
	// Time is when the status was read.
	Time time.Time `json:"time"`
	// Running is true when a holder renewed the rollout's Lease within
	// its duration: the rollout runs now, somewhere.
	Running bool `json:"running"`
	// LockName is the name of the rollout's Lease as it was read, in
	// LockNamespace; "" when there is none (the rollout never ran, or ran
	// without a lock or in another namespace) or RolloutOptions.NoLock is
	// set: the other Lock* fields are then unset too. Whether the Lease
	// is held is Running.
	LockNamespace, LockName string `json:"-"`
	// LockHolder is the holder's identity; "" when the Lease was
	// released.
	LockHolder string `json:"-"`
	// LockAcquiredAt is when the holder took the Lease, LockRenewedAt
	// when it last renewed it.
	LockAcquiredAt, LockRenewedAt *time.Time `json:"-"`
	// LockDuration is how long the Lease holds without a renewal.
	LockDuration udrain.Seconds `json:"-"`
	// Domains are the rollout's domains in the order it takes them.
	Domains []RolloutDomain `json:"domains"`
	// Done counts the domains Done.
	Done int `json:"done"`
	// Completed is true when every domain is Done.
	Completed bool `json:"completed"`
	// ETA is when the rollout should be done, learned from the domains
	// already upgraded: the median of the gaps between the upgraded
	// marks of consecutive domains (a drain, an upgrade and a recovery
	// each; the median, so that a pause between a stop and a resume does
	// not count), times the domains left, after the last mark. With k
	// domains in flight (parallel domains: draining, upgrading or
	// recovering), a gap is taken between marks k apart and divided by k:
	// the time a domain takes when k run at once. nil before more
	// domains are marked than are in flight, or when none is left; the
	// other ETA* fields are then zero.
	ETA *time.Time `json:"-"`
	// ETAPerDomain is the median gap, ETADomainsLeft the domains not
	// marked upgraded yet, ETASamples the number of gaps.
	ETAPerDomain   udrain.Seconds `json:"-"`
	ETADomainsLeft int            `json:"-"`
	ETASamples     int            `json:"-"`
}

// RolloutStatus reads where rollout id stands from what it writes to the
// cluster anyway, without running it: the cordon and upgraded marks of
// the nodes (see DomainState for how each state is inferred), the pods
// each domain's plan names now, package health's judgment of the domain's
// groups, and the rollout's Lease. It changes nothing. It works from any
// process, while the rollout runs elsewhere or after it stopped.
//
// It reads the cluster through Options.Informers (nothing else is listed
// or watched) or lists of its own, and makes one GET of the Lease, unless
// opts.NoLock; a Lease it may not read is a *PermissionError. Of opts it
// reads what says which rollout and where: ID, Domains and Order (those
// of the rollout, so that the domains are listed in the order it takes
// them), NoLock, LockNamespace and IgnoreWorkloadUpdates. A bad option is
// a *udrain.ConfigError naming it, an unknown domain a
// *topology.UnknownDomainError, before any request.
func (d *Drainer) RolloutStatus(ctx context.Context, opts RolloutOptions) (*RolloutStatus, error) {
	ro, err := opts.forStatus()
	if err != nil {
		return nil, err
	}
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	now := d.s.Clock.Now()
	st := &RolloutStatus{ID: ro.ID, Time: now}
	if !ro.lock.Disabled {
		if err := d.readRolloutLock(ctx, ro.lock.Namespace, ro.ID, now, st); err != nil {
			return nil, err
		}
	}
	if err := d.statusFrom(ctx, v, ro, st, !ro.lock.Disabled, nil); err != nil {
		return nil, err
	}
	return st, nil
}

// statusFrom fills st (its ID, time, lock and running set) with the
// progress of ro's domains as v shows them; lockKnown says the Lease was
// read; finished are the domains the running rollout itself knows
// recovered (the cluster cannot show that of the last one).
func (d *Drainer) statusFrom(ctx context.Context, v *view, ro RolloutOptions, st *RolloutStatus, lockKnown bool, finished map[string]bool) error {
	// The groups' pods, not every pod: each pending domain's plan reads
	// the pods of its own (statusReader.domain).
	// One memo for the whole status: a group's pods are materialized once
	// for the groups, the plans and the health of every domain.
	memo := podcache.NewMemo()
	snap, full, err := v.groupSnapshot(ctx, memo)
	if err != nil {
		return err
	}
	layout, err := topology.BuildLayout(snap.Nodes, d.s.layoutOptions())
	if err != nil {
		return err
	}
	snap.layout = layout
	names, err := layout.Select(ro.Domains)
	if err != nil {
		return err
	}
	targets, _, err := d.healthTargets(snap, names)
	if err != nil {
		return err
	}
	s := statusReader{ctx: ctx, d: d, v: v, id: ro.ID, snap: snap, full: full, memo: memo, layout: layout, running: st.Running, lockKnown: lockKnown, finished: finished, ignoreUpdates: ro.IgnoreWorkloadUpdates}
	s.groups = topology.FindGroups(snap.Pods, groupersFor(d.s, snap)...)
	s.groupers = groupersFor(d.s, snap)
	s.pdbs = topology.NewPDBIndex(snap.PDBs)
	s.recovering = map[string]bool{}
	for _, name := range names {
		dom := mustDomain(layout, name)
		s.recovering[name] = upgradedBy(snap.Nodes, dom, ro.ID) && !recoveredBy(snap.Nodes, dom, ro.ID)
	}
	for i, name := range names {
		p, err := s.domain(name, targets[i])
		if err != nil {
			return err
		}
		st.Domains = append(st.Domains, p)
	}
	if ro.Order == OrderSpareFirst {
		orderProgress(st.Domains)
	}
	var latest time.Time
	for i := range st.Domains {
		if at := st.Domains[i].Since; at != nil && at.After(latest) {
			latest = *at
		}
	}
	for i := range st.Domains {
		p := &st.Domains[i]
		if p.State == StateDone {
			st.Done++
		}
		if p.Stage != "" && p.Since == nil && !latest.IsZero() {
			p.NotBefore = &latest
		}
	}
	st.Completed = st.Done == len(st.Domains)
	estimate(st)
	klog.FromContext(ctx).V(4).Info("Read the rollout's status", "rollout", ro.ID, "running", st.Running, "done", st.Done, "domains", len(st.Domains))
	return nil
}

// forStatus is the rollout whose status o asks for, checked and with its
// defaults, as Rollout checks its options; the identity is set so that
// none is made up: the status holds no Lease.
func (o RolloutOptions) forStatus() (RolloutOptions, error) {
	o.LockIdentity = "status"
	return o.withDefaults()
}

// statusReader infers each domain's progress from one snapshot.
type statusReader struct {
	ctx context.Context
	d   *Drainer
	v   *view
	id  string
	// snap holds every node, and every pod if full, else the groups'
	// pods (view.groupSnapshot).
	snap     *Snapshot
	full     bool
	memo     *podcache.Memo
	layout   *topology.Layout
	groups   []topology.Group
	groupers []topology.Grouper
	pdbs     *topology.PDBIndex
	// running: a holder keeps the Lease; lockKnown: the Lease was read.
	running, lockKnown bool
	// recovering: the domains marked upgraded by the rollout but not
	// recovered (udrain.RecoveredByAnnotation).
	recovering map[string]bool
	// finished: the domains the rollout reading its own status knows
	// recovered.
	finished map[string]bool
	// updates are the workload updates read, one read each per status;
	// none with ignoreUpdates (RolloutOptions.IgnoreWorkloadUpdates).
	updates       map[workloadRef]*WorkloadUpdate
	ignoreUpdates bool
}

// domain infers the progress of one domain; t is its health target (its
// groups and the budgets over them).
func (s *statusReader) domain(name string, t recoveryTarget) (RolloutDomain, error) {
	dom := mustDomain(s.layout, name)
	p := RolloutDomain{Domain: name}
	for _, n := range domainNodes(s.snap.Nodes, dom) {
		p.Nodes++
		if n.Annotations[udrain.CordonedByAnnotation] == s.id {
			p.Cordoned++
		}
		if n.Annotations[udrain.UpgradedByAnnotation] == s.id {
			p.Upgraded++
		}
	}
	upgraded := upgradedBy(s.snap.Nodes, dom, s.id)
	var plan *Plan
	var local *Snapshot // the pods a plan of the domain reads
	if !upgraded {
		local = s.v.domainSnapshot(s.snap, s.full, dom.Nodes, nil)
		var err error
		if plan, err = newPlan(name, local, s.d.s); err != nil {
			return p, err
		}
		p.Pods, p.Blockers = len(plan.Phase1)+len(plan.Phase2), plan.Blockers
	} else if at := upgradedAt(s.snap.Nodes, dom); !at.IsZero() {
		p.Since = &at
	}
	// A domain the rollout is in: a resumed rollout waits for the
	// groups its drain left Pending or incomplete too.
	active := p.Cordoned > 0 || upgraded && s.recovering[name]
	if active {
		t.addStranded(s.groups, s.pdbs, s.layout, s.snap.Nodes)
	}
	h := s.v.evaluateWith(t, s.groupers, s.snap.Now, s.memo).Unhealthy()
	p.Down, p.Budgets = h.Groups, h.Budgets
	switch {
	case upgraded && p.Cordoned > 0:
		p.State, p.Stage = StateRecovering, StageUncordon
	case upgraded && s.finished[name]:
		p.State = StateDone
	case upgraded && active && (s.running || !h.Healthy):
		// Until it marks it recovered, the rollout recovers the domain
		// (with several in flight, more than one).
		p.State, p.Stage = StateRecovering, StageRecovery
	case upgraded:
		p.State = StateDone
	case p.Cordoned > 0 && p.Pods > 0:
		p.State, p.Stage = StateDraining, StagePhase2
		if len(plan.Phase1) > 0 {
			p.Stage = StagePhase1
		}
	case p.Cordoned > 0:
		p.State, p.Stage = StateUpgrading, StageUpgrade
	default:
		p.State = StatePending
		p.Updating = s.updating(local.Pods, dom)
	}
	if p.Stage != "" && s.lockKnown && !s.running {
		p.State = StateStopped
	}
	return p, nil
}

// orderProgress puts the domains in OrderSpareFirst, as a rollout takes
// them: those upgraded (in the order they were marked), then the one the
// rollout holds cordoned (where it is, or stopped), then those whose plan
// names no pod, then the others, each in the order given.
func orderProgress(ps []RolloutDomain) {
	rank := func(p *RolloutDomain) int {
		switch {
		case p.upgraded():
			return 0
		case p.Cordoned > 0:
			return 1
		case p.Pods == 0:
			return 2
		}
		return 3
	}
	slices.SortStableFunc(ps, func(a, b RolloutDomain) int {
		if c := cmp.Compare(rank(&a), rank(&b)); c != 0 {
			return c
		}
		return timeOf(a.Since).Compare(timeOf(b.Since))
	})
}

// upgraded reports whether the domain is marked upgraded by the rollout.
func (p *RolloutDomain) upgraded() bool {
	return p.State == StateDone || p.Stage == StageUncordon || p.Stage == StageRecovery
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// estimate sets the rollout's ETA from the upgraded marks of its
// domains, with as many in flight as are now (at least one); none before
// more than that are marked, or when none is left.
func estimate(st *RolloutStatus) {
	var marks []time.Time
	left, flying := 0, 0
	for _, p := range st.Domains {
		switch {
		case p.Since != nil:
			marks = append(marks, *p.Since)
		case !p.upgraded():
			left++
		}
		if p.Stage != "" {
			flying++
		}
	}
	k := max(flying, 1)
	if len(marks) <= k || left == 0 {
		return
	}
	slices.SortFunc(marks, time.Time.Compare)
	gaps := make([]time.Duration, len(marks)-k)
	for i := range gaps {
		gaps[i] = marks[i+k].Sub(marks[i]) / time.Duration(k)
	}
	slices.Sort(gaps)
	per := gaps[len(gaps)/2]
	if len(gaps)%2 == 0 {
		per = (gaps[len(gaps)/2-1] + per) / 2
	}
	st.ETA = new(marks[len(marks)-1].Add(per * time.Duration(left)))
	st.ETAPerDomain, st.ETADomainsLeft, st.ETASamples = udrain.Seconds(per), left, len(gaps)
}

// readRolloutLock GETs the rollout's Lease into st's Lock* fields and
// Running; none when there is none.
func (d *Drainer) readRolloutLock(ctx context.Context, namespace, id string, now time.Time, st *RolloutStatus) error {
	name := lockName(id)
	var got *coordinationv1.Lease
	err := d.bounded(ctx, func(ctx context.Context) (err error) {
		got, err = d.client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &PermissionError{Reason: ReasonForbidden, Err: err, Role: lockRole(namespace)}
	case err != nil:
		return err
	}
	ls := lease.StateOf(got)
	st.LockNamespace, st.LockName, st.LockHolder = namespace, name, ls.Holder
	st.LockAcquiredAt, st.LockDuration, st.Running = ls.AcquiredAt, udrain.Seconds(ls.Duration), ls.HeldAt(now)
	if !ls.RenewedAt.IsZero() {
		st.LockRenewedAt = &ls.RenewedAt
	}
	return nil
}
