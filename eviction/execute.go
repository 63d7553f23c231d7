package eviction

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// CordonedByAnnotation marks nodes that udrain cordoned, so that a rollout
// uncordons those and leaves alone nodes someone else cordoned.
const CordonedByAnnotation = "udrain.dev/cordoned-by"

// PhaseResult counts what happened to one phase's pods.
type PhaseResult struct {
	// Pods is the number of pods the plan put in the phase.
	Pods int `json:"pods"`
	// Evicted counts evictions (or deletions) the API accepted.
	Evicted int `json:"evicted"`
	// AlreadyGone counts pods that were gone before udrain evicted them.
	AlreadyGone int `json:"alreadyGone"`
	// AlreadyTerminating counts pods that were being deleted already and
	// were only waited on.
	AlreadyTerminating int `json:"alreadyTerminating"`
	// Duration is the time from the phase's start to its last eviction.
	Duration time.Duration `json:"duration"`
}

// BlockRecord is one stretch of time a PDB refused a domain's evictions.
type BlockRecord struct {
	Namespace string        `json:"namespace"`
	PDB       string        `json:"pdb"`
	Since     time.Time     `json:"since"`
	Duration  time.Duration `json:"duration"`
	// Pods are the pods that waited on the budget during the block.
	Pods []string `json:"pods"`
}

// openBlock is a block in progress: its record, and the pods still
// waiting (the record keeps every pod that waited).
type openBlock struct {
	rec     BlockRecord
	waiting []string
}

// DryRunOutcome is what a dry run found for one pod.
type DryRunOutcome struct {
	Pod   string `json:"pod"`
	Phase Phase  `json:"phase"`
	// Outcome is "would evict", "would delete", "blocked by PDB ns/name"
	// or the API's error.
	Outcome string `json:"outcome"`
}

// Result is what draining one domain did.
type Result struct {
	Domain string `json:"domain"`
	// DryRun is "client" or "server" for dry runs, empty otherwise.
	DryRun string `json:"dryRun,omitempty"`
	// Cordoned lists the nodes udrain cordoned; AlreadyCordoned those that
	// were cordoned before it came.
	Cordoned        []string `json:"cordoned,omitempty"`
	AlreadyCordoned []string `json:"alreadyCordoned,omitempty"`
	// NodesGone lists nodes deleted while the domain drained.
	NodesGone []string      `json:"nodesGone,omitempty"`
	Phase1    PhaseResult   `json:"phase1"`
	Phase2    PhaseResult   `json:"phase2"`
	Blocks    []BlockRecord `json:"blocks,omitempty"`
	// GroupsDisrupted names the groups that lost pods ("namespace/name").
	GroupsDisrupted []string        `json:"groupsDisrupted,omitempty"`
	DryRunOutcomes  []DryRunOutcome `json:"dryRunOutcomes,omitempty"`
	Started         time.Time       `json:"started"`
	Duration        time.Duration   `json:"duration"`
}

// LongestBlock returns the longest block, or false if nothing blocked.
func (r *Result) LongestBlock() (BlockRecord, bool) {
	var best BlockRecord
	found := false
	for _, b := range r.Blocks {
		if !found || b.Duration > best.Duration {
			best, found = b, true
		}
	}
	return best, found
}

// Drain plans and executes the drain of one domain.
func (d *Drainer) Drain(ctx context.Context, domain string) (*Plan, *Result, error) {
	v, err := d.startView(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer v.stop()
	plan, err := d.planFrom(ctx, v, domain)
	if err != nil {
		return nil, nil, err
	}
	res, err := d.execute(ctx, v, plan, "drain")
	return plan, res, err
}

// Plan lists the cluster and plans the drain of domain. It changes nothing.
func (d *Drainer) Plan(ctx context.Context, domain string) (*Plan, error) {
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.stop()
	return d.planFrom(ctx, v, domain)
}

func (d *Drainer) planFrom(ctx context.Context, v *view, domain string) (*Plan, error) {
	snap, err := v.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := newPlan(domain, snap, d.s)
	if err != nil {
		return nil, err
	}
	em := &emitter{fn: d.s.OnEvent}
	em.emit(Event{Time: d.s.Clock.Now(), Type: EventPlanned, Domain: plan.Domain,
		Progress: Progress{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)},
		Message: fmt.Sprintf("%d node(s); phase 1: %d pod(s), phase 2: %d pod(s), %d skipped, %d blocker(s)",
			len(plan.Nodes), len(plan.Phase1), len(plan.Phase2), len(plan.Skipped), len(plan.Blockers))})
	return plan, nil
}

