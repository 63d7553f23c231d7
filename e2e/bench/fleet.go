package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
)

// FleetShape is the fleet scenario's cluster (issue 15): Nodes 8-GPU nodes
// in UDs domains, Groups LeaderWorkerSet-like groups of Size pods (in
// workloads of UDs groups, each with a PDB over its leaders keeping all
// but BudgetGroups available, all but one by default; the last workload
// takes the remainder), and
// OrdinaryPods pods that belong to no group: DaemonSets DaemonSets with a
// pod on every node, counted in OrdinaryPods, and Deployments of
// ReplicasPerDeployment replicas spread over Namespaces namespaces for the
// rest. Spare more domains of the same size, empty, come once all that
// runs (issue 22: a buffer pool; their DaemonSet pods are not counted in
// OrdinaryPods).
type FleetShape struct {
	Nodes                 int `json:"nodes"`
	UDs                   int `json:"uds"`
	Groups                int `json:"groups"`
	Size                  int `json:"podsPerGroup"`
	GPUsPerPod            int `json:"gpusPerPod"`
	OrdinaryPods          int `json:"ordinaryPods"`
	DaemonSets            int `json:"daemonSets"`
	ReplicasPerDeployment int `json:"replicasPerDeployment"`
	Namespaces            int `json:"namespaces"`
	Spare                 int `json:"spareDomains"`
	// ReadyDelay and TerminateDelay are the group pods' kwok delays, Grace
	// their grace period; ordinary pods get OrdinaryReadyDelay and the
	// same termination.
	ReadyDelay         time.Duration `json:"readyDelay"`
	OrdinaryReadyDelay time.Duration `json:"ordinaryReadyDelay"`
	TerminateDelay     time.Duration `json:"terminateDelay"`
	Grace              int64         `json:"gracePeriodSeconds"`
	// BudgetGroups is how many groups of a workload its PDB lets be down
	// at once (minAvailable groups − BudgetGroups, issue 35: 4); 0 means
	// 1.
	BudgetGroups int `json:"budgetGroups,omitempty"`
	// OrdinaryStartReady has kwok start ordinary pods in one step, without
	// Events ([fixture.StartReadyAnnotation]): nothing observes their
	// start, and it spares the testbed a status write and two Events per
	// ordinary pod. Unset, they start as group pods do (Running, then ready
	// after the start-up delay, an Event for each step).
	OrdinaryStartReady bool `json:"ordinaryStartReady,omitempty"`
}

// FullFleet is issue 15's fleet: 2,000 nodes in 20 domains, 250 groups of
// 8, and 18,000 ordinary pods (2 DaemonSets: 4,000 pods; 14,000 Deployment
// pods), with issue 22's spare domain of 100 nodes.
func FullFleet() FleetShape {
	return FleetShape{Nodes: 2000, UDs: 20, Groups: 250, Size: 8, GPUsPerPod: 4, OrdinaryPods: 18000, DaemonSets: 2,
		ReplicasPerDeployment: 100, Namespaces: 20, Spare: 1, ReadyDelay: 5 * time.Second, OrdinaryReadyDelay: time.Second,
		TerminateDelay: 3 * time.Second, Grace: 30, OrdinaryStartReady: true}
}

// Quarter is the fleet scaled by 1/4 (the quick mode): a quarter of the
// nodes, groups (rounded up), ordinary pods and namespaces, in a quarter of
// the domains, so that each domain is as in the full fleet.
func (f FleetShape) Quarter() FleetShape {
	q := f
	q.Nodes, q.UDs, q.Groups, q.OrdinaryPods = f.Nodes/4, max(f.UDs/4, 2), (f.Groups+3)/4, f.OrdinaryPods/4
	q.Namespaces = max(f.Namespaces/4, 1)
	return q
}

// PerUD is the nodes per domain.
func (f FleetShape) PerUD() int { return f.Nodes / max(f.UDs, 1) }

// DaemonSetPods is the number of DaemonSet pods; DeploymentPods the
// ordinary pods that are not; Deployments the number of Deployments.
func (f FleetShape) DaemonSetPods() int  { return f.DaemonSets * f.Nodes }
func (f FleetShape) DeploymentPods() int { return f.OrdinaryPods - f.DaemonSetPods() }
func (f FleetShape) Deployments() int {
	return (f.DeploymentPods() + f.ReplicasPerDeployment - 1) / max(f.ReplicasPerDeployment, 1)
}

