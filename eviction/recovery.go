package eviction

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain/topology"
)

// recoveryTarget is what "the domain's groups are healthy again" means: the
// groups it disrupted are whole with every member Ready, and the budgets
// over them count what the pods show (their status has caught up).
type recoveryTarget struct {
	domain string
	groups []AffectedGroup
	pdbs   []types.NamespacedName
}

func targetFromPlan(p *Plan) recoveryTarget {
	t := recoveryTarget{domain: p.Domain, groups: p.Groups}
	for _, pod := range p.Phase1 {
		for _, name := range pod.PDBs {
			t.addPDB(types.NamespacedName{Namespace: pod.Namespace, Name: name})
		}
	}
	return t
}

// addStranded adds to the target the groups that a previous, interrupted
// run drained from this domain: incomplete groups with no member scheduled
// in another domain, of workloads placed in the layout. Call it only for a
// domain the rollout had cordoned (one at a time), so the stranded groups
// are this domain's. Without them, a resumed domain whose pods are all
// gone would have nothing to wait for, and the next domain could start
// while those groups are still Pending.
func (t *recoveryTarget) addStranded(snap *Snapshot, layout *topology.Layout, groupers []topology.Grouper, domain string) {
	groups := topology.FindGroups(snap.Pods, groupers...)
	// Workloads placed in the domains (the plan may be empty on resume):
	// a stranded group's siblings run in other domains, while a group
	// of a workload that runs nowhere is not this rollout's to wait for.
	workloads := placedWorkloads(groups, layout)
	for _, g := range t.groups {
		workloads[workloadOf(g.ID, g.Workload)] = true
	}
	pdbs := topology.NewPDBIndex(snap.PDBs)
	for i := range groups {
		g := &groups[i]
		if containsGroup(t.groups, g.ID) || !workloads[workloadOf(g.ID, g.Workload)] {
			continue
		}
		elsewhere, unscheduled := false, false
		for _, m := range g.Members {
			if m.Spec.NodeName == "" {
				unscheduled = true
			} else if d, ok := layout.DomainOf(m.Spec.NodeName); !ok || d != domain {
				elsewhere = true
			}
		}
		if elsewhere || !unscheduled && len(g.Members) >= g.ExpectedSize() {
			continue
		}
		t.addGroup(g, pdbs)
	}
}

