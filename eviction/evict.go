package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/internal/podcache"
	"github.com/udrain/udrain/kubeclient"
	"github.com/udrain/udrain/topology"
)

// preflight asks the API server, with dry-run evictions that change
// nothing, whether udrain may evict (or delete) the domain's pods in each
// namespace, so that a missing permission stops the drain before a node is
// cordoned. The cordon's own permission needs no dry run: the cordon is
// the drain's first change, and a refused one changes nothing (see
// cordon).
//
// The dry runs go out concurrently (Options.Concurrency at most), one per
// namespace: with several domains in flight they share the client's rate
// limit with the other domains' evictions, and one at a time each would
// wait behind all of those (a domain of 20 namespaces waited 24 s before
// its cordon in the fleet). What they find is reported as one at a time
// in the plan's order would: the first namespace's answer that stops the
// drain.
func (ex *execution) preflight(ctx context.Context) error {
	var probes []PlannedPod
	seen := map[string]bool{}
	for _, p := range ex.plan.Pods() {
		if p.Terminating || seen[p.Namespace] || ex.v.gone(p.PodRef) {
			continue
		}
		seen[p.Namespace] = true
		probes = append(probes, p)
	}
	answers := make([]error, len(probes))
	_ = forEach(ctx, ex.d.s.Concurrency, probes, func(ctx context.Context, i int, p PlannedPod) error {
		answers[i] = ex.preflightOne(ctx, p)
		return nil
	})
	for _, err := range answers {
		if err != nil {
			return err
		}
	}
	ex.log.V(4).Info("Permissions checked with dry-run requests", "namespaces", len(probes))
	return nil
}

// preflightOne sends p's dry-run eviction and returns the error that
// stops the drain, if its answer is one; it notes a namespace being
// deleted.
func (ex *execution) preflightOne(ctx context.Context, p PlannedPod) error {
	// A namespace being deleted refuses evictions (403) to everyone: its
	// pods go with it (namespaceTerminating), so it says nothing of
	// udrain's permissions.
	denied := func(err error) bool {
		return apierrors.IsForbidden(err) && !hasBudgetCause(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) ||
			apierrors.IsUnauthorized(err)
	}
	timedOut, err := ex.d.s.write(ctx, func(ctx context.Context) error { return ex.evict(ctx, p, ex.deleteOptions(p, true)) })
	if timedOut {
		// Nothing is changed yet: no retry, the server is not serving.
		server := ex.d.server()
		if s := serverOf(err); s != "" {
			server = s
		}
		return &RetryError{Reason: ReasonUnreachable, Server: server, Problem: kubeclient.ServerNoAnswer, Waited: ex.d.s.RequestTimeout, Err: err}
	}
	// A webhook that sees dry runs (sideEffects None) and denies the pod
	// stops the domain before anything changes. (One that does not
	// support dry runs says so; the real eviction decides.)
	if msg := apiMessage(err); err != nil {
		if name, ok := webhookDenial(msg); ok {
			return &PermissionError{Reason: ReasonDenied, Pod: p.PodRef, Webhook: name, Message: msg, DryRun: true, Attempts: 1, Err: err}
		}
	}
	if denied(err) {
		return &PermissionError{Reason: ReasonForbidden, Err: err}
	}
	if ex.deleting != nil && apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		ex.deleting.add(p.Namespace)
	}
	return nil
}

// retryTransient retries fn while it fails with a transient API error (an
// API server restarting, overloaded or unreachable), reporting each retry.
func retryTransient(ctx context.Context, s *settings, emit func(Event), what string, fn func() error) error {
	b := s.Backoff
	for {
		err := fn()
		if err == nil || !transient(err) || ctx.Err() != nil || errors.Is(err, &RetryError{Reason: ReasonUnreachable}) {
			return err
		}
		delay := b.Step()
		emit(Event{Type: EventRetrying, Err: err, Message: fmt.Sprintf("%s: %v; retrying in %s", what, err, delay.Round(time.Millisecond))})
		if !sleep(ctx, s, delay) {
			return err
		}
	}
}

