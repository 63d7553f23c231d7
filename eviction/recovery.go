package eviction

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/topology"
)

// recoveryTarget is what "the domain's groups are healthy again" means: the
// groups it disrupted are healthy (package health's judgment, with the size
// and leader they had before the drain), and the budgets over them count
// what the pods show (their status has caught up).
type recoveryTarget struct {
	domain string
	groups []wantedGroup
	pdbs   []types.NamespacedName
}

// wantedGroup is a group recovery waits for, as it was known before.
type wantedGroup struct {
	id       topology.GroupID
	workload string
	leader   string
	size     int
	// stranded: found by addStranded on resume, not taken from a plan.
	stranded bool
	// namespaceDeleted: its namespace was being deleted during the drain
	// (its evictions were refused NamespaceTerminating): its pods went
	// with it, and nothing comes back.
	namespaceDeleted bool
}

// deletedNamespaces notes, from a drain's events and its preflight, the
// namespaces found being deleted (an answer RequestNamespaceTerminating),
// for recoveryTarget.forgetDeletedNamespaces. Safe for the drain's
// concurrent events.
type deletedNamespaces struct {
	mu  sync.Mutex
	set map[string]bool
}

func (d *deletedNamespaces) note(e Event) {
	if e.Request != RequestNamespaceTerminating || e.Pod == nil {
		return
	}
	d.add(e.Pod.Namespace)
}

// add notes namespace ns being deleted: the drain's preflight found it so
// (its pods may be gone before their eviction, which then says nothing).
func (d *deletedNamespaces) add(ns string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.set == nil {
		d.set = map[string]bool{}
	}
	d.set[ns] = true
}

// forgetDeletedNamespaces marks the groups of the namespaces d noted: once
// no pod of such a namespace is left, recovery no longer waits for them
// (see judgeGroups).
func (t *recoveryTarget) forgetDeletedNamespaces(d *deletedNamespaces) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range t.groups {
		if d.set[t.groups[i].id.Namespace] {
			t.groups[i].namespaceDeleted = true
		}
	}
}

func targetFromPlan(p *Plan) recoveryTarget {
	t := recoveryTarget{domain: p.Domain}
	for _, g := range p.Groups {
		t.groups = append(t.groups, wantedGroup{id: g.ID, workload: g.Workload, leader: g.Leader, size: g.Size})
	}
	for _, pod := range p.Phase1 {
		for _, name := range pod.PDBs {
			t.addPDB(types.NamespacedName{Namespace: pod.Namespace, Name: name})
		}
	}
	return t
}

func (t *recoveryTarget) has(id topology.GroupID) bool {
	return slices.ContainsFunc(t.groups, func(g wantedGroup) bool { return g.id == id })
}

// addStranded adds to the target the groups that a previous, interrupted
// run drained from this domain: incomplete groups with no member scheduled
// in another domain, of workloads placed in the layout, whose unscheduled
// members may run on a node of the domain (nodes are the cluster's). Call
// it only for a domain the rollout had cordoned (one at a time), so the
// stranded groups are this domain's. Without them, a resumed domain whose
// pods are all gone would have nothing to wait for, and the next domain
// could start while those groups are still Pending. A Pending group that
// no node of the domain takes (another pool's, by its node selector,
// affinity or taints) was never this domain's: waiting for it would hold
// the rollout until someone else's capacity appears.
func (t *recoveryTarget) addStranded(groups []topology.Group, pdbs *topology.PDBIndex, layout *topology.Layout, nodes []corev1.Node) {
	var domNodes []*corev1.Node
	if dom, err := layout.Domain(t.domain); err == nil {
		domNodes = domainNodes(nodes, dom)
	}
	// Workloads placed in the domains (the plan may be empty on resume):
	// a stranded group's siblings run in other domains, while a group
	// of a workload that runs nowhere is not this rollout's to wait for.
	workloads := placedWorkloads(groups, layout)
	for _, g := range t.groups {
		workloads[workloadOf(g.id, g.workload)] = true
	}
	for i := range groups {
		g := &groups[i]
		if t.has(g.ID) || !workloads[workloadOf(g.ID, g.Workload)] {
			continue
		}
		elsewhere, unscheduled, foreign := false, false, false
		for _, m := range g.Members {
			if m.Spec.NodeName == "" {
				unscheduled = true
				foreign = foreign || !slices.ContainsFunc(domNodes, func(n *corev1.Node) bool { return mayRunOn(n, m, nil) })
			} else if d, ok := layout.DomainOf(m.Spec.NodeName); !ok || d != t.domain {
				elsewhere = true
			}
		}
		if elsewhere || foreign || !unscheduled && len(g.Members) >= g.ExpectedSize() {
			continue
		}
		t.addGroup(g, pdbs)
		for i := range t.groups {
			if t.groups[i].id == g.ID {
				t.groups[i].stranded = true
			}
		}
	}
}

