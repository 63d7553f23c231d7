package eviction

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// DefaultDrainID is the ID of a drain whose DrainOptions name none.
const DefaultDrainID = "drain"

// DrainOptions are the settings of one drain.
type DrainOptions struct {
	// ID names the drain. It is the value of the cordon mark on the
	// domain's nodes (udrain.CordonedByAnnotation) and of every event and result:
	// a drain run again with the same ID continues, and a rollout with
	// another ID refuses the domain until it is uncordoned. Empty means
	// DefaultDrainID.
	ID string

	// OnEvent, if set, receives this drain's events, after
	// Options.OnEvent. Its calls are serialised per drain, not per
	// Drainer, and get the drain's context: a slow OnEvent (one that
	// writes a status to the API server) holds back only this drain. It
	// runs on the drain's goroutines, so the drain waits for it.
	OnEvent func(context.Context, Event)
}

func (o DrainOptions) id() string {
	if o.ID == "" {
		return DefaultDrainID
	}
	return o.ID
}

// Validate checks the options without a cluster: an ID that is not a
// valid label value is a *udrain.ConfigError, as Drain and Execute return
// it before any request. (A rollout with the same ID resumes the drain's
// domain, and a rollout's ID is written into taints and a Lease's name.)
func (o DrainOptions) Validate() error {
	if errs := validation.IsValidLabelValue(o.id()); len(errs) > 0 {
		return configError("DrainOptions.ID", "%q cannot name a drain (it is the cordon mark's value, and a rollout that resumes the domain needs it as a label value): %s", o.ID, strings.Join(errs, "; "))
	}
	return nil
}

// Plan reads the cluster and plans the drain of domain. It changes nothing.
// Its Planned event carries an ID of its own, PlanIDPrefix and 8 hex
// digits, new for each call, that names no drain.
func (d *Drainer) Plan(ctx context.Context, domain string) (*Plan, error) {
	if domain == "" {
		return nil, emptyDomainError("Drainer.Plan(domain)")
	}
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	return d.planFrom(ctx, v, domain, planID())
}

// PlanIDPrefix starts the ID of the Planned event of Drainer.Plan.
const PlanIDPrefix = "plan-"

// planID returns a new ID for a Plan call.
func planID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return PlanIDPrefix + hex.EncodeToString(b[:])
}

// Snapshot reads the cluster as every call of the Drainer sees it (through
// Options.Informers, or lists of its own; within Options.Namespace), for
// callers that judge it with packages topology, health and gpu themselves
// (an audit, a report of the domains). It changes nothing. The objects are
// shared with the informers' caches: do not modify them. Without
// Options.Informers, pods hold what udrain reads of them (see
// Options.Informers).
func (d *Drainer) Snapshot(ctx context.Context) (*Snapshot, error) {
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	return v.snapshot(ctx)
}