// Execute carries out a plan: cordon the domain's nodes, evict phase 1, then
// phase 2, then wait until every evicted pod is gone. It evicts only pods
// the plan names, by UID. It refuses a plan whose Err is not nil before
// touching anything.
func (d *Drainer) Execute(ctx context.Context, plan *Plan) (*Result, error) {
	if err := plan.Err(); err != nil {
		return nil, err
	}
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.stop()
	return d.execute(ctx, v, plan, "drain")
}

// execution is the state of one domain drain.
type execution struct {
	d    *Drainer
	v    *view
	plan *Plan
	em   *emitter
	log  klog.Logger

	mark string // value of CordonedByAnnotation

	mu       sync.Mutex
	res      *Result
	progress Progress
	blocks   map[string]*openBlock // open blocks by PDB key
	evicted  []PlannedPod          // pods to wait for
}

func (d *Drainer) execute(ctx context.Context, v *view, plan *Plan, cordonMark string) (*Result, error) {
	if err := plan.Err(); err != nil {
		return nil, err
	}
	clk := d.s.Clock
	ex := &execution{
		d: d, v: v, plan: plan, em: &emitter{fn: d.s.OnEvent}, mark: cordonMark,
		log:    klog.FromContext(ctx).WithValues("domain", plan.Domain),
		res:    &Result{Domain: plan.Domain, Started: clk.Now()},
		blocks: map[string]*openBlock{},
	}
	ex.progress = Progress{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)}
	ex.res.Phase1.Pods, ex.res.Phase2.Pods = len(plan.Phase1), len(plan.Phase2)
	for _, g := range plan.Groups {
		ex.res.GroupsDisrupted = append(ex.res.GroupsDisrupted, g.ID.String())
	}
	defer func() { ex.res.Duration = clk.Since(ex.res.Started) }()

	switch d.s.dryRun {
	case cmdutil.DryRunClient:
		ex.res.DryRun = "client"
		ex.dryRunClient()
		return ex.res, nil
	case cmdutil.DryRunServer:
		ex.res.DryRun = "server"
		return ex.res, ex.dryRunServer(ctx)
	}

	runCtx := ctx
	if t := d.s.helper.Timeout; t > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	err := ex.run(runCtx)
	if err != nil && ctx.Err() == nil && runCtx.Err() != nil {
		err = ex.timeoutError()
	}
	ex.closeBlocks()
	return ex.res, err
}

func (ex *execution) run(ctx context.Context) error {
	if err := ex.preflight(ctx); err != nil {
		return err
	}
	if err := ex.cordon(ctx, false); err != nil {
		return err
	}
	clk := ex.d.s.Clock
	for _, ph := range []struct {
		phase Phase
		pods  []PlannedPod
		res   *PhaseResult
	}{{Phase1, ex.plan.Phase1, &ex.res.Phase1}, {Phase2, ex.plan.Phase2, &ex.res.Phase2}} {
		start := clk.Now()
		ex.emit(Event{Type: EventPhaseStarted, Phase: ph.phase, Message: fmt.Sprintf("%s: %d pod(s)", ph.phase, len(ph.pods))})
		if err := ex.evictAll(ctx, ph.phase, ph.pods, ph.res); err != nil {
			return err
		}
		ph.res.Duration = clk.Since(start)
		ex.checkNodes()
		ex.emit(Event{Type: EventPhaseDone, Phase: ph.phase, Message: fmt.Sprintf("%s done: every pod evicted", ph.phase)})
	}
	if err := ex.waitGone(ctx); err != nil {
		return err
	}
	ex.emit(Event{Type: EventDrained, Message: "every evicted pod is gone"})
	return nil
}