// evictAll evicts the pods of one phase concurrently and returns when every
// one of them is evicted, gone, or was terminating already.
func (ex *execution) evictAll(ctx context.Context, phase Stage, pods []PlannedPod) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ex.d.s.Concurrency)
	for _, p := range pods {
		g.Go(func() error {
			kind, err := ex.evictOne(gctx, phase, p)
			if err != nil {
				return err
			}
			ex.mu.Lock()
			defer ex.mu.Unlock()
			ex.handled[p.PodRef] = true
			ex.progress.count(phase, kind)
			if kind != outcomeGone {
				ex.evicted = append(ex.evicted, evictedPod{p.PodRef, phase})
				if p.Group != nil && !slices.Contains(ex.res.GroupsDisrupted, *p.Group) {
					ex.res.GroupsDisrupted = append(ex.res.GroupsDisrupted, *p.Group)
				}
			} else {
				ex.progress.Gone++
			}
			return nil
		})
	}
	return g.Wait()
}

const outcomeWaited outcomeKind = -1

func (ex *execution) deleteOptions(p PlannedPod, dryRun bool) metav1.DeleteOptions {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}
	if gp := ex.d.s.helper.GracePeriodSeconds; gp >= 0 {
		g := int64(gp)
		opts.GracePeriodSeconds = &g
	}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts
}

// blockInfo reads the budget that refuses p from the watch cache.
func (ex *execution) blockInfo(p PlannedPod, apiErr error) BlockInfo {
	info := BlockInfo{Reason: BlockRefused, BudgetRef: health.BudgetRef{Namespace: p.Namespace}}
	if len(p.PDBs) > 0 {
		info.PDB = p.PDBs[0]
	}
	if apiErr != nil {
		info.Message = budgetMessage(apiErr)
	}
	ex.budgetCounts(&info)
	return info
}

// budgetCounts fills in the counts of info's budget from the watch, and
// the pods it does not count healthy, with their nodes.
func (ex *execution) budgetCounts(info *BlockInfo) {
	pdb, ok := ex.v.PDB(info.Namespace, info.PDB)
	if !ok {
		return
	}
	info.BudgetCounts = health.CountsOf(pdb)
	info.Unhealthy = nil
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return
	}
	for _, p := range ex.v.BudgetPods(pdb, podcache.NewMemo()) {
		if health.CountsForBudget(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		info.Unhealthy = append(info.Unhealthy, ex.budgetPod(p))
	}
	slices.SortFunc(info.Unhealthy, func(a, b health.BudgetPod) int { return strings.Compare(a.Pod.String(), b.Pod.String()) })
	if len(info.Unhealthy) > maxBlockPods {
		info.Unhealthy = info.Unhealthy[:maxBlockPods]
	}
	if len(info.Unhealthy) == 0 {
		return
	}
	// A budget over leaders misses a leader whose group is down: the
	// cause is the group's member that is down (on a node gone offline,
	// say), which the budget does not select.
	groups := topology.FindGroups(ex.v.PodsIn(pdb.Namespace), groupersFor(ex.d.s, &Snapshot{})...)
	for i := range info.Unhealthy {
		bp := &info.Unhealthy[i]
		for _, g := range groups {
			if !slices.ContainsFunc(g.Members, func(m *corev1.Pod) bool { return m.Name == bp.Pod.Name }) {
				continue
			}
			for _, m := range g.Members {
				if m.Name != bp.Pod.Name && !health.MemberHealthy(m) && len(bp.Down) < maxBlockPods {
					bp.Down = append(bp.Down, ex.budgetPod(m))
				}
			}
			break
		}
	}
}

// budgetPod is p as a block names it: with its node, and whether that node
// is Ready.
func (ex *execution) budgetPod(p *corev1.Pod) health.BudgetPod {
	bp := health.BudgetPod{Pod: topology.PodRef{Namespace: p.Namespace, Name: p.Name}, Node: p.Spec.NodeName, Terminating: p.DeletionTimestamp != nil}
	if bp.Node != "" {
		n, ok := ex.v.Node(bp.Node)
		bp.NodeNotReady = !ok || !nodeReady(n)
	}
	return bp
}

