package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/e2e/fixture"
)

// Side is one tool's part of a scenario.
type Side struct {
	Tool string `json:"tool"`
	// Wall is the drain's or rollout's duration as the tool ran it.
	Wall time.Duration `json:"wall"`
	// HealthyAfter is the start to the moment every group was healthy
	// again and the PDBs had caught up, polled every second (rollouts).
	HealthyAfter time.Duration `json:"healthyAfter,omitempty"`
	Requests     Requests      `json:"requests"`
	// EvictedPods is the number of evictions the API server accepted
	// (from the request count); PodsTerminated the distinct pods the
	// recording saw terminating, whoever deleted them.
	EvictedPods    int `json:"evictedPods"`
	PodsTerminated int `json:"podsTerminated"`
	// RequestsPerEvictedPod is all API requests over EvictedPods.
	RequestsPerEvictedPod float64 `json:"requestsPerEvictedPod"`
	Safety                Safety  `json:"safety"`
	// Err is why the tool did not finish, if it did not.
	Err string `json:"err,omitempty"`
	// Memory is the drainer process's (udrain only).
	Memory *Memory `json:"memory,omitempty"`
	// Breakdown splits a udrain rollout's time against its lower bound.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
	// Nodes is kubectl's time per node.
	Nodes []NodeTimes `json:"nodes,omitempty"`
	// Unblocked is, in the API-cost scenario, the time from the held
	// group being healthy again (the budget allowing a disruption soon
	// after) to the blocked leader seen terminating; -1 if not seen.
	Unblocked time.Duration `json:"unblocked,omitempty"`
	// UnblockedAfterBudget is, in the API-cost scenario, the time from the
	// PDB's status allowing a disruption again (seen on the harness's
	// watch of it) to the blocked leader seen terminating (on the pod
	// recording's watch): the reaction to the budget freeing; -1 if not
	// seen.
	UnblockedAfterBudget time.Duration `json:"unblockedAfterBudget,omitempty"`
	// Audit checks Requests against the API server's audit log.
	Audit *AuditCheck `json:"audit,omitempty"`
	// WatchBytes is the bytes read from watch responses (the drainer's
	// informers' streams).
	WatchBytes int64 `json:"watchBytes,omitempty"`
	// Metrics sizes udrain's Prometheus metrics after the run (udrain
	// only).
	Metrics *MetricsSize `json:"metrics,omitempty"`
}

// leaderTerminating returns when the recording first saw the group's
// leader terminating.
func leaderTerminating(o *Observation, g GroupKey) (time.Time, bool) {
	for _, p := range o.Evicted {
		if p.Group == g && p.Leader {
			return p.At, true
		}
	}
	return time.Time{}, false
}

// unblockDelay is the time from the held group healthy again (after
// release) to the drained group's leader seen terminating, in the
// recording; -1 if either is not seen.
func unblockDelay(o *Observation, held, drained GroupKey, release time.Time) time.Duration {
	healthy, ok := o.HealthyAgain(held, release)
	if !ok {
		return -1
	}
	if at, ok := leaderTerminating(o, drained); ok {
		return at.Sub(healthy)
	}
	return -1
}

// unblockAfterBudget is the time from the budget allowing a disruption
// (at or after release) to the drained group's leader seen terminating;
// -1 if either is not seen.
func unblockAfterBudget(o *Observation, b *BudgetWatch, drained GroupKey, release time.Time) time.Duration {
	freed, ok := b.AllowedAfter(release)
	if !ok {
		return -1
	}
	if at, ok := leaderTerminating(o, drained); ok {
		// Two watches (the budget's and the pods') have no common order:
		// a leader seen terminating a little before the budget was seen
		// free reacted at once (1 ns: a delay is positive), not "not
		// seen" (-1).
		return max(at.Sub(freed), time.Nanosecond)
	}
	return -1
}

func (s *Side) finish(o *Observation, groups []GroupKey) {
	s.Safety = o.Safety(groups)
	s.Safety.WorkersBeforeLeaders = o.WorkersBeforeLeaders()
	s.EvictedPods = s.Requests.Succeeded("create", "pods/eviction")
	s.WatchBytes = s.Requests.WatchBytes()
	s.PodsTerminated = len(o.Evicted)
	if s.EvictedPods > 0 {
		s.RequestsPerEvictedPod = float64(s.Requests.Total()) / float64(s.EvictedPods)
	}
}