func (ex *execution) emit(ev Event) {
	ex.mu.Lock()
	ev.Progress = ex.progress
	ex.mu.Unlock()
	if ev.Time.IsZero() {
		ev.Time = ex.d.s.Clock.Now()
	}
	ev.Domain = ex.plan.Domain
	ex.em.emit(ev)
}

// preflight asks the API server, with dry-run requests that change
// nothing, whether udrain may cordon the domain's nodes and evict (or
// delete) its pods in each namespace, so that a missing permission stops
// the drain before a node is cordoned.
func (ex *execution) preflight(ctx context.Context) error {
	denied := func(err error) bool {
		return apierrors.IsForbidden(err) && !hasBudgetCause(err) || apierrors.IsUnauthorized(err)
	}
	for _, name := range ex.plan.Nodes {
		if _, ok := ex.v.node(name); !ok {
			continue
		}
		// An empty patch: authorization is checked all the same, and
		// nothing changes even where dry-run is not honoured (fakes).
		_, err := ex.d.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte("{}"), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if denied(err) {
			return &PermissionError{Err: err}
		}
		break
	}
	evict := ex.evictor()
	checked := map[string]bool{}
	for _, p := range ex.plan.Pods() {
		if p.Terminating || checked[p.Namespace] || ex.v.gone(p) {
			continue
		}
		checked[p.Namespace] = true
		if err := evict.Evict(ctx, p, ex.deleteOptions(p, true)); denied(err) {
			return &PermissionError{Err: err}
		}
	}
	return nil
}

// cordon marks the domain's nodes unschedulable, recording that udrain did
// it; with dryRun the API only validates the change.
func (ex *execution) cordon(ctx context.Context, dryRun bool) error {
	const (
		skip = iota
		cordoned
		already
		gone
	)
	outcome := make([]int, len(ex.plan.Nodes))
	var todo []string
	var idx []int
	for i, name := range ex.plan.Nodes {
		n, ok := ex.v.node(name)
		switch {
		case !ok:
			outcome[i] = gone
		case n.Spec.Unschedulable:
			if _, ours := n.Annotations[CordonedByAnnotation]; !ours {
				outcome[i] = already
			}
		default:
			todo, idx = append(todo, name), append(idx, i)
		}
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{CordonedByAnnotation: ex.mark}},
		"spec":     map[string]any{"unschedulable": true},
	})
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err := forEachNode(ctx, ex.d.s.Concurrency, todo, func(ctx context.Context, j int, name string) error {
		err := ex.retry(ctx, "cordon node "+name, func() error {
			_, err := ex.d.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
			return err
		})
		switch {
		case apierrors.IsNotFound(err):
			outcome[idx[j]] = gone
		case err != nil:
			return fmt.Errorf("cordoning node %s: %w", name, err)
		default:
			outcome[idx[j]] = cordoned
		}
		return nil
	})
	// Reported in the plan's order, whatever the order of the answers;
	// nodes cordoned before an error are reported too.
	for i, name := range ex.plan.Nodes {
		switch outcome[i] {
		case gone:
			ex.nodeGone(name)
		case already:
			ex.res.AlreadyCordoned = append(ex.res.AlreadyCordoned, name)
		case cordoned:
			ex.res.Cordoned = append(ex.res.Cordoned, name)
			ex.emit(Event{Type: EventCordoned, Node: name, Message: "cordoned"})
		}
	}
	return err
}

// checkNodes reports the plan's nodes that have been deleted since the
// drain began.
func (ex *execution) checkNodes() {
	for _, name := range ex.plan.Nodes {
		if _, ok := ex.v.node(name); !ok {
			ex.nodeGone(name)
		}
	}
}