// addGroup adds g to the target, and with pdbs the budgets over its
// members, each once.
func (t *recoveryTarget) addGroup(g *topology.Group, pdbs *topology.PDBIndex) {
	if !t.has(g.ID) {
		w := wantedGroup{id: g.ID, workload: g.Workload, size: g.ExpectedSize()}
		if g.Leader != nil {
			w.leader = g.Leader.Name
		}
		t.groups = append(t.groups, w)
	}
	if pdbs == nil {
		return
	}
	for _, m := range g.Members {
		for _, b := range pdbs.For(m) {
			t.addPDB(types.NamespacedName{Namespace: b.Namespace, Name: b.Name})
		}
	}
}

func (t *recoveryTarget) addPDB(nn types.NamespacedName) {
	if !slices.Contains(t.pdbs, nn) {
		t.pdbs = append(t.pdbs, nn)
	}
}

// workloadKey names the workload a group belongs to.
type workloadKey struct {
	kind         topology.Kind
	ns, workload string
}

func workloadOf(id topology.GroupID, workload string) workloadKey {
	return workloadKey{id.Kind, id.Namespace, workload}
}

// placedWorkloads returns the workloads with a member on a node of the
// layout.
func placedWorkloads(groups []topology.Group, layout *topology.Layout) map[workloadKey]bool {
	placed := map[workloadKey]bool{}
	for i := range groups {
		for _, m := range groups[i].Members {
			if _, ok := layout.DomainOf(m.Spec.NodeName); ok && m.Spec.NodeName != "" {
				placed[workloadOf(groups[i].ID, groups[i].Workload)] = true
				break
			}
		}
	}
	return placed
}

// domainWaiting says in a line each what is not healthy in h: "group
// ns/name: <message>" and "PodDisruptionBudget ns/name: <message>".
func domainWaiting(h *health.DomainStatus) []string {
	var out []string
	for _, g := range h.Groups {
		if !g.Healthy {
			out = append(out, fmt.Sprintf("group %s: %s", g.ID, g.Message))
		}
	}
	for _, b := range h.Budgets {
		if !b.Healthy {
			out = append(out, fmt.Sprintf("PodDisruptionBudget %s/%s: %s", b.Namespace, b.Name, b.Message))
		}
	}
	return out
}

// evaluate judges the target against the view now. With udrain's pod
// index it reads only the pods of the target's groups and of the
// workloads its budgets select (see groupsIn and BudgetPods), else the
// whole namespaces of its groups and budgets.
func (v *view) evaluate(t recoveryTarget, groupers []topology.Grouper, now time.Time) *health.DomainStatus {
	return v.evaluateWith(t, groupers, now, nil)
}

// evaluateWith is evaluate reading slimPods through memo (nil: none).
func (v *view) evaluateWith(t recoveryTarget, groupers []topology.Grouper, now time.Time, memo *podcache.Memo) *health.DomainStatus {
	h := &health.DomainStatus{Domain: t.domain, Healthy: true}
	h.Groups = v.judgeGroups(t.groups, groupers, memo)
	for _, st := range h.Groups {
		h.Healthy = h.Healthy && st.Healthy
	}
	for _, nn := range t.pdbs {
		pdb, ok := v.PDB(nn.Namespace, nn.Name)
		if !ok {
			continue // deleted: nothing to wait for
		}
		st := health.Budget(pdb, v.BudgetPods(pdb, memo), now)
		h.Healthy = h.Healthy && st.Healthy
		h.Budgets = append(h.Budgets, st)
	}
	return h
}