// addGroup adds g to the target, and with pdbs the budgets over its
// members, each once.
func (t *recoveryTarget) addGroup(g *topology.Group, pdbs *topology.PDBIndex) {
	if !containsGroup(t.groups, g.ID) {
		t.groups = append(t.groups, affectedGroup(g))
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
	if !containsNN(t.pdbs, nn) {
		t.pdbs = append(t.pdbs, nn)
	}
}

// affectedGroup is g as recovery waits for it.
func affectedGroup(g *topology.Group) AffectedGroup {
	ag := AffectedGroup{ID: g.ID, Workload: g.Workload, Size: g.ExpectedSize()}
	if g.Leader != nil {
		ag.Leader = g.Leader.Name
	}
	return ag
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

// waiting returns what recovery still waits for, one line each; empty
// means recovered.
func (v *view) waiting(t recoveryTarget, groupers []topology.Grouper, now time.Time) []string {
	var out []string
	byNS := map[string][]AffectedGroup{}
	for _, g := range t.groups {
		byNS[g.ID.Namespace] = append(byNS[g.ID.Namespace], g)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		groups := topology.FindGroups(v.podsIn(ns), groupers...)
		byID := map[topology.GroupID]*topology.Group{}
		for i := range groups {
			byID[groups[i].ID] = &groups[i]
		}
		for _, want := range byNS[ns] {
			if msg := groupMissing(byID[want.ID], want); msg != "" {
				out = append(out, fmt.Sprintf("group %s: %s", want.ID, msg))
			}
		}
	}
	for _, nn := range t.pdbs {
		if msg := v.pdbLagging(nn, now); msg != "" {
			out = append(out, fmt.Sprintf("PodDisruptionBudget %s: %s", nn, msg))
		}
	}
	return out
}

// nextExpiry returns the earliest time a stale disruptedPods entry of the
// target's budgets expires (zero if none): status changes then without a
// pod event.
func (v *view) nextExpiry(t recoveryTarget, now time.Time) time.Time {
	var next time.Time
	for _, nn := range t.pdbs {
		if _, at := v.pdbLag(nn, now); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// groupMissing says why a group is not whole and healthy, or "".
func groupMissing(g *topology.Group, want AffectedGroup) string {
	if g == nil {
		return fmt.Sprintf("no member exists yet (0/%d)", want.Size)
	}
	ready := 0
	var notReady []string
	for _, m := range g.Members {
		if m.DeletionTimestamp == nil && m.Status.Phase == corev1.PodRunning && isPodReady(m) {
			ready++
		} else if len(notReady) < 5 {
			notReady = append(notReady, m.Name)
		}
	}
	size := want.Size
	if size == 0 {
		size = g.ExpectedSize()
	}
	if want.Leader != "" && (g.Leader == nil || !isPodReady(g.Leader) || g.Leader.DeletionTimestamp != nil) {
		return fmt.Sprintf("leader %s not Ready (%d/%d members Ready)", want.Leader, ready, size)
	}
	if ready < size {
		msg := fmt.Sprintf("%d/%d members Ready", ready, size)
		if missing := size - len(g.Members); missing > 0 {
			msg += fmt.Sprintf("; %d missing", missing)
		}
		if len(notReady) > 0 {
			msg += "; not Ready: " + strings.Join(notReady, ", ")
		}
		return msg
	}
	return ""
}

func (v *view) podsIn(namespace string) []*corev1.Pod {
	objs, err := v.pods.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		objs = nil
		for _, o := range v.pods.GetStore().List() {
			if o.(*corev1.Pod).Namespace == namespace {
				objs = append(objs, o)
			}
		}
	}
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*corev1.Pod)
	}
	return pods
}

// pdbLagging says whether a budget's status has not caught up with the pods
// it selects: the disruption controller updates it a little after pods turn
// Ready, and the next domain's evictions are judged by that status.
func (v *view) pdbLagging(nn types.NamespacedName, now time.Time) string {
	msg, _ := v.pdbLag(nn, now)
	return msg
}

// disruptedPodTimeout is how long the disruption controller keeps a pod in
// status.disruptedPods when it does not see the pod go (DeletionTimeout in
// the Kubernetes disruption controller).
const disruptedPodTimeout = 2 * time.Minute

// pdbLag says how a budget's status lags behind its pods, and when a stale
// status.disruptedPods entry expires (zero if none matters). A Ready pod
// still listed there (a replacement that took the name of a pod evicted
// while the controller was not looking, e.g. across an API server restart)
// is not counted by the controller until the entry expires; the next
// domain's evictions would be refused until then, so recovery waits and
// says so.
func (v *view) pdbLag(nn types.NamespacedName, now time.Time) (string, time.Time) {
	pdb, ok := v.pdb(nn.Namespace, nn.Name)
	if !ok {
		return "", time.Time{}
	}
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return "status not yet observed for the current spec", time.Time{}
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return "", time.Time{}
	}
	healthy := int32(0)
	var stale []string
	var expires time.Time
	for _, p := range v.podsIn(nn.Namespace) {
		if !sel.Matches(labels.Set(p.Labels)) || p.DeletionTimestamp != nil || !isPodReady(p) {
			continue
		}
		healthy++
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok {
			if end := t.Add(disruptedPodTimeout); end.After(now) {
				stale = append(stale, p.Name)
				if expires.IsZero() || end.After(expires) {
					expires = end
				}
			}
		}
	}
	if pdb.Status.CurrentHealthy >= healthy {
		return "", time.Time{}
	}
	msg := fmt.Sprintf("status counts %d healthy, the pods show %d", pdb.Status.CurrentHealthy, healthy)
	if len(stale) > 0 {
		sort.Strings(stale)
		msg += fmt.Sprintf("; the disruption controller still counts %s as being evicted (status.disruptedPods) until %s",
			strings.Join(stale, ", "), expires.UTC().Format(time.TimeOnly))
	}
	return msg, expires
}