// SpareDaemonSetPods is the number of DaemonSet pods on the spare
// domains' nodes.
func (f FleetShape) SpareDaemonSetPods() int { return f.DaemonSets * f.Spare * f.PerUD() }

// Workloads is the number of group workloads: UDs groups each, the last
// one the remainder.
func (f FleetShape) Workloads() int { return (f.Groups + f.UDs - 1) / max(f.UDs, 1) }

// Shape is the groups' part of the fleet as a [Shape] (Workloads rounded
// up; [NewFleetPool] gives the last workload the remainder).
func (f FleetShape) Shape() Shape {
	return Shape{UDs: f.UDs, PerUD: f.PerUD(), Workloads: f.Workloads(), Size: f.Size, GPUsPerPod: f.GPUsPerPod,
		ReadyDelay: f.ReadyDelay, TerminateDelay: f.TerminateDelay, Grace: f.Grace, BudgetGroups: f.BudgetGroups}
}

// Validate says what is wrong with the shape, in flag terms.
func (f FleetShape) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, &ShapeError{Reason: fmt.Sprintf(format, args...)})
	}
	if f.UDs < 2 || f.Nodes%f.UDs != 0 {
		bad("the fleet's nodes (%d) must be a multiple of its domains (%d, at least 2)", f.Nodes, f.UDs)
	}
	if f.Groups < 1 {
		bad("the fleet needs at least one group")
	}
	if f.DeploymentPods() < 0 {
		bad("%d ordinary pods are fewer than the %d DaemonSet pods (%d DaemonSets on %d nodes)", f.OrdinaryPods, f.DaemonSetPods(), f.DaemonSets, f.Nodes)
	}
	if f.Spare < 0 {
		bad("spare domains (%d) must not be negative", f.Spare)
	}
	if f.ReplicasPerDeployment < 1 || f.Namespaces < 1 {
		bad("replicas per Deployment (%d) and namespaces (%d) must be at least 1", f.ReplicasPerDeployment, f.Namespaces)
	}
	// 110 pods per node (fixture.Nodes): the ordinary pods of a drained
	// domain must fit on the others.
	if perNode := float64(f.OrdinaryPods+f.Groups*f.Size) / float64(max(f.Nodes-f.PerUD(), 1)); perNode > 100 {
		bad("%.0f pods per node with a domain drained: more than the nodes' 110 allow with room; add nodes", perNode)
	}
	if len(errs) == 0 {
		if err := f.Shape().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NewFleetPool is the pool of the fleet's groups: [NewPool] of the
// fleet's Shape with the last workload holding the remainder of Groups.
// No group is pinned to a domain (issue 22): each workload has
// LeaderWorkerSet's exclusive topology on the domain key, within itself
// ([fixture.LWS] Exclusive, see exclusiveWithin): a group's pods attract
// each other and repel the workload's other groups, and the scheduler
// alone picks the domain. A full workload thus fills every domain once; a
// group evicted from its domain may go to any domain without one of its
// workload's groups (the spare, an upgraded one, or, unsteered, one
// still to be drained). The groups tolerate no taint: no keyless
// toleration lets them ignore udrain's.
func NewFleetPool(name string, f FleetShape) *Pool {
	p := NewPool(name, f.Shape())
	for i := range p.Workloads {
		p.Workloads[i].Exclusive = true
	}
	if rest := f.Groups % f.UDs; rest != 0 {
		p.Workloads[len(p.Workloads)-1].Groups = rest
	}
	return p
}

// FleetMode is how the fleet's rollout is run: the behaviour before
// issue 22, or udrain's default.
type FleetMode string

// The fleet's modes.
const (
	// FleetOld is the behaviour before issue 22: no steering taint, the
	// domains in natural order (the spare last).
	FleetOld FleetMode = "old"
	// FleetNew is udrain's default: pending domains tainted
	// PreferNoSchedule, the domains that evict nothing first; limited
	// to the pool's domains.
	FleetNew FleetMode = "new"
	// FleetStrict is udrain's order with the strict steering: pending
	// domains tainted NoSchedule, so that nothing evicted lands on them
	// (what does not fit in upgraded room waits, Pending, for its own
	// domain); limited to the pool's domains.
	FleetStrict FleetMode = "strict"
	// FleetParallel is udrain's default (FleetNew) with parallel domains
	// (issue 35): as many at once as the budgets over the groups and the
	// upgraded room allow (RolloutOptions.Parallel ParallelAuto).
	FleetParallel FleetMode = "parallel"
	// FleetParallelInPlace is FleetParallel in place
	// (RolloutOptions.InPlace, Steering Strict): the budgets alone hold
	// domains back; groups without upgraded room wait for their own
	// domain.
	FleetParallelInPlace FleetMode = "parallel-in-place"
	// FleetNewScoreAll is udrain's default (FleetNew) on a cluster whose
	// kube-scheduler scores every feasible node
	// (percentageOfNodesToScore: 100, hack/kwok/scheduler-score-all.yaml)
	// instead of its adaptive sample: what a PreferNoSchedule taint can
	// do when the scheduler weighs it on every node.
	FleetNewScoreAll FleetMode = "new-score-all"
)

// SchedulerConfig is the kube-scheduler configuration file (relative to
// the checkout) of the cluster of mode m, or "" for the testbed's default.
func (m FleetMode) SchedulerConfig() string {
	if m == FleetNewScoreAll {
		return "hack/kwok/scheduler-score-all.yaml"
	}
	return ""
}

// ParseFleetModes reads a comma-separated list of modes ("old,new").
func ParseFleetModes(s string) ([]FleetMode, error) {
	var out []FleetMode
	for _, x := range strings.Split(s, ",") {
		m := FleetMode(strings.TrimSpace(x))
		switch m {
		case FleetOld, FleetNew, FleetStrict, FleetNewScoreAll, FleetParallel, FleetParallelInPlace:
			if slices.Contains(out, m) {
				return nil, fmt.Errorf("fleet mode %q given twice", m)
			}
			out = append(out, m)
		default:
			return nil, fmt.Errorf("unknown fleet mode %q: use %s, %s, %s, %s, %s or %s, or several (%s,%s)", x, FleetOld, FleetNew, FleetParallel, FleetParallelInPlace, FleetStrict, FleetNewScoreAll, FleetOld, FleetNew)
		}
	}
	return out, nil
}

// Job is the rollout of domains (in natural order) in mode m.
func (m FleetMode) Job(domains []string) DrainerJob {
	job := DrainerJob{Domains: domains, RolloutID: "bench"}
	switch m {
	case FleetOld:
		job.Order, job.Steering = eviction.OrderGiven, eviction.SteerOff
	case FleetStrict:
		job.Order, job.Steering = eviction.OrderSpareFirst, eviction.SteerStrict
	case FleetParallel:
		job.Order, job.Parallel = eviction.OrderSpareFirst, eviction.ParallelAuto
	case FleetParallelInPlace:
		job.Order, job.Parallel, job.InPlace, job.Steering = eviction.OrderSpareFirst, eviction.ParallelAuto, true, eviction.SteerStrict
	default:
		job.Order = eviction.OrderSpareFirst
	}
	return job
}

// Describe says what the mode does, for the report.
func (m FleetMode) Describe() string {
	switch m {
	case FleetOld:
		return "the old behaviour: no steering taint (Steering Off), the domains in natural order (Order Given), the spare last"
	case FleetStrict:
		return "udrain's strict steering: pending domains tainted NoSchedule (Steering Strict), the domains that evict nothing first (Order SpareFirst)"
	case FleetNewScoreAll:
		return "udrain's default (its default Steering, Order SpareFirst) with kube-scheduler scoring every feasible node (percentageOfNodesToScore: 100) instead of its adaptive sample"
	case FleetParallel:
		return "udrain's default with parallel domains (Parallel auto): as many domains at once as the budgets over the groups and the upgraded room allow"
	case FleetParallelInPlace:
		return "parallel domains in place (Parallel auto, InPlace, Steering Strict): as many domains at once as the budgets over the groups allow; groups without upgraded room wait, Pending, for their own domain"
	}
	return "udrain's default: one domain at a time, pending domains tainted by udrain's default steering, the domains that evict nothing first (Order SpareFirst)"
}

// ordinaryNamespace and daemonNamespace name the namespaces of a fleet's
// Deployments and DaemonSets.
func ordinaryNamespace(pool string, i int) string { return fmt.Sprintf("%s-apps-%d", pool, i) }
func daemonNamespace(pool string) string          { return pool + "-system" }

// OrdinaryObjects returns the fleet's Deployments and DaemonSets, placed on
// the pool's nodes.
func OrdinaryObjects(pool string, f FleetShape) ([]*appsv1.Deployment, []*appsv1.DaemonSet) {
	annotations := map[string]string{
		fixture.ReadyDelayAnnotation:     fmt.Sprintf("%dms", f.OrdinaryReadyDelay.Milliseconds()),
		fixture.TerminateDelayAnnotation: fmt.Sprintf("%dms", f.TerminateDelay.Milliseconds()),
	}
	if f.OrdinaryStartReady {
		annotations[fixture.StartReadyAnnotation] = "true"
	}
	template := func(app string) corev1.PodTemplateSpec {
		grace := f.Grace
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}, Annotations: annotations},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: fixture.DefaultImage, Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
				NodeSelector:                  map[string]string{fixture.PoolLabel: pool},
				TerminationGracePeriodSeconds: &grace,
				AutomountServiceAccountToken:  new(false),
				EnableServiceLinks:            new(false),
			},
		}
	}
	var deps []*appsv1.Deployment
	left := f.DeploymentPods()
	for i := 0; left > 0; i++ {
		r := int32(min(left, f.ReplicasPerDeployment))
		left -= int(r)
		app := "app-" + strconv.Itoa(i)
		deps = append(deps, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ordinaryNamespace(pool, i%f.Namespaces)},
			Spec:       appsv1.DeploymentSpec{Replicas: &r, Selector: metav1.SetAsLabelSelector(map[string]string{"app": app}), Template: template(app)},
		})
	}
	var dss []*appsv1.DaemonSet
	for i := range f.DaemonSets {
		app := "node-agent-" + strconv.Itoa(i)
		dss = append(dss, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: daemonNamespace(pool)},
			Spec:       appsv1.DaemonSetSpec{Selector: metav1.SetAsLabelSelector(map[string]string{"app": app}), Template: template(app)},
		})
	}
	return deps, dss
}