func (ex *execution) nodeGone(name string) {
	ex.mu.Lock()
	if contains(ex.res.NodesGone, name) {
		ex.mu.Unlock()
		return
	}
	ex.res.NodesGone = append(ex.res.NodesGone, name)
	ex.mu.Unlock()
	ex.emit(Event{Type: EventNodeGone, Node: name, Message: "node deleted during the drain; its pods are still evicted and waited for (the pod garbage collector removes pods of deleted nodes)"})
}

// retry runs fn until it succeeds, fails for good, or ctx ends, retrying
// transient API errors with the backoff.
func (ex *execution) retry(ctx context.Context, what string, fn func() error) error {
	return retryTransient(ctx, ex.d.s, ex.emit, what, fn)
}

// retryTransient retries fn while it fails with a transient API error (an
// API server restarting, overloaded or unreachable), reporting each retry.
func retryTransient(ctx context.Context, s *settings, emit func(Event), what string, fn func() error) error {
	b := s.Backoff
	for {
		err := fn()
		if err == nil || classifyEvictionError(err) != outcomeTransient || ctx.Err() != nil {
			return err
		}
		delay := b.Step()
		emit(Event{Type: EventRetrying, Err: err, Message: fmt.Sprintf("%s: %v; retrying in %s", what, err, delay.Round(time.Millisecond))})
		t := s.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
}

func (ex *execution) sleep(ctx context.Context, d time.Duration) bool {
	t := ex.d.s.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// evictAll evicts the pods of one phase concurrently and returns when every
// one of them is evicted, gone, or was terminating already.
func (ex *execution) evictAll(ctx context.Context, phase Phase, pods []PlannedPod, res *PhaseResult) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ex.d.s.Concurrency)
	for _, p := range pods {
		g.Go(func() error {
			kind, err := ex.evictOne(gctx, phase, p)
			if err != nil {
				return err
			}
			ex.mu.Lock()
			switch kind {
			case outcomeAccepted:
				res.Evicted++
			case outcomeGone:
				res.AlreadyGone++
			default:
				res.AlreadyTerminating++
			}
			if phase == Phase1 {
				ex.progress.Phase1Evicted++
			} else {
				ex.progress.Phase2Evicted++
			}
			if kind != outcomeGone {
				ex.evicted = append(ex.evicted, p)
			} else {
				ex.progress.Gone++
			}
			ex.mu.Unlock()
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

func (ex *execution) evictor() Evictor {
	if ex.d.s.Evictor != nil {
		return ex.d.s.Evictor
	}
	if ex.d.s.helper.DisableEviction {
		return PodDeletion(ex.d.client)
	}
	return EvictionAPI(ex.d.client)
}

// kubectlPod builds the pod handed to drain.Helper's callbacks.
func (ex *execution) kubectlPod(p PlannedPod) *corev1.Pod {
	if cur, ok := ex.v.pod(p.Namespace, p.Name); ok && cur.UID == p.UID {
		return cur.DeepCopy()
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
}

// evictOne evicts one pod, waiting out budgets and retrying transient
// errors, and says how it ended: accepted, gone, or waited (terminating).
func (ex *execution) evictOne(ctx context.Context, phase Phase, p PlannedPod) (outcomeKind, error) {
	if p.Terminating {
		return outcomeWaited, nil
	}
	if ex.v.gone(p) {
		return outcomeGone, nil
	}
	h := &ex.d.s.helper
	usingEviction := !h.DisableEviction
	if h.OnPodDeletionOrEvictionStarted != nil {
		h.OnPodDeletionOrEvictionStarted(ex.kubectlPod(p), usingEviction)
	}
	finished := func(err error) {
		if h.OnPodDeletionOrEvictionFinished != nil {
			h.OnPodDeletionOrEvictionFinished(ex.kubectlPod(p), usingEviction, err)
		}
	}
	ex.emit(Event{Type: EventEvicting, Phase: phase, Pod: p.Key()})
	backoff := ex.d.s.Backoff
	evict := ex.evictor()
	var blocked *BlockInfo
	for {
		// Never start an eviction after a cancel: a stopped drain must
		// stop evicting, whatever the transport does with the context.
		if err := ctx.Err(); err != nil {
			finished(err)
			return 0, err
		}
		err := evict.Evict(ctx, p, ex.deleteOptions(p, false))
		if err != nil && ctx.Err() != nil {
			finished(ctx.Err())
			return 0, ctx.Err()
		}
		kind := classifyEvictionError(err)
		if kind == outcomeConflict {
			kind = ex.resolveConflict(ctx, p)
		}
		switch kind {
		case outcomeAccepted:
			if blocked != nil {
				ex.unblock(p, blocked, phase)
			}
			ex.emit(Event{Type: EventEvicted, Phase: phase, Pod: p.Key()})
			finished(nil)
			return outcomeAccepted, nil
		case outcomeGone:
			if blocked != nil {
				ex.unblock(p, blocked, phase)
			}
			ex.emit(Event{Type: EventGone, Phase: phase, Pod: p.Key(), Message: "gone before eviction"})
			finished(nil)
			return outcomeGone, nil
		case outcomeMultiPDB:
			err := &MultiplePDBsError{Namespace: p.Namespace, Pod: p.Name, PDBs: p.PDBs}
			finished(err)
			return 0, err
		case outcomeFatal:
			err := &EvictionError{Namespace: p.Namespace, Pod: p.Name, Err: err}
			finished(err)
			return 0, err
		case outcomeBlocked:
			blocked = ex.block(p, phase, err, blocked)
			if !ex.waitForBudget(ctx, p, blocked, &backoff) {
				finished(ctx.Err())
				return 0, ctx.Err()
			}
		default: // transient
			delay := backoff.Step()
			ex.emit(Event{Type: EventRetrying, Phase: phase, Pod: p.Key(), Err: err,
				Message: fmt.Sprintf("evicting: %v; retrying in %s", err, delay.Round(time.Millisecond))})
			if !ex.sleep(ctx, delay) {
				finished(ctx.Err())
				return 0, ctx.Err()
			}
		}
	}
}

// resolveConflict decides a 409: the UID precondition failed because the
// pod was replaced (gone), or something else conflicted (retry).
func (ex *execution) resolveConflict(ctx context.Context, p PlannedPod) outcomeKind {
	cur, err := ex.d.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && cur.UID != p.UID) {
		return outcomeGone
	}
	return outcomeTransient
}

// blockInfo reads the budget that refuses p from the watch cache.
func (ex *execution) blockInfo(p PlannedPod, apiErr error) BlockInfo {
	info := BlockInfo{Namespace: p.Namespace}
	if len(p.PDBs) > 0 {
		info.PDB = p.PDBs[0]
	}
	if apiErr != nil {
		info.Message = budgetMessage(apiErr)
	}
	ex.budgetCounts(&info)
	return info
}

// budgetCounts fills in the counts of info's budget from the watch.
func (ex *execution) budgetCounts(info *BlockInfo) {
	if pdb, ok := ex.v.pdb(info.Namespace, info.PDB); ok {
		info.DisruptionsAllowed = pdb.Status.DisruptionsAllowed
		info.CurrentHealthy = pdb.Status.CurrentHealthy
		info.DesiredHealthy = pdb.Status.DesiredHealthy
		info.ExpectedPods = pdb.Status.ExpectedPods
	}
}

// block records that p is refused by its budget and reports it when the
// block is new or the budget's counts changed.
func (ex *execution) block(p PlannedPod, phase Phase, apiErr error, prev *BlockInfo) *BlockInfo {
	info := ex.blockInfo(p, apiErr)
	key := info.Namespace + "/" + info.PDB
	now := ex.d.s.Clock.Now()
	ex.mu.Lock()
	ob := ex.blocks[key]
	if ob == nil {
		ob = &openBlock{rec: BlockRecord{Namespace: info.Namespace, PDB: info.PDB, Since: now}}
		ex.blocks[key] = ob
	}
	if !contains(ob.rec.Pods, p.Key()) {
		ob.rec.Pods = append(ob.rec.Pods, p.Key())
	}
	if !contains(ob.waiting, p.Key()) {
		ob.waiting = append(ob.waiting, p.Key())
	}
	info.Since = ob.rec.Since
	info.Pods = append([]string(nil), ob.waiting...)
	ex.mu.Unlock()
	if prev == nil || countsChanged(*prev, info) {
		ex.emit(Event{Type: EventBlocked, Phase: phase, Pod: p.Key(), Block: &info, Message: info.String()})
	}
	return &info
}

func countsChanged(a, b BlockInfo) bool {
	return a.DisruptionsAllowed != b.DisruptionsAllowed || a.CurrentHealthy != b.CurrentHealthy ||
		a.DesiredHealthy != b.DesiredHealthy || a.ExpectedPods != b.ExpectedPods || a.PDB != b.PDB
}

func (ex *execution) unblock(p PlannedPod, info *BlockInfo, phase Phase) {
	key := info.Namespace + "/" + info.PDB
	now := ex.d.s.Clock.Now()
	ex.mu.Lock()
	if ob := ex.blocks[key]; ob != nil {
		ob.waiting = remove(ob.waiting, p.Key())
		if len(ob.waiting) == 0 {
			ob.rec.Duration = now.Sub(ob.rec.Since)
			ex.res.Blocks = append(ex.res.Blocks, ob.rec)
			delete(ex.blocks, key)
		}
	}
	ex.mu.Unlock()
	cur := *info
	ex.emit(Event{Type: EventUnblocked, Phase: phase, Pod: p.Key(), Block: &cur,
		Message: fmt.Sprintf("PodDisruptionBudget %s/%s let it go after %s", info.Namespace, info.PDB, now.Sub(info.Since).Round(time.Second))})
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
		rec.Duration = now.Sub(rec.Since)
		ex.res.Blocks = append(ex.res.Blocks, rec)
	}
	ex.blocks = map[string]*openBlock{}
}

// waitForBudget waits until the blocking budget allows a disruption (seen on
// the watch), the pod is gone, or the backoff delay passes; it reports
// progress when the budget's counts change. False means ctx ended.
func (ex *execution) waitForBudget(ctx context.Context, p PlannedPod, info *BlockInfo, backoff interface{ Step() time.Duration }) bool {
	timer := ex.d.s.Clock.NewTimer(backoff.Step())
	defer timer.Stop()
	for {
		changed := ex.v.changed.wait()
		if ex.v.gone(p) {
			return true
		}
		if pdb, ok := ex.v.pdb(p.Namespace, info.PDB); ok {
			if pdb.Status.DisruptionsAllowed > 0 && pdb.Status.ObservedGeneration >= pdb.Generation {
				return true
			}
			cur := ex.blockInfo(p, nil)
			if countsChanged(*info, cur) {
				cur.Message, cur.Since, cur.Pods = info.Message, info.Since, info.Pods
				*info = cur
				ex.emit(Event{Type: EventBlocked, Pod: p.Key(), Block: &cur, Message: cur.String()})
			}
		} else if info.PDB != "" {
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
	pending := append([]PlannedPod(nil), ex.evicted...)
	ex.mu.Unlock()
	skipAfter := time.Duration(ex.d.s.helper.SkipWaitForDeleteTimeoutSeconds) * time.Second
	for len(pending) > 0 {
		changed := ex.v.changed.wait()
		ex.checkNodes()
		now := ex.d.s.Clock.Now()
		rest := pending[:0]
		for _, p := range pending {
			if ex.v.gone(p) {
				ex.mu.Lock()
				ex.progress.Gone++
				ex.mu.Unlock()
				ex.emit(Event{Type: EventGone, Pod: p.Key()})
				continue
			}
			if skipAfter > 0 {
				if cur, ok := ex.v.pod(p.Namespace, p.Name); ok && cur.DeletionTimestamp != nil && now.Sub(cur.DeletionTimestamp.Time) > skipAfter {
					ex.emit(Event{Type: EventGone, Pod: p.Key(), Message: fmt.Sprintf("deleted more than %s ago; no longer waited for", skipAfter)})
					continue
				}
			}
			rest = append(rest, p)
		}
		pending = rest
		if len(pending) == 0 {
			break
		}
		// Deletion timestamps age without an event: with a skip timeout,
		// look again every second.
		var tick <-chan time.Time
		var t interface{ Stop() bool }
		if skipAfter > 0 {
			tt := ex.d.s.Clock.NewTimer(time.Second)
			t, tick = tt, tt.C()
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-tick:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			ex.mu.Lock()
			ex.evicted = pending
			ex.mu.Unlock()
			return ctx.Err()
		}
	}
	ex.mu.Lock()
	ex.evicted = nil
	ex.mu.Unlock()
	return nil
}

// timeoutError explains a drain that ran out of time.
func (ex *execution) timeoutError() error {
	now := ex.d.s.Clock.Now()
	ex.mu.Lock()
	defer ex.mu.Unlock()
	var longest *openBlock
	for _, ob := range ex.blocks {
		if longest == nil || ob.rec.Since.Before(longest.rec.Since) {
			longest = ob
		}
	}
	if longest != nil {
		info := BlockInfo{Namespace: longest.rec.Namespace, PDB: longest.rec.PDB, Since: longest.rec.Since, Pods: longest.waiting}
		ex.budgetCounts(&info)
		return &BlockedError{Domain: ex.plan.Domain, Block: info, For: now.Sub(longest.rec.Since)}
	}
	te := &TimeoutError{Domain: ex.plan.Domain, Timeout: ex.d.s.helper.Timeout, Phase: Phase2}
	if ex.progress.Phase1Evicted < ex.progress.Phase1Total {
		te.Phase = Phase1
	}
	for _, p := range ex.plan.Pods() {
		if !ex.v.gone(p) {
			te.Waiting = append(te.Waiting, p.Key())
		}
	}
	return te
}

// dryRunClient reports what would happen without calling the API.
func (ex *execution) dryRunClient() {
	verb := "would evict"
	if ex.d.s.helper.DisableEviction {
		verb = "would delete"
	}
	for _, ph := range []struct {
		phase Phase
		pods  []PlannedPod
	}{{Phase1, ex.plan.Phase1}, {Phase2, ex.plan.Phase2}} {
		for _, p := range ph.pods {
			out := verb
			if p.Terminating {
				out = "already terminating; would wait"
			}
			ex.res.DryRunOutcomes = append(ex.res.DryRunOutcomes, DryRunOutcome{Pod: p.Key(), Phase: ph.phase, Outcome: out})
			ex.emit(Event{Type: EventDryRun, Phase: ph.phase, Pod: p.Key(), Message: out})
		}
	}
}

// dryRunServer sends every request with dryRun=All, once, without waiting:
// the API server validates cordons and checks each eviction against the
// budgets as they are now.
func (ex *execution) dryRunServer(ctx context.Context) error {
	if err := ex.cordon(ctx, true); err != nil {
		return err
	}
	evict := ex.evictor()
	for _, ph := range []struct {
		phase Phase
		pods  []PlannedPod
	}{{Phase1, ex.plan.Phase1}, {Phase2, ex.plan.Phase2}} {
		for _, p := range ph.pods {
			var out string
			if p.Terminating {
				out = "already terminating; would wait"
			} else {
				err := evict.Evict(ctx, p, ex.deleteOptions(p, true))
				switch classifyEvictionError(err) {
				case outcomeAccepted:
					out = "would evict"
					if ex.d.s.helper.DisableEviction {
						out = "would delete"
					}
				case outcomeBlocked:
					info := ex.blockInfo(p, err)
					out = "blocked by " + info.String()
				case outcomeGone:
					out = "already gone"
				default:
					if ctx.Err() != nil {
						return ctx.Err()
					}
					out = err.Error()
				}
			}
			ex.res.DryRunOutcomes = append(ex.res.DryRunOutcomes, DryRunOutcome{Pod: p.Key(), Phase: ph.phase, Outcome: out})
			ex.emit(Event{Type: EventDryRun, Phase: ph.phase, Pod: p.Key(), Message: out})
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func remove(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