// Drain plans and executes the drain of one domain: cordon its nodes,
// evict phase 1, then phase 2, then wait until every evicted pod is gone.
// The nodes stay cordoned (Uncordon, or a rollout, makes them schedulable
// again). Every error about the domain is a *DomainError; bad options or
// an unknown domain are reported before anything changes, and so is a
// Drainer from NewReader (a *udrain.ConfigError).
func (d *Drainer) Drain(ctx context.Context, domain string, opts DrainOptions) (*Plan, *Result, error) {
	if err := d.writable("Drain"); err != nil {
		return nil, nil, err
	}
	if domain == "" {
		return nil, nil, emptyDomainError("Drainer.Drain(domain)")
	}
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	ctx = withCallSink(ctx, opts.OnEvent)
	v, err := d.startView(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer v.Stop()
	plan, err := d.planFrom(ctx, v, domain, opts.id())
	if err != nil {
		return nil, nil, err
	}
	if err := d.checkNotHeld(v, plan, opts.id()); err != nil {
		return plan, nil, err
	}
	res, err := d.execute(ctx, v, plan, opts.id(), nil, nil)
	return plan, res, err
}

// Execute carries out a plan made by Plan or NewPlan: cordon the domain's
// nodes, evict phase 1, then phase 2, then wait until every evicted pod is
// gone. It evicts only pods the plan names, by UID. A plan whose Err is
// not nil is refused with a *DomainError before anything changes; a
// Drainer from NewReader refuses every plan with a *udrain.ConfigError.
func (d *Drainer) Execute(ctx context.Context, plan *Plan, opts DrainOptions) (*Result, error) {
	if err := d.writable("Execute"); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := plan.Err(); err != nil {
		return nil, &DomainError{ID: opts.id(), Domain: plan.Domain, Stage: StagePlan, Err: err}
	}
	ctx = withCallSink(ctx, opts.OnEvent)
	v, err := d.startView(ctx)
	if err != nil {
		return nil, err
	}
	defer v.Stop()
	if err := d.checkNotHeld(v, plan, opts.id()); err != nil {
		return nil, err
	}
	return d.execute(ctx, v, plan, opts.id(), nil, nil)
}

func (d *Drainer) planFrom(ctx context.Context, v *view, domain, id string) (*Plan, error) {
	snap, err := v.planSnapshot(ctx, domain)
	if err != nil {
		return nil, err
	}
	plan, err := newPlan(domain, snap, d.s)
	if err != nil {
		return nil, err
	}
	d.events.emit(callSinkFrom(ctx), Event{Time: d.s.Clock.Now(), Type: EventPlanned, ID: id, DryRun: d.s.dryRunName(), Domain: plan.Domain,
		Progress: PodCounts{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)},
		Message: plan.withFitWarning(ctx, fmt.Sprintf("%d node(s); phase 1: %d pod(s), phase 2: %d pod(s), %d skipped, %d blocker(s)",
			len(plan.Nodes), len(plan.Phase1), len(plan.Phase2), len(plan.Skipped), len(plan.Blockers)))})
	klog.FromContext(ctx).V(2).Info("Planned", "domain", plan.Domain, "nodes", len(plan.Nodes), "phase1", len(plan.Phase1),
		"phase2", len(plan.Phase2), "skipped", len(plan.Skipped), "blockers", len(plan.Blockers))
	return plan, nil
}

// checkNotHeld refuses a domain whose nodes carry another drain's or
// rollout's cordon mark.
func (d *Drainer) checkNotHeld(v *view, plan *Plan, id string) error {
	for _, name := range plan.Nodes {
		if n, ok := v.Node(name); ok {
			if by := n.Annotations[udrain.CordonedByAnnotation]; by != "" && by != id {
				return &DomainError{ID: id, Domain: plan.Domain, Stage: StagePlan, Err: &RetryError{Reason: ReasonInProgress, Domain: plan.Domain, Node: name, By: by, ID: id}}
			}
		}
	}
	return nil
}

// execution is the state of one domain drain.
type execution struct {
	d    *Drainer
	sink *callSink // the call's OnEvent
	v    *view
	plan *Plan
	id   string
	log  klog.Logger
	// timedOut: run stopped at the drain's timeout (Helper.Timeout).
	timedOut bool

	mu       sync.Mutex
	stage    Stage
	res      *Result
	progress PodCounts
	blocks   map[string]*openBlock    // open blocks by PDB key
	handled  map[topology.PodRef]bool // pods evicted, gone or terminating already
	evicted  []evictedPod             // pods to wait for
	observe  func(Event)              // nil: none
	// nsWaiting are the pods refused because their namespace is being
	// deleted, while they wait for it (namespaceTerminating).
	nsWaiting map[topology.PodRef]bool
	// deleting, if set, learns the namespaces whose dry-run eviction
	// (preflight) was refused because they are being deleted: a pod of
	// theirs gone before its eviction went with its namespace, and no
	// event says so.
	deleting *deletedNamespaces

	// evict removes pods, the Eviction API (usingEviction) or deletion
	// (chooseEvictor); callbacks calls drain.Helper's.
	evict         Evictor
	usingEviction bool
	callbacks     *kubectlCallbacks
}

// openBlock is a block in progress: its record to be (Until not set yet),
// and the pods still waiting (the record keeps every pod that waited).
type openBlock struct {
	rec     BlockInfo
	waiting []topology.PodRef
}