// block records that p is refused by its budget and reports the refusal.
func (ex *execution) block(p PlannedPod, phase Stage, apiErr error) *BlockInfo {
	info := ex.blockInfo(p, apiErr)
	key := info.Namespace + "/" + info.PDB
	now := ex.d.s.Clock.Now()
	ex.mu.Lock()
	ob := ex.blocks[key]
	opened := ob == nil
	if opened {
		ob = &openBlock{rec: BlockInfo{Reason: BlockRefused, BudgetRef: info.BudgetRef, Since: now}}
		ex.blocks[key] = ob
	}
	if !slices.Contains(ob.rec.Pods, p.PodRef) {
		ob.rec.Pods = append(ob.rec.Pods, p.PodRef)
	}
	if !slices.Contains(ob.waiting, p.PodRef) {
		ob.waiting = append(ob.waiting, p.PodRef)
	}
	info.Since = ob.rec.Since
	info.Pods = slices.Clone(ob.waiting)
	ex.mu.Unlock()
	if opened {
		ex.log.Info("Blocked by PodDisruptionBudget", "pdb", key, "disruptionsAllowed", info.DisruptionsAllowed,
			"currentHealthy", info.CurrentHealthy, "desiredHealthy", info.DesiredHealthy, "pod", p.PodRef)
	}
	// Every refusal is reported (Request counts requests), not only a
	// new block or changed counts: a refusal follows a wait for the
	// budget, so there are few.
	ev := podEvent(EventBlocked, phase, p.PodRef)
	ev.Block, ev.Request, ev.Message = &info, RequestBudgetRefused, info.String()
	ex.emit(ev)
	return &info
}

// failed reports that p's eviction failed for good with err, the answer
// to its last request being r.
func (ex *execution) failed(phase Stage, p PlannedPod, r RequestResult, err error) {
	ev := podEvent(EventEvictionFailed, phase, p.PodRef)
	ev.Err, ev.Request, ev.Message = err, r, err.Error()
	ex.emit(ev)
}

func (ex *execution) unblock(p PlannedPod, info *BlockInfo, phase Stage) {
	key := info.Namespace + "/" + info.PDB
	now := ex.d.s.Clock.Now()
	ex.mu.Lock()
	if ob := ex.blocks[key]; ob != nil {
		ob.waiting = slices.DeleteFunc(ob.waiting, func(r topology.PodRef) bool { return r == p.PodRef })
		if len(ob.waiting) == 0 {
			ob.rec.Until, ob.rec.Duration = now, udrain.Seconds(now.Sub(ob.rec.Since))
			ex.res.Blocks = append(ex.res.Blocks, ob.rec)
			delete(ex.blocks, key)
			ex.log.Info("PodDisruptionBudget no longer blocks", "pdb", key, "blockedFor", ob.rec.Duration.Duration().Round(time.Millisecond))
		}
	}
	ex.mu.Unlock()
	cur := *info
	ev := podEvent(EventUnblocked, phase, p.PodRef)
	ev.Block = &cur
	ev.Message = fmt.Sprintf("PodDisruptionBudget %s/%s let it go after %s", info.Namespace, info.PDB, now.Sub(info.Since).Round(time.Second))
	ex.emit(ev)
}

// closeBlocks records blocks still open when the drain ends.
func (ex *execution) closeBlocks() {
	now := ex.d.s.Clock.Now()
	ex.mu.Lock()
	defer ex.mu.Unlock()
	keys := make([]string, 0, len(ex.blocks))
	for k := range ex.blocks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rec := ex.blocks[k].rec
		rec.Until, rec.Duration = now, udrain.Seconds(now.Sub(rec.Since))
		ex.res.Blocks = append(ex.res.Blocks, rec)
	}
	ex.blocks = map[string]*openBlock{}
}