// judgeGroups judges the wanted groups as they are now, wherever their
// pods run, namespace by namespace; a stranded group, or one whose
// namespace was being deleted, is not judged once its namespace has no
// pod left (see evaluate).
func (v *view) judgeGroups(wants []wantedGroup, groupers []topology.Grouper, memo *podcache.Memo) []health.GroupStatus {
	byNS := map[string][]wantedGroup{}
	for _, g := range wants {
		byNS[g.id.Namespace] = append(byNS[g.id.Namespace], g)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	var out []health.GroupStatus
	for _, ns := range namespaces {
		byID := v.groupsIn(ns, byNS[ns], groupers, memo)
		for _, want := range byNS[ns] {
			var st health.GroupStatus
			if g := byID[want.id]; g != nil {
				st = health.Evaluate(g, health.Options{MinSize: want.size, RequireLeader: want.leader != ""})
			} else if (want.stranded || want.namespaceDeleted) && len(v.PodObjectsIn(ns)) == 0 {
				// A stranded group is known from the Pending or incomplete
				// pods it had when the rollout resumed, not from an
				// eviction of this run: once no pod of its namespace is
				// left, its workload was deleted (the namespace with it),
				// and nothing will come back to wait for. So with a group
				// whose namespace the drain found being deleted.
				continue
			} else {
				st = health.Absent(want.id, want.workload, want.leader, want.size)
			}
			out = append(out, st)
		}
	}
	return out
}

// nextExpiry returns the earliest time a stale disruptedPods entry of h's
// budgets expires (zero if none): status changes then without a pod event.
func nextExpiry(h *health.DomainStatus) time.Time {
	var next time.Time
	for _, b := range h.Budgets {
		if at := b.StaleUntil; at != nil && (next.IsZero() || at.Before(next)) {
			next = *at
		}
	}
	return next
}

// waitRecovered waits, on the watch, until the target has recovered, and
// returns its last evaluation; it reports what it waits for whenever that
// changes. The error is ctx's, or context.DeadlineExceeded when timeout
// (0: none) ran out.
func (d *Drainer) waitRecovered(ctx context.Context, v *view, t recoveryTarget, emit func(Event), timeout time.Duration) (*health.DomainStatus, error) {
	return d.waitRecoveredOrStuck(ctx, v, t, emit, timeout, -1)
}

// waitRecoveredOrStuck is waitRecovered that also stops, with a
// *ClusterError (ReasonStuck), once a member has waited stuckAfter (negative: never) for a
// reason that does not clear by itself (health.Stuck).
func (d *Drainer) waitRecoveredOrStuck(ctx context.Context, v *view, t recoveryTarget, emit func(Event), timeout, stuckAfter time.Duration) (*health.DomainStatus, error) {
	logger := klog.FromContext(ctx).WithValues("domain", t.domain)
	pgs, _ := v.PodGroups(ctx)
	groupers := groupersFor(d.s, &Snapshot{PodGroups: pgs})
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last string
	stuck := stuckWatch{after: stuckAfter, since: map[types.UID]time.Time{}, starting: map[types.UID]*startingMember{}, warning: d.podWarning}
	// Evaluations follow each other, most pods unchanged between them: a
	// slim cache's pods are materialized once for the whole wait.
	memo := podcache.NewMemo()
	for {
		changed := v.Changed()
		h := v.evaluateWith(t, groupers, d.s.Clock.Now(), memo)
		memo.Turn()
		evaluated := time.Now()
		if d.s.evaluated != nil {
			d.s.evaluated()
		}
		if h.Healthy {
			logger.Info("Recovered", "groups", len(h.Groups), "budgets", len(h.Budgets))
			emit(Event{Type: EventRecovered, Health: h, Message: "the domain's groups are healthy and their budgets caught up"})
			return h, nil
		}
		if w := fmt.Sprint(domainWaiting(h)); w != last {
			last = w
			logger.V(2).Info("Waiting for recovery", "waiting", domainWaiting(h))
			emit(Event{Type: EventWaitingRecovery, Health: h, Message: strings.Join(domainWaiting(h), "; ")})
		}
		if err := stuck.check(ctx, t.domain, h, d.s.Clock.Now()); err != nil {
			logger.Info("Recovery stopped: members cannot start by themselves", "err", err)
			return h, err
		}
		var wake <-chan time.Time
		var timer interface{ Stop() bool }
		at := nextExpiry(h)
		if s := stuck.next(); !s.IsZero() && (at.IsZero() || s.Before(at)) {
			at = s
		}
		if !at.IsZero() {
			tt := d.s.Clock.NewTimer(at.Sub(d.s.Clock.Now()) + 100*time.Millisecond)
			timer, wake = tt, tt.C()
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
		// Coalesce: the events of the next moments are seen by one
		// evaluation (real time, not the Clock: it paces the CPU).
		if wait := d.s.recoveryEvery - time.Since(evaluated); wait > 0 && ctx.Err() == nil {
			pause := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-pause.C:
			}
			pause.Stop()
		}
		if err := ctx.Err(); err != nil {
			return v.evaluateWith(t, groupers, d.s.Clock.Now(), memo), err
		}
	}
}

// cannotStart are the warning events' reasons that say a pod cannot start
// while its containers are being created: its volume cannot be attached,
// mapped or mounted (CSI), or its sandbox cannot be made (CNI).
var cannotStart = map[string]bool{
	"FailedAttachVolume": true, "FailedMount": true, "FailedMapVolume": true, "FailedCreatePodSandBox": true,
}