// Comparison is udrain and kubectl drain side by side on identical, fresh
// workloads, at the same time.
type Comparison struct {
	Run   int           `json:"run"`
	Shape Shape         `json:"shape"`
	Block time.Duration `json:"block,omitempty"`
	// UpgradeStep is the upgrade step per domain (udrain) and per node
	// (kubectl) of a rollout.
	UpgradeStep time.Duration `json:"upgradeStep,omitempty"`
	Udrain      Side          `json:"udrain"`
	Kubectl     Side          `json:"kubectl"`
	// RequestRatio is udrain's requests per evicted pod over kubectl's.
	RequestRatio float64 `json:"requestRatio"`
}

// ComparisonConfig configures the side-by-side scenarios.
type ComparisonConfig struct {
	Shape Shape
	// Block is how long another group stays unhealthy after the drains
	// start (the API scenario's PDB block).
	Block time.Duration
	// UpgradeStep is the upgrade step of the rollout scenario.
	UpgradeStep time.Duration
	// KubectlNodeTimeout is kubectl drain's --timeout per node.
	KubectlNodeTimeout time.Duration
	// Timeout bounds deployments and recoveries.
	Timeout time.Duration
}

// sides makes, deploys and starts recording two identical pools.
func (e *Env) sides(ctx context.Context, prefix string, s Shape, timeout time.Duration) (u, k *Pool, cleanup func(), err error) {
	prefix = e.poolName(prefix)
	u, k = NewPool(prefix+"-udrain", s), NewPool(prefix+"-kubectl", s)
	cleanup = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, p := range []*Pool{u, k} {
			if err := p.Delete(ctx, e.Client); err != nil {
				e.logf("cleanup of %s: %v", p.Name, err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []*Pool{u, k} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Create(ctx, e.Client, 16); err != nil {
				errs[i] = err
				return
			}
			errs[i] = p.WaitHealthy(ctx, e.Client, timeout)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	for _, p := range []*Pool{u, k} {
		if err := p.Record(ctx, e.Client); err != nil {
			cleanup()
			return nil, nil, nil, err
		}
	}
	return u, k, cleanup, nil
}

// RunAPICost drains domain 0 of identical workloads with udrain (in a child
// process) and with kubectl drain (node by node), at the same time, while
// the group in domain 1 is unhealthy for cfg.Block after the drains start,
// so each tool's phase-1 evictions are refused by the PDB for that long.
// Every API request of both drainers is counted.
func (e *Env) RunAPICost(ctx context.Context, cfg ComparisonConfig, run int) (*Comparison, error) {
	if cfg.Shape.Size < 2 {
		return nil, errors.New("the API-cost scenario needs groups of at least 2 pods (a worker is held unready)")
	}
	u, k, cleanup, err := e.sides(ctx, "bench-api", cfg.Shape, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// Make the group in domain 1 unhealthy on both sides: a worker's
	// model server "crashes" and stays down until released.
	held := map[*Pool]string{}
	heldGroup, drainedGroup := map[*Pool]GroupKey{}, map[*Pool]GroupKey{}
	for _, p := range []*Pool{u, k} {
		g, err := p.GroupIn(ctx, e.Client, 0, 1)
		if err != nil {
			return nil, err
		}
		d, err := p.GroupIn(ctx, e.Client, 0, 0)
		if err != nil {
			return nil, err
		}
		heldGroup[p], drainedGroup[p] = GroupKey{p.Workloads[0].Name, g}, GroupKey{p.Workloads[0].Name, d}
		held[p] = p.Workloads[0].WorkerName(g, 1)
		if err := fixture.HoldUnready(ctx, e.Client, p.Name, held[p], true); err != nil {
			return nil, err
		}
	}
	budgets := map[*Pool]*BudgetWatch{}
	for _, p := range []*Pool{u, k} {
		if err := e.waitBudget(ctx, p, 0, cfg.Timeout); err != nil {
			return nil, err
		}
		b, err := WatchBudget(ctx, e.Client, p.Name, p.Workloads[0].PDBName())
		if err != nil {
			return nil, err
		}
		defer b.Stop()
		budgets[p] = b
	}
	e.logf("api run %d: draining %s (udrain) and %s (kubectl), another group unhealthy for %s", run, u.Nodes.UD(0), k.Nodes.UD(0), cfg.Block)

	kclient, kcounter, kuser, err := e.countedClient(ctx, identityName(k.Name, "kubectl"))
	if err != nil {
		return nil, err
	}
	res := &Comparison{Run: run, Shape: cfg.Shape, Block: cfg.Block,
		Udrain: Side{Tool: "udrain"}, Kubectl: Side{Tool: "kubectl drain"}}
	start := time.Now()
	release := time.AfterFunc(cfg.Block, func() {
		for _, p := range []*Pool{u, k} {
			if err := fixture.HoldUnready(context.WithoutCancel(ctx), e.Client, p.Name, held[p], false); err != nil {
				e.logf("release %s: %v", held[p], err)
			}
		}
	})
	defer release.Stop()
	var wg sync.WaitGroup
	var uerr error
	var rep *DrainerReport
	var uuser string
	wg.Add(2)
	go func() {
		defer wg.Done()
		rep, uuser, uerr = e.runDrainer(ctx, u.Name, DrainerJob{Drain: u.Nodes.UD(0)})
	}()
	go func() {
		defer wg.Done()
		kd := KubectlDrainer{Client: kclient, NodeTimeout: cfg.KubectlNodeTimeout}
		nodes, err := kd.Run(ctx, k.DomainNodes(0))
		res.Kubectl.Wall, res.Kubectl.Nodes = time.Since(start), nodes
		if err != nil {
			res.Kubectl.Err = err.Error()
		}
	}()
	wg.Wait()
	if uerr != nil {
		return nil, uerr
	}
	end := time.Now()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Udrain.Wall, res.Udrain.Requests, res.Udrain.Err, res.Udrain.Memory, res.Udrain.Metrics = rep.Wall, rep.Requests, rep.Err, &rep.Memory, rep.Metrics
	res.Kubectl.Requests = kcounter.Snapshot()
	e.saveTimeline(u.Name, u, rep.Events)
	e.saveTimeline(k.Name, k, nil)
	for _, side := range []struct {
		p *Pool
		s *Side
	}{{u, &res.Udrain}, {k, &res.Kubectl}} {
		o := Observe(side.p.Recorder.Events(), ObserveOptions{UDOf: side.p.UDOf, Workloads: side.p.ObservedWorkloads(), From: start, Until: end})
		side.s.finish(o, AllGroups(side.p.ObservedWorkloads()))
		side.s.Unblocked = unblockDelay(o, heldGroup[side.p], drainedGroup[side.p], start.Add(cfg.Block))
		side.s.UnblockedAfterBudget = unblockAfterBudget(o, budgets[side.p], drainedGroup[side.p], start.Add(cfg.Block))
	}
	res.Udrain.Audit = e.audit(ctx, uuser, res.Udrain.Requests)
	res.Kubectl.Audit = e.audit(ctx, kuser, res.Kubectl.Requests)
	if res.Kubectl.RequestsPerEvictedPod > 0 {
		res.RequestRatio = res.Udrain.RequestsPerEvictedPod / res.Kubectl.RequestsPerEvictedPod
	}
	e.logf("api run %d (termination %s): udrain %d requests / %d pods (audit %s), kubectl %d / %d (audit %s): ratio %.2f; leader evicted %s after the budget freed (kubectl %s)", run, cfg.Shape.TerminateDelay,
		res.Udrain.Requests.Total(), res.Udrain.EvictedPods, res.Udrain.Audit.brief(), res.Kubectl.Requests.Total(), res.Kubectl.EvictedPods, res.Kubectl.Audit.brief(), res.RequestRatio,
		res.Udrain.UnblockedAfterBudget, res.Kubectl.UnblockedAfterBudget)
	return res, nil
}

// RunRollout rolls an upgrade over every domain of identical workloads with
// udrain (a rollout in a child process) and with kubectl drain node by node
// (cordon, drain, upgrade step, uncordon, next node), at the same time, and
// observes both from their pod recordings.
func (e *Env) RunRollout(ctx context.Context, cfg ComparisonConfig, run int) (*Comparison, error) {
	u, k, cleanup, err := e.sides(ctx, "bench-roll", cfg.Shape, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	kclient, kcounter, kuser, err := e.countedClient(ctx, identityName(k.Name, "kubectl"))
	if err != nil {
		return nil, err
	}
	res := &Comparison{Run: run, Shape: cfg.Shape, UpgradeStep: cfg.UpgradeStep,
		Udrain: Side{Tool: "udrain"}, Kubectl: Side{Tool: "kubectl drain"}}
	e.logf("rollout run %d: udrain over %d domains, kubectl over %d nodes, upgrade step %s", run, cfg.Shape.UDs, cfg.Shape.Nodes(), cfg.UpgradeStep)
	start := time.Now()
	var wg sync.WaitGroup
	var uerr error
	var rep *DrainerReport
	var uuser string
	wg.Add(2)
	go func() {
		defer wg.Done()
		rep, uuser, uerr = e.runDrainer(ctx, u.Name, DrainerJob{
			Domains: u.Domains(), RolloutID: "bench", UpgradeStep: cfg.UpgradeStep, RecoveryTimeout: cfg.Timeout})
		if uerr == nil {
			res.Udrain.HealthyAfter = e.healthyAfter(ctx, u, start, cfg.Timeout)
		}
	}()
	go func() {
		defer wg.Done()
		var nodes []string
		for d := range cfg.Shape.UDs {
			nodes = append(nodes, k.DomainNodes(d)...)
		}
		kd := KubectlDrainer{Client: kclient, NodeTimeout: cfg.KubectlNodeTimeout, Rollout: true, UpgradeStep: cfg.UpgradeStep}
		times, err := kd.Run(ctx, nodes)
		res.Kubectl.Wall, res.Kubectl.Nodes = time.Since(start), times
		if err != nil {
			res.Kubectl.Err = err.Error()
			// Leave the cluster as a user would find it after giving up:
			// uncordon the node kubectl was stuck on.
			if len(times) > 0 {
				if err := (KubectlDrainer{Client: e.Client}).Uncordon(context.WithoutCancel(ctx), times[len(times)-1].Node); err != nil {
					e.logf("uncordon %s: %v", times[len(times)-1].Node, err)
				}
			}
		}
		res.Kubectl.HealthyAfter = e.healthyAfter(ctx, k, start, cfg.Timeout)
	}()
	wg.Wait()
	if uerr != nil {
		return nil, uerr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Udrain.Wall, res.Udrain.Requests, res.Udrain.Err, res.Udrain.Memory, res.Udrain.Metrics = rep.Wall, rep.Requests, rep.Err, &rep.Memory, rep.Metrics
	res.Kubectl.Requests = kcounter.Snapshot()
	e.saveTimeline(u.Name, u, rep.Events)
	e.saveTimeline(k.Name, k, nil)
	delays := Delays{Terminate: cfg.Shape.TerminateDelay, UpgradeStep: cfg.UpgradeStep}
	for _, side := range []struct {
		p *Pool
		s *Side
	}{{u, &res.Udrain}, {k, &res.Kubectl}} {
		o := Observe(side.p.Recorder.Events(), ObserveOptions{UDOf: side.p.UDOf, Workloads: side.p.ObservedWorkloads(), From: start})
		side.s.finish(o, AllGroups(side.p.ObservedWorkloads()))
		if side.s == &res.Udrain && rep.Rollout != nil {
			b := Analyze(rep.Events, o, delays, rep.Rollout.Started, rep.Rollout.Duration.Duration())
			side.s.Breakdown = &b
		}
	}
	res.Udrain.Audit = e.audit(ctx, uuser, res.Udrain.Requests)
	res.Kubectl.Audit = e.audit(ctx, kuser, res.Kubectl.Requests)
	if res.Kubectl.RequestsPerEvictedPod > 0 {
		res.RequestRatio = res.Udrain.RequestsPerEvictedPod / res.Kubectl.RequestsPerEvictedPod
	}
	if b := res.Udrain.Breakdown; b != nil {
		e.logf("rollout run %d: udrain %s (bound %s, ratio %.2f), kubectl %s %s", run, b.Wall.Round(time.Millisecond),
			b.Bound.Round(time.Millisecond), b.Ratio, res.Kubectl.Wall.Round(time.Millisecond), res.Kubectl.Err)
	}
	return res, nil
}

// ScaleResult is a udrain rollout over a large cluster.
type ScaleResult struct {
	Shape       Shape         `json:"shape"`
	UpgradeStep time.Duration `json:"upgradeStep"`
	// Deploy is the time to create the nodes and workloads and see every
	// group healthy.
	Deploy time.Duration `json:"deploy"`
	Udrain Side          `json:"udrain"`
}

// RunScale rolls an upgrade with udrain (in a child process) over a
// cluster of shape's size and observes it.
func (e *Env) RunScale(ctx context.Context, s Shape, upgradeStep, timeout time.Duration) (*ScaleResult, error) {
	p := NewPool(e.poolName("bench-scale"), s)
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := p.Delete(ctx, e.Client); err != nil {
			e.logf("cleanup of %s: %v", p.Name, err)
		}
	}()
	res := &ScaleResult{Shape: s, UpgradeStep: upgradeStep, Udrain: Side{Tool: "udrain"}}
	e.logf("scale: creating %d nodes in %d domains and %d groups of %d pods", s.Nodes(), s.UDs, s.Groups(), s.Size)
	t := time.Now()
	if err := p.Create(ctx, e.Client, 32); err != nil {
		return nil, err
	}
	e.logf("scale: created in %s; waiting for every group to be healthy", time.Since(t).Round(time.Second))
	if err := p.WaitHealthy(ctx, e.Client, timeout); err != nil {
		return nil, err
	}
	res.Deploy = time.Since(t)
	e.logf("scale: healthy after %s; rolling", res.Deploy.Round(time.Second))
	if err := p.Record(ctx, e.Client); err != nil {
		return nil, err
	}
	start := time.Now()
	rep, user, err := e.runDrainer(ctx, p.Name, DrainerJob{Domains: p.Domains(), RolloutID: "bench", UpgradeStep: upgradeStep, RecoveryTimeout: timeout})
	if err != nil {
		return nil, err
	}
	res.Udrain.HealthyAfter = e.healthyAfter(ctx, p, start, timeout)
	e.saveTimeline(p.Name, p, rep.Events)
	res.Udrain.Wall, res.Udrain.Requests, res.Udrain.Err, res.Udrain.Memory, res.Udrain.Metrics = rep.Wall, rep.Requests, rep.Err, &rep.Memory, rep.Metrics
	o := Observe(p.Recorder.Events(), ObserveOptions{UDOf: p.UDOf, Workloads: p.ObservedWorkloads(), From: start})
	res.Udrain.finish(o, AllGroups(p.ObservedWorkloads()))
	res.Udrain.Audit = e.audit(ctx, user, res.Udrain.Requests)
	if rep.Rollout != nil {
		b := Analyze(rep.Events, o, Delays{Terminate: s.TerminateDelay, UpgradeStep: upgradeStep}, rep.Rollout.Started, rep.Rollout.Duration.Duration())
		res.Udrain.Breakdown = &b
		e.logf("scale: rollout %s (bound %s, ratio %.2f), %d requests for %d pods, peak heap %d MiB", b.Wall.Round(time.Second), b.Bound.Round(time.Second),
			b.Ratio, rep.Requests.Total(), res.Udrain.EvictedPods, rep.Memory.PeakHeapAlloc>>20)
	}
	return res, nil
}

// healthyAfter waits until the pool is healthy and returns the time since
// start; 0 if it did not get healthy within timeout.
func (e *Env) healthyAfter(ctx context.Context, p *Pool, start time.Time, timeout time.Duration) time.Duration {
	if err := p.WaitHealthy(ctx, e.Client, timeout); err != nil {
		e.logf("%v", err)
		return 0
	}
	return time.Since(start)
}

// waitBudget waits until the pool's first PDB allows exactly allowed
// disruptions.
func (e *Env) waitBudget(ctx context.Context, p *Pool, allowed int32, timeout time.Duration) error {
	name := p.Workloads[0].PDBName()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pdb, err := e.Client.PolicyV1().PodDisruptionBudgets(p.Name).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("allows %d, healthy %d", pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy)
		return pdb.Status.DisruptionsAllowed == allowed, nil
	})
	if err != nil {
		return fmt.Errorf("PDB %s/%s does not allow %d disruptions: %s", p.Name, name, allowed, last)
	}
	return nil
}