// fleetNamespaces lists the namespaces of a fleet's ordinary pods.
func fleetNamespaces(pool string, f FleetShape) []string {
	out := []string{daemonNamespace(pool)}
	for i := range f.Namespaces {
		out = append(out, ordinaryNamespace(pool, i))
	}
	return out
}

// createOrdinary makes the namespaces, Deployments and DaemonSets.
func createOrdinary(ctx context.Context, c kubernetes.Interface, pool string, f FleetShape, limit int) error {
	for _, ns := range fleetNamespaces(pool, f) {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"udrain.dev/bench": "true"}}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	deps, dss := OrdinaryObjects(pool, f)
	err := parallel(ctx, len(dss), limit, func(i int) error {
		_, err := c.AppsV1().DaemonSets(dss[i].Namespace).Create(ctx, dss[i], metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("create DaemonSets: %w", err)
	}
	return parallel(ctx, len(deps), limit, func(i int) error {
		_, err := c.AppsV1().Deployments(deps[i].Namespace).Create(ctx, deps[i], metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create Deployment %s/%s: %w", deps[i].Namespace, deps[i].Name, err)
		}
		return nil
	})
}

// ordinaryReady says how far the ordinary pods are from all ready: "" when
// every Deployment and DaemonSet reports all its pods ready and current,
// and they are want.
func ordinaryReady(ctx context.Context, c kubernetes.Interface, pool string, f FleetShape, want int) (string, error) {
	wanted, ready := 0, 0
	for _, ns := range fleetNamespaces(pool, f) {
		deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for _, d := range deps.Items {
			wanted += int(*d.Spec.Replicas)
			ready += int(min(d.Status.ReadyReplicas, d.Status.UpdatedReplicas))
		}
		dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for _, d := range dss.Items {
			wanted += int(d.Status.DesiredNumberScheduled)
			ready += int(d.Status.NumberReady)
		}
	}
	if wanted != want {
		return fmt.Sprintf("%d of %d ordinary pods wanted so far", wanted, want), nil
	}
	if ready < wanted {
		return fmt.Sprintf("%d of %d ordinary pods ready", ready, wanted), nil
	}
	return "", nil
}

// deleteOrdinary deletes the ordinary pods' namespaces, without waiting.
func deleteOrdinary(ctx context.Context, c kubernetes.Interface, pool string, f FleetShape) error {
	var errs []error
	for _, ns := range fleetNamespaces(pool, f) {
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FleetResult is a udrain rollout over a fleet, with what the testbed
// itself cost.
type FleetResult struct {
	Shape FleetShape `json:"shape"`
	// Mode is how the rollout ran; Order and Steering what udrain was
	// asked (empty: its default), over Domains in this order.
	Mode        FleetMode             `json:"mode,omitempty"`
	Order       eviction.RolloutOrder `json:"order,omitempty"`
	Steering    eviction.Steering     `json:"steering,omitempty"`
	Domains     []string              `json:"domains,omitempty"`
	UpgradeStep time.Duration         `json:"upgradeStep"`
	// SpareDomains are the empty domains added once the workloads ran;
	// SpareReady the time from their creation to their DaemonSet pods
	// ready.
	SpareDomains []string      `json:"spareDomains,omitempty"`
	SpareReady   time.Duration `json:"spareReady,omitempty"`
	// DomainOrder is the order the rollout took the domains in (its
	// DomainStarted events).
	DomainOrder []string `json:"domainOrder,omitempty"`
	// InFlight is how many domains the rollout had in flight at once, and
	// what held domains back (its events).
	InFlight *InFlight `json:"inFlight,omitempty"`
	// Deploy is the time from the first create to every group healthy
	// (GroupsHealthy) and every ordinary pod ready (OrdinaryReady).
	Deploy        time.Duration `json:"deploy"`
	GroupsHealthy time.Duration `json:"groupsHealthy"`
	OrdinaryReady time.Duration `json:"ordinaryReady"`
	// KwokctlFlags are the extra flags the fleet's cluster was made with
	// (--disable-qps-limits: the controller manager's and scheduler's
	// clients unlimited, as a cluster of thousands of nodes is tuned).
	KwokctlFlags []string `json:"kwokctlFlags,omitempty"`
	// QPS is the drainer's client rate limit: Requests / QPS is the least
	// time its requests take, whatever the cluster.
	QPS float32 `json:"qps"`
	// PodsAtStart is the number of pods in the cluster when the rollout
	// started.
	PodsAtStart int  `json:"podsAtStart"`
	Udrain      Side `json:"udrain"`
	// GroupPodsEvicted and OrdinaryPodsEvicted split the evictions the API
	// server accepted (by namespace, from the audit log; -1 without one);
	// EvictionsPerOrdinaryPod is OrdinaryPodsEvicted over the Deployment
	// pods (1 when each is moved once; DaemonSet pods are never evicted).
	// GroupPodsTerminated is the group pods the recording saw terminating,
	// whoever deleted them; GroupPodsDeletedByOthers the difference: pods
	// the testbed deleted on its own (kwok deletes by name, so a stale
	// termination job can delete a StatefulSet's replacement pod, see
	// docs/PERFORMANCE.md, testbed artifacts).
	GroupPodsEvicted         int     `json:"groupPodsEvicted"`
	OrdinaryPodsEvicted      int     `json:"ordinaryPodsEvicted"`
	EvictionsPerOrdinaryPod  float64 `json:"evictionsPerOrdinaryPod"`
	GroupPodsTerminated      int     `json:"groupPodsTerminated"`
	GroupPodsDeletedByOthers int     `json:"groupPodsDeletedByOthers"`
	// GroupPodsOnPending counts the group pods the recording saw start on
	// a domain the rollout had not reached yet (see [PlacedOnPending]);
	// PendingExamples names a few.
	GroupPodsOnPending int      `json:"groupPodsOnPending"`
	PendingExamples    []string `json:"pendingExamples,omitempty"`
	// DeployLoad and RolloutLoad are what the machine spent while the
	// fleet was deployed and while it was rolled.
	DeployLoad  *Load `json:"deployLoad,omitempty"`
	RolloutLoad *Load `json:"rolloutLoad,omitempty"`
}

// RunFleet deploys a fleet on a cluster of its own, adds its spare
// domains once the workloads run, and rolls an upgrade over every domain
// with udrain (in a child process) in the given mode, observing the
// groups and measuring what the testbed's components spend meanwhile.
func (e *Env) RunFleet(ctx context.Context, f FleetShape, mode FleetMode, upgradeStep, timeout time.Duration) (*FleetResult, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	p := NewFleetPool(e.poolName("bench-fleet-"+string(mode)), f)
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := errors.Join(deleteOrdinary(ctx, e.Client, p.Name, f), p.Delete(ctx, e.Client)); err != nil {
			e.logf("cleanup of %s: %v", p.Name, err)
		}
	}()
	res := &FleetResult{Shape: f, Mode: mode, UpgradeStep: upgradeStep, QPS: e.QPS, Udrain: Side{Tool: "udrain"}}
	e.logf("fleet (%s): creating %d nodes in %d domains, %d groups of %d pods, %d ordinary pods (%d DaemonSet pods, %d Deployment pods); then %d spare domain(s)",
		mode, f.Nodes, f.UDs, f.Groups, f.Size, f.OrdinaryPods, f.DaemonSetPods(), f.DeploymentPods(), f.Spare)
	meter := e.startLoad(ctx)
	t := time.Now()
	if err := p.Create(ctx, e.Client, 32); err != nil {
		return nil, err
	}
	if err := createOrdinary(ctx, e.Client, p.Name, f, 16); err != nil {
		return nil, err
	}
	e.logf("fleet: created in %s; waiting for every group healthy and every ordinary pod ready", time.Since(t).Round(time.Second))
	var wg sync.WaitGroup
	var gerr, oerr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		if gerr = p.WaitHealthy(ctx, e.Client, timeout); gerr == nil {
			res.GroupsHealthy = time.Since(t)
		}
	}()
	go func() {
		defer wg.Done()
		if oerr = e.waitOrdinary(ctx, p.Name, f, f.OrdinaryPods, timeout); oerr == nil {
			res.OrdinaryReady = time.Since(t)
		}
	}()
	wg.Wait()
	if err := errors.Join(gerr, oerr); err != nil {
		return nil, err
	}
	res.Deploy = time.Since(t)
	res.DeployLoad = meter.stop()
	// The spare capacity comes once the workloads are placed, empty but
	// for its DaemonSet pods.
	ts := time.Now()
	for range f.Spare {
		d, err := p.AddSpare(ctx, e.Client, 32)
		if err != nil {
			return nil, err
		}
		res.SpareDomains = append(res.SpareDomains, d)
	}
	if f.Spare > 0 {
		if err := e.waitOrdinary(ctx, p.Name, f, f.OrdinaryPods+f.SpareDaemonSetPods(), timeout); err != nil {
			return nil, fmt.Errorf("spare domains %v: %w", res.SpareDomains, err)
		}
		res.SpareReady = time.Since(ts)
	}
	if pods, err := e.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
		res.PodsAtStart = len(pods.Items)
	}
	e.logf("fleet: groups healthy after %s, ordinary pods ready after %s, spare domains %v ready after %s more (%d pods); rolling (%s)",
		res.GroupsHealthy.Round(time.Second), res.OrdinaryReady.Round(time.Second), res.SpareDomains, res.SpareReady.Round(time.Second), res.PodsAtStart, mode)
	if err := p.Record(ctx, e.Client); err != nil {
		return nil, err
	}
	job := mode.Job(p.Domains())
	job.UpgradeStep, job.RecoveryTimeout = upgradeStep, timeout
	res.Order, res.Steering, res.Domains = job.Order, job.Steering, job.Domains
	meter = e.startLoad(ctx)
	start := time.Now()
	rep, user, err := e.runDrainer(ctx, p.Name, job)
	if err != nil {
		return nil, err
	}
	res.RolloutLoad = meter.stopWith(map[string]time.Duration{"udrain drainer": rep.Memory.UserCPU + rep.Memory.SystemCPU})
	if rep.Err == "" {
		// After a failed rollout the groups may never be healthy again
		// (a testbed stuck in a loop): do not wait for them.
		res.Udrain.HealthyAfter = e.healthyAfter(ctx, p, start, timeout)
	}
	e.saveTimeline(p.Name, p, rep.Events)
	res.Udrain.Wall, res.Udrain.Requests, res.Udrain.Err, res.Udrain.Memory, res.Udrain.Metrics = rep.Wall, rep.Requests, rep.Err, &rep.Memory, rep.Metrics
	events := p.Recorder.Events()
	o := Observe(events, ObserveOptions{UDOf: p.UDOf, Workloads: p.ObservedWorkloads(), From: start})
	res.Udrain.finish(o, AllGroups(p.ObservedWorkloads()))
	res.Udrain.Audit = e.audit(ctx, user, res.Udrain.Requests)
	res.GroupPodsTerminated = len(o.Evicted)
	reached := DomainsReached(rep.Events)
	for _, d := range rep.Events {
		if d.Type == eviction.EventDomainStarted {
			res.DomainOrder = append(res.DomainOrder, d.Domain)
		}
	}
	inFlight := CountInFlight(rep.Events)
	res.InFlight = &inFlight
	pending := PlacedOnPending(events, p.UDOf, reached, start)
	res.GroupPodsOnPending = len(pending)
	for _, x := range pending[:min(len(pending), 5)] {
		res.PendingExamples = append(res.PendingExamples, x.String())
	}
	res.GroupPodsEvicted, res.OrdinaryPodsEvicted = -1, -1
	if e.AuditLog != nil && user != "" {
		if reqs, err := e.AuditLog(ctx, user); err == nil {
			res.GroupPodsEvicted = EvictionsIn(reqs, p.Name)
			n := o.EvictedBeforeLeaders(EvictionTimes(reqs, p.Name))
			res.Udrain.Safety.EvictedBeforeLeaders = &n
			res.OrdinaryPodsEvicted = 0
			for _, ns := range fleetNamespaces(p.Name, f) {
				res.OrdinaryPodsEvicted += EvictionsIn(reqs, ns)
			}
		}
	}
	if res.GroupPodsEvicted >= 0 {
		res.GroupPodsDeletedByOthers = max(res.GroupPodsTerminated-res.GroupPodsEvicted, 0)
		res.EvictionsPerOrdinaryPod = perOrdinaryPod(res.OrdinaryPodsEvicted, f)
	}
	if rep.Rollout != nil {
		b := Analyze(rep.Events, o, Delays{Terminate: f.TerminateDelay, UpgradeStep: upgradeStep}, rep.Rollout.Started, rep.Rollout.Duration.Duration())
		res.Udrain.Breakdown = &b
		e.logf("fleet (%s): rollout %s (bound %s, ratio %.2f), order %v, domains in flight at most %d (mean %.2f; cordoned at most %d), held %v; groups disrupted more than once %d; group pods started on pending domains %d; ordinary evictions %d (%.2f per Deployment pod); %d requests for %d evicted pods (%.2f each; audit %s), watches %s, peak heap %s, RSS %s",
			mode, b.Wall.Round(time.Second), b.Bound.Round(time.Second), b.Ratio, res.DomainOrder, inFlight.Most, inFlight.Mean, inFlight.MostClosed, inFlight.Held,
			res.Udrain.Safety.DisruptedMore, res.GroupPodsOnPending,
			res.OrdinaryPodsEvicted, res.EvictionsPerOrdinaryPod, rep.Requests.Total(), res.Udrain.EvictedPods, res.Udrain.RequestsPerEvictedPod,
			res.Udrain.Audit.brief(), mib(uint64(res.Udrain.WatchBytes)), mib(rep.Memory.PeakHeapAlloc), mib(uint64(rep.Memory.MaxRSS)))
	}
	return res, nil
}

// perOrdinaryPod is evictions of ordinary pods per Deployment pod (the
// ordinary pods a drain moves); 0 without any.
func perOrdinaryPod(evictions int, f FleetShape) float64 {
	if f.DeploymentPods() <= 0 || evictions < 0 {
		return 0
	}
	return float64(evictions) / float64(f.DeploymentPods())
}

// waitOrdinary waits until want ordinary pods are ready.
func (e *Env) waitOrdinary(ctx context.Context, pool string, f FleetShape, want int, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		msg, err := ordinaryReady(ctx, e.Client, pool, f, want)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = msg
		return msg == "", nil
	})
	if err != nil {
		return fmt.Errorf("ordinary pods not ready within %s: %s", timeout, last)
	}
	return nil
}