// waitForBudget waits, after p's eviction was refused by its budget, for
// the moment a retry can succeed; false means ctx ended. The API server
// decides from the budget's status, which udrain watches, so while the
// watched status shows the budget spent a retry would be refused: it waits
// until the status allows a disruption, the pod is gone or the budget is
// deleted, or BudgetRecheck passes without the watch saying so (a watch
// that is behind). A refusal while the watched status allowed a disruption
// (the watch was behind the API server, or another eviction took it) is
// retried after the backoff's next delay, or at once when a newer status
// allows one. A budget udrain does not see is retried on the backoff. It
// reports progress when the budget's counts change.
func (ex *execution) waitForBudget(ctx context.Context, p PlannedPod, phase Stage, info *BlockInfo, backoff interface{ Step() time.Duration }) bool {
	allows := func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Status.DisruptionsAllowed > 0 && pdb.Status.ObservedGeneration >= pdb.Generation
	}
	pdb, watched := ex.v.PDB(p.Namespace, info.PDB)
	raced := watched && allows(pdb)
	delay := ex.d.s.BudgetRecheck
	var refusedAt string
	if !watched || raced {
		delay = backoff.Step()
	}
	if watched {
		refusedAt = pdb.ResourceVersion
	}
	ex.log.V(4).Info("Waiting for the budget", "pod", p.PodRef, "pdb", info.BudgetRef.String(), "watched", watched, "raced", raced, "recheck", delay)
	timer := ex.d.s.Clock.NewTimer(delay)
	defer timer.Stop()
	for {
		changed := ex.v.Changed()
		if ex.v.gone(p.PodRef) {
			return true
		}
		if pdb, ok := ex.v.PDB(p.Namespace, info.PDB); ok {
			// After a race, only a newer status than the one refused
			// says anything new.
			if allows(pdb) && (!raced || pdb.ResourceVersion != refusedAt) {
				return true
			}
			if counts := health.CountsOf(pdb); counts != info.BudgetCounts {
				info.BudgetCounts = counts
				cur := *info
				ex.log.V(2).Info("Still blocked", "pdb", info.BudgetRef.String(), "disruptionsAllowed", counts.DisruptionsAllowed, "currentHealthy", counts.CurrentHealthy)
				ev := podEvent(EventBlocked, phase, p.PodRef)
				ev.Block, ev.Message = &cur, cur.String()
				ex.emit(ev)
			}
		} else if watched {
			// The budget was deleted: try again.
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-timer.C():
			return true
		case <-changed:
		}
	}
}

// waitGone waits, on the watch, until every evicted pod (that UID) is gone.
// With SkipWaitForDeleteTimeoutSeconds, a pod deleted longer ago than that
// is no longer waited for, as in kubectl.
func (ex *execution) waitGone(ctx context.Context) error {
	ex.mu.Lock()
	pending := slices.Clone(ex.evicted)
	ex.mu.Unlock()
	skipAfter := time.Duration(ex.d.s.helper.SkipWaitForDeleteTimeoutSeconds) * time.Second
	for len(pending) > 0 {
		changed := ex.v.Changed()
		ex.checkNodes()
		now := ex.d.s.Clock.Now()
		rest := pending[:0]
		for _, p := range pending {
			if ex.v.gone(p.ref) {
				ex.mu.Lock()
				ex.progress.Gone++
				ex.mu.Unlock()
				ex.emit(podEvent(EventGone, p.phase, p.ref))
				ex.callbacks.finished(p.ref, nil)
				continue
			}
			if skipAfter > 0 {
				if cur, ok := ex.v.Pod(p.ref.Namespace, p.ref.Name); ok && cur.DeletionTimestamp != nil && now.Sub(cur.DeletionTimestamp.Time) > skipAfter {
					ex.callbacks.forget(p.ref)
					ev := podEvent(EventGone, p.phase, p.ref)
					ev.Message = fmt.Sprintf("deleted more than %s ago; no longer waited for", skipAfter)
					ex.emit(ev)
					continue
				}
			}
			rest = append(rest, p)
		}
		pending = rest
		ex.mu.Lock()
		ex.evicted = slices.Clone(pending)
		ex.mu.Unlock()
		if len(pending) == 0 {
			break
		}
		// Deletion timestamps age without an event: with a skip timeout,
		// look again every second.
		if !ex.waitChange(ctx, changed, skipAfter > 0) {
			return ctx.Err()
		}
	}
	return nil
}

// waitChange waits for the next change of the view, or a second with
// tick; false means ctx ended.
func (ex *execution) waitChange(ctx context.Context, changed <-chan struct{}, tick bool) bool {
	var c <-chan time.Time
	if tick {
		t := ex.d.s.Clock.NewTimer(time.Second)
		defer t.Stop()
		c = t.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-c:
	}
	return true
}

// evictedPod is a pod udrain waits for, with the phase it was evicted in.
type evictedPod struct {
	ref   topology.PodRef
	phase Stage
}

// apiMessage returns the message of an API error, or err's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