// waitRecovered waits, on the watch, until the target has recovered; it
// reports what it waits for whenever that changes.
func (d *Drainer) waitRecovered(ctx context.Context, v *view, t recoveryTarget, em *emitter, timeout time.Duration) error {
	pgs, _ := v.listPodGroups(ctx)
	groupers := d.groupers(&Snapshot{PodGroups: pgs})
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last string
	var lastWaiting []string
	for {
		changed := v.changed.wait()
		w := v.waiting(t, groupers, d.s.Clock.Now())
		evaluated := time.Now()
		if d.s.evaluated != nil {
			d.s.evaluated()
		}
		if len(w) == 0 {
			em.emit(Event{Time: d.s.Clock.Now(), Type: EventRecovered, Domain: t.domain, Message: "the domain's groups are healthy and their budgets caught up"})
			return nil
		}
		lastWaiting = w
		if s := strings.Join(w, "; "); s != last {
			last = s
			em.emit(Event{Time: d.s.Clock.Now(), Type: EventWaitingRecovery, Domain: t.domain, Message: s})
		}
		var wake <-chan time.Time
		var timer interface{ Stop() bool }
		if at := v.nextExpiry(t, d.s.Clock.Now()); !at.IsZero() {
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
		if ctx.Err() != nil {
			if timeout > 0 && ctx.Err() == context.DeadlineExceeded {
				return &NotRecoveredError{Domain: t.domain, Timeout: timeout, Waiting: lastWaiting}
			}
			return ctx.Err()
		}
	}
}

// Uncordon makes every node of the domain schedulable again, like kubectl
// uncordon, and removes udrain's cordon mark.
func (d *Drainer) Uncordon(ctx context.Context, domain string) ([]string, error) {
	if domain == "" {
		return nil, &EmptyDomainError{}
	}
	nodes, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	layout, err := topology.BuildLayout(nodes.Items, topology.LayoutOptions{LabelKey: d.s.DomainLabel, Unlabeled: d.s.Unlabeled})
	if err != nil {
		return nil, err
	}
	dom, err := layout.Domain(domain)
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var todo []string
	for _, name := range dom.Nodes {
		if n := byName[name]; n.Spec.Unschedulable || n.Annotations[CordonedByAnnotation] != "" {
			todo = append(todo, name)
		}
	}
	em := &emitter{fn: d.s.OnEvent}
	ok := make([]bool, len(todo))
	err = forEachNode(ctx, d.s.Concurrency, todo, func(ctx context.Context, i int, name string) error {
		if err := d.uncordonNode(ctx, em, name); err != nil {
			return err
		}
		ok[i] = true
		return nil
	})
	var done []string
	for i, name := range todo {
		if ok[i] {
			done = append(done, name)
		}
	}
	return done, err
}

func (d *Drainer) uncordonNode(ctx context.Context, em *emitter, name string) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{CordonedByAnnotation: nil}},
		"spec":     map[string]any{"unschedulable": false},
	})
	err := retryTransient(ctx, d.s, func(e Event) { e.Time, e.Node = d.s.Clock.Now(), name; em.emit(e) }, "uncordon node "+name, func() error {
		_, err := d.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("uncordoning node %s: %w", name, err)
	}
	return nil
}