// execute drains the plan's domain; observe, if set, sees each of the
// drain's events before the caller's callback does.
func (d *Drainer) execute(ctx context.Context, v *view, plan *Plan, id string, observe func(Event), deleting *deletedNamespaces) (*Result, error) {
	if err := plan.Err(); err != nil {
		return nil, &DomainError{ID: id, Domain: plan.Domain, Stage: StagePlan, Err: err}
	}
	clk := d.s.Clock
	ex := &execution{
		d: d, v: v, plan: plan, id: id, stage: StageCordon, observe: observe, deleting: deleting, sink: callSinkFrom(ctx),
		log:     klog.FromContext(ctx).WithValues("domain", plan.Domain, "id", id),
		res:     &Result{ID: id, Domain: plan.Domain, DryRun: d.s.dryRunName(), Started: clk.Now()},
		blocks:  map[string]*openBlock{},
		handled: map[topology.PodRef]bool{},
		// A client dry run asks nothing of the server; the others settle
		// it in chooseEvictor.
		usingEviction: !d.s.helper.DisableEviction,
		nsWaiting:     map[topology.PodRef]bool{},
	}
	ex.progress = PodCounts{Phase1Total: len(plan.Phase1), Phase2Total: len(plan.Phase2)}
	defer func() {
		ex.mu.Lock()
		ex.res.Pods = ex.progress
		ex.mu.Unlock()
		ex.res.Duration = udrain.Seconds(clk.Since(ex.res.Started))
		slices.SortFunc(ex.res.GroupsDisrupted, topology.CompareGroupIDs)
	}()

	switch d.s.dryRun {
	case cmdutil.DryRunClient:
		ex.dryRunClient()
		ex.res.Completed = true
		return ex.res, nil
	case cmdutil.DryRunServer:
		if err := ex.dryRunServer(ctx); err != nil {
			err = ex.stopped(err, 0)
			ex.emitStopped(err)
			return ex.res, err
		}
		ex.res.Completed = true
		return ex.res, nil
	}

	ex.log.Info("Draining domain", "nodes", len(plan.Nodes), "phase1", len(plan.Phase1), "phase2", len(plan.Phase2))
	timeout := d.s.helper.Timeout
	err := ex.run(ctx, timeout)
	if err != nil && ex.timedOut {
		err = ex.stopped(context.DeadlineExceeded, timeout)
	} else if err != nil {
		err = ex.stopped(err, 0)
	}
	ex.closeBlocks()
	if err != nil {
		ex.log.Info("Domain stopped", "stage", ex.stage, "err", err)
		ex.emitStopped(err)
		return ex.res, err
	}
	ex.res.Completed = true
	ex.log.Info("Domain drained", "took", clk.Since(ex.res.Started).Round(time.Millisecond))
	return ex.res, nil
}

// emitStopped reports that the drain stopped on err.
func (ex *execution) emitStopped(err error) {
	ex.mu.Lock()
	stage := ex.stage
	ex.mu.Unlock()
	ex.emit(Event{Type: EventDrainStopped, Err: err, Message: fmt.Sprintf("stopped at stage %s", stage)})
}