// WaitHealthy waits until the groups with pods in the named domains (every
// domain when none is named) are whole with every member Ready, and the
// PodDisruptionBudgets over their pods have caught up with them. Groups of
// the same workloads whose pods are all unscheduled (Pending, waiting for
// room) count too: they are not healthy. It changes nothing. A deadline in
// ctx bounds the wait; the error is then a *NotRecoveredError saying what
// was still missing.
func (d *Drainer) WaitHealthy(ctx context.Context, domains ...string) error {
	v, err := d.startView(ctx)
	if err != nil {
		return err
	}
	defer v.stop()
	snap, err := v.snapshot(ctx)
	if err != nil {
		return err
	}
	targets, err := d.healthTargets(snap, domains)
	if err != nil {
		return err
	}
	// One wait over every domain, so that a domain that falls ill again
	// while another recovers is not missed.
	all := recoveryTarget{domain: strings.Join(domains, ",")}
	if len(domains) == 0 {
		all.domain = "(all)"
	}
	seen := map[topology.GroupID]bool{}
	for _, t := range targets {
		for _, g := range t.groups {
			if !seen[g.ID] {
				seen[g.ID] = true
				all.groups = append(all.groups, g)
			}
		}
		for _, nn := range t.pdbs {
			all.addPDB(nn)
		}
	}
	start := d.s.Clock.Now()
	if err := d.waitRecovered(ctx, v, all, &emitter{fn: d.s.OnEvent}, 0); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return &NotRecoveredError{Domain: all.domain, Timeout: d.s.Clock.Since(start).Round(time.Second),
				Waiting: v.waiting(all, d.groupers(snap), d.s.Clock.Now())}
		}
		return err
	}
	return nil
}

// Health says, without waiting, what keeps the groups of the named domains
// (every domain when none is named) from being healthy: one line per group
// or PDB, prefixed with its domain ("unscheduled" for groups with no pod
// on a node), empty when all is well. It changes nothing.
func (d *Drainer) Health(ctx context.Context, domains ...string) ([]string, error) {
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.stop()
	snap, err := v.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	targets, err := d.healthTargets(snap, domains)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range targets {
		for _, w := range v.waiting(t, d.groupers(snap), d.s.Clock.Now()) {
			out = append(out, t.domain+": "+w)
		}
	}
	return out, nil
}

// healthTargets returns, per domain, its groups (every group with a pod on
// its nodes, whatever a drain would do with that pod) and the PDBs over
// their members, and a last target "unscheduled" with the groups of the
// same workloads that have no pod on any node.
func (d *Drainer) healthTargets(snap *Snapshot, domains []string) ([]recoveryTarget, error) {
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{LabelKey: d.s.DomainLabel, Unlabeled: d.s.Unlabeled})
	if err != nil {
		return nil, err
	}
	if len(domains) == 0 {
		domains = layout.Names()
	}
	for _, name := range domains {
		if name == "" {
			return nil, &EmptyDomainError{}
		}
		if _, err := layout.Domain(name); err != nil {
			return nil, err
		}
	}
	groups := topology.FindGroups(snap.Pods, d.groupers(snap)...)
	pdbs := topology.NewPDBIndex(snap.PDBs)
	byDomain := map[string]*recoveryTarget{}
	var targets []*recoveryTarget
	for _, name := range domains {
		t := &recoveryTarget{domain: name}
		byDomain[name] = t
		targets = append(targets, t)
	}
	// Unscheduled groups count only for workloads placed in the layout.
	placed := placedWorkloads(groups, layout)
	unscheduled := &recoveryTarget{domain: "unscheduled"}
	for i := range groups {
		g := &groups[i]
		scheduled := false
		for _, m := range g.Members {
			if m.Spec.NodeName == "" {
				continue
			}
			scheduled = true
			if dom, ok := layout.DomainOf(m.Spec.NodeName); ok && byDomain[dom] != nil && !containsGroup(byDomain[dom].groups, g.ID) {
				byDomain[dom].addGroup(g, pdbs)
			}
		}
		if !scheduled && placed[workloadOf(g.ID, g.Workload)] {
			unscheduled.addGroup(g, nil)
		}
	}
	out := make([]recoveryTarget, 0, len(targets)+1)
	for _, t := range targets {
		out = append(out, *t)
	}
	if len(unscheduled.groups) > 0 {
		out = append(out, *unscheduled)
	}
	return out, nil
}

func containsNN(s []types.NamespacedName, v types.NamespacedName) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsGroup(s []AffectedGroup, id topology.GroupID) bool {
	for _, g := range s {
		if g.ID == id {
			return true
		}
	}
	return false
}

func (d *Drainer) groupers(snap *Snapshot) []topology.Grouper { return groupersFor(d.s, snap) }