// stopped wraps why the drain stopped into a *DomainError with the pods
// still waiting and the budget blocking.
func (ex *execution) stopped(cause error, timeout time.Duration) error {
	var de *DomainError
	if errors.As(cause, &de) {
		return cause
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	e := &DomainError{ID: ex.id, Domain: ex.plan.Domain, Stage: ex.stage, Timeout: timeout, Err: cause}
	switch ex.stage {
	case StagePhase1, StagePhase2:
		for _, p := range ex.plan.Pods() {
			if !ex.handled[p.PodRef] && !ex.v.gone(p.PodRef) {
				e.Pending = append(e.Pending, p.PodRef)
			}
		}
	case StageWaitGone:
		for _, p := range ex.evicted {
			if !ex.v.gone(p.ref) {
				e.Pending = append(e.Pending, p.ref)
			}
		}
	}
	for _, p := range e.Pending {
		if ex.nsWaiting[p] && !slices.Contains(e.deletedNamespaces, p.Namespace) {
			e.deletedNamespaces = append(e.deletedNamespaces, p.Namespace)
		}
	}
	var longest *openBlock
	for _, ob := range ex.blocks {
		if longest == nil || ob.rec.Since.Before(longest.rec.Since) {
			longest = ob
		}
	}
	if longest != nil {
		info := BlockInfo{Reason: BlockRefused, BudgetRef: longest.rec.BudgetRef, Since: longest.rec.Since, Pods: slices.Clone(longest.waiting)}
		ex.budgetCounts(&info)
		e.Block = &info
	}
	return e
}

func (ex *execution) setStage(s Stage) {
	ex.mu.Lock()
	ex.stage = s
	ex.mu.Unlock()
}

func (ex *execution) run(parent context.Context, timeout time.Duration) (err error) {
	if err := ex.chooseEvictor(parent); err != nil {
		return err
	}
	if err := ex.preflight(parent); err != nil {
		return err
	}
	if err := ex.cordon(parent, false); err != nil {
		return err
	}
	// The drain's timeout (Helper.Timeout) counts from the cordon, as
	// kubectl's counts from its evictions: it bounds the evictions and
	// the wait for the pods to go, not the discovery, preflight and
	// cordon before them.
	ctx := parent
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, timeout)
		defer cancel()
		defer func() {
			ex.timedOut = err != nil && ctx.Err() != nil && parent.Err() == nil && errors.Is(err, ctx.Err())
		}()
	}
	clk := ex.d.s.Clock
	for _, ph := range []struct {
		phase    Stage
		pods     []PlannedPod
		duration *udrain.Seconds
	}{{StagePhase1, ex.plan.Phase1, &ex.res.Phase1Duration}, {StagePhase2, ex.plan.Phase2, &ex.res.Phase2Duration}} {
		ex.setStage(ph.phase)
		start := clk.Now()
		ex.emit(Event{Type: EventPhaseStarted, Stage: ph.phase, Message: fmt.Sprintf("%s: %d pod(s)", ph.phase.phaseWords(), len(ph.pods))})
		if err := ex.evictAll(ctx, ph.phase, ph.pods); err != nil {
			return err
		}
		*ph.duration = udrain.Seconds(clk.Since(start))
		ex.checkNodes()
		ex.emit(Event{Type: EventPhaseDone, Stage: ph.phase, Message: fmt.Sprintf("%s done: every pod evicted", ph.phase.phaseWords())})
	}
	ex.setStage(StageWaitGone)
	if err := ex.waitGone(ctx); err != nil {
		return err
	}
	ex.emit(Event{Type: EventDrained, Message: "every evicted pod is gone"})
	return nil
}

// emit sends an event of this drain: its ID, dry-run mark, domain and
// progress are filled in.
func (ex *execution) emit(ev Event) {
	ex.mu.Lock()
	ev.Progress = ex.progress
	ex.mu.Unlock()
	if ev.Time.IsZero() {
		ev.Time = ex.d.s.Clock.Now()
	}
	ev.ID, ev.Domain, ev.DryRun = ex.id, ex.plan.Domain, ex.d.s.dryRunName()
	if ex.observe != nil {
		ex.observe(ev)
	}
	ex.d.events.emit(ex.sink, ev)
}

// podEvent is an event about pod p in phase.
func podEvent(t EventType, phase Stage, p topology.PodRef) Event {
	return Event{Type: t, Stage: phase, Pod: &p, Node: p.Node}
}

// checkNodes reports the plan's nodes that have been deleted since the
// drain began.
func (ex *execution) checkNodes() {
	for _, name := range ex.plan.Nodes {
		if _, ok := ex.v.Node(name); !ok {
			ex.nodeGone(name)
		}
	}
}

func (ex *execution) nodeGone(name string) {
	ex.mu.Lock()
	if slices.Contains(ex.res.NodesGone, name) {
		ex.mu.Unlock()
		return
	}
	ex.res.NodesGone = append(ex.res.NodesGone, name)
	ex.mu.Unlock()
	ex.log.Info("Node deleted during the drain", "node", name)
	ex.emit(Event{Type: EventNodeGone, Node: name, Message: "node deleted during the drain; its pods are still evicted and waited for (the pod garbage collector removes pods of deleted nodes)"})
}

// sleep waits d on the Drainer's clock; false means ctx ended first.
func sleep(ctx context.Context, s *settings, d time.Duration) bool {
	t := s.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
