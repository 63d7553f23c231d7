package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
)

// FleetShape is the fleet scenario's cluster (issue 15): Nodes 8-GPU nodes
// in UDs domains, Groups LeaderWorkerSet-like groups of Size pods (in
// workloads of UDs groups, one group per domain, each with a PDB over its
// leaders keeping all but one available; the last workload takes the
// remainder), and OrdinaryPods pods that belong to no group: DaemonSets
// DaemonSets with a pod on every node, counted in OrdinaryPods, and
// Deployments of ReplicasPerDeployment replicas spread over Namespaces
// namespaces for the rest.
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
	// ReadyDelay and TerminateDelay are the group pods' kwok delays, Grace
	// their grace period; ordinary pods get OrdinaryReadyDelay and the
	// same termination.
	ReadyDelay         time.Duration `json:"readyDelay"`
	OrdinaryReadyDelay time.Duration `json:"ordinaryReadyDelay"`
	TerminateDelay     time.Duration `json:"terminateDelay"`
	Grace              int64         `json:"gracePeriodSeconds"`
	// OrdinaryStartReady has kwok start ordinary pods in one step, without
	// Events ([fixture.StartReadyAnnotation]): nothing observes their
	// start, and it spares the testbed a status write and two Events per
	// ordinary pod. Unset, they start as group pods do (Running, then ready
	// after the start-up delay, an Event for each step).
	OrdinaryStartReady bool `json:"ordinaryStartReady,omitempty"`
}

// FullFleet is issue 15's fleet: 2,000 nodes in 20 domains, 250 groups of
// 8, and 18,000 ordinary pods (2 DaemonSets: 4,000 pods; 14,000 Deployment
// pods).
func FullFleet() FleetShape {
	return FleetShape{Nodes: 2000, UDs: 20, Groups: 250, Size: 8, GPUsPerPod: 4, OrdinaryPods: 18000, DaemonSets: 2,
		ReplicasPerDeployment: 100, Namespaces: 20, ReadyDelay: 5 * time.Second, OrdinaryReadyDelay: time.Second,
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

// Workloads is the number of group workloads: UDs groups each, the last
// one the remainder.
func (f FleetShape) Workloads() int { return (f.Groups + f.UDs - 1) / max(f.UDs, 1) }

// Shape is the groups' part of the fleet as a [Shape] (Workloads rounded
// up; [NewFleetPool] gives the last workload the remainder).
func (f FleetShape) Shape() Shape {
	return Shape{UDs: f.UDs, PerUD: f.PerUD(), Workloads: f.Workloads(), Size: f.Size, GPUsPerPod: f.GPUsPerPod,
		ReadyDelay: f.ReadyDelay, TerminateDelay: f.TerminateDelay, Grace: f.Grace}
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
// The remainder's groups, fewer than the domains, are kept each in a
// domain of its own, spread evenly ([fixture.LWS] Domains), as the other
// workloads' groups are by their spread: else a drained group may start
// again in a domain not drained yet (the quick fleet's llm-12-1 went from
// ud0 to ud3 and was disrupted twice), and the rollout's analysis, which
// follows each domain's groups, loses it.
func NewFleetPool(name string, f FleetShape) *Pool {
	p := NewPool(name, f.Shape())
	if rest := f.Groups % f.UDs; rest != 0 {
		w := &p.Workloads[len(p.Workloads)-1]
		w.Groups = rest
		for g := range rest {
			w.Domains = append(w.Domains, p.Nodes.UD(g*f.UDs/rest))
		}
	}
	return p
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
// every Deployment and DaemonSet reports all its pods ready and current.
func ordinaryReady(ctx context.Context, c kubernetes.Interface, pool string, f FleetShape) (string, error) {
	want, ready := 0, 0
	for _, ns := range fleetNamespaces(pool, f) {
		deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for _, d := range deps.Items {
			want += int(*d.Spec.Replicas)
			ready += int(min(d.Status.ReadyReplicas, d.Status.UpdatedReplicas))
		}
		dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for _, d := range dss.Items {
			want += int(d.Status.DesiredNumberScheduled)
			ready += int(d.Status.NumberReady)
		}
	}
	if want != f.OrdinaryPods {
		return fmt.Sprintf("%d of %d ordinary pods wanted so far", want, f.OrdinaryPods), nil
	}
	if ready < want {
		return fmt.Sprintf("%d of %d ordinary pods ready", ready, want), nil
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
	Shape       FleetShape    `json:"shape"`
	UpgradeStep time.Duration `json:"upgradeStep"`
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
	// server accepted (by namespace, from the audit log; -1 without one).
	// GroupPodsTerminated is the group pods the recording saw terminating,
	// whoever deleted them; GroupPodsDeletedByOthers the difference: pods
	// the testbed deleted on its own (kwok deletes by name, so a stale
	// termination job can delete a StatefulSet's replacement pod, see
	// docs/PERFORMANCE.md, testbed artifacts).
	GroupPodsEvicted         int `json:"groupPodsEvicted"`
	OrdinaryPodsEvicted      int `json:"ordinaryPodsEvicted"`
	GroupPodsTerminated      int `json:"groupPodsTerminated"`
	GroupPodsDeletedByOthers int `json:"groupPodsDeletedByOthers"`
	// DeployLoad and RolloutLoad are what the machine spent while the
	// fleet was deployed and while it was rolled.
	DeployLoad  *Load `json:"deployLoad,omitempty"`
	RolloutLoad *Load `json:"rolloutLoad,omitempty"`
}

// RunFleet deploys a fleet on a cluster of its own and rolls an upgrade
// over every domain with udrain (in a child process), observing the groups
// and measuring what the testbed's components spend meanwhile.
func (e *Env) RunFleet(ctx context.Context, f FleetShape, upgradeStep, timeout time.Duration) (*FleetResult, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	p := NewFleetPool(e.poolName("bench-fleet"), f)
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := errors.Join(deleteOrdinary(ctx, e.Client, p.Name, f), p.Delete(ctx, e.Client)); err != nil {
			e.logf("cleanup of %s: %v", p.Name, err)
		}
	}()
	res := &FleetResult{Shape: f, UpgradeStep: upgradeStep, QPS: e.QPS, Udrain: Side{Tool: "udrain"}}
	e.logf("fleet: creating %d nodes in %d domains, %d groups of %d pods, %d ordinary pods (%d DaemonSet pods, %d Deployment pods)",
		f.Nodes, f.UDs, f.Groups, f.Size, f.OrdinaryPods, f.DaemonSetPods(), f.DeploymentPods())
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
		var last string
		oerr = wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			msg, err := ordinaryReady(ctx, e.Client, p.Name, f)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = msg
			return msg == "", nil
		})
		if oerr != nil {
			oerr = fmt.Errorf("ordinary pods not ready within %s: %s", timeout, last)
		} else {
			res.OrdinaryReady = time.Since(t)
		}
	}()
	wg.Wait()
	if err := errors.Join(gerr, oerr); err != nil {
		return nil, err
	}
	res.Deploy = time.Since(t)
	res.DeployLoad = meter.stop()
	if pods, err := e.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
		res.PodsAtStart = len(pods.Items)
	}
	e.logf("fleet: groups healthy after %s, ordinary pods ready after %s (%d pods); rolling", res.GroupsHealthy.Round(time.Second), res.OrdinaryReady.Round(time.Second), res.PodsAtStart)
	if err := p.Record(ctx, e.Client); err != nil {
		return nil, err
	}
	meter = e.startLoad(ctx)
	start := time.Now()
	rep, user, err := e.runDrainer(ctx, p.Name, DrainerJob{Domains: p.Domains(), RolloutID: "bench", UpgradeStep: upgradeStep, RecoveryTimeout: timeout})
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
	res.Udrain.Wall, res.Udrain.Requests, res.Udrain.Err, res.Udrain.Memory = rep.Wall, rep.Requests, rep.Err, &rep.Memory
	o := Observe(p.Recorder.Events(), ObserveOptions{UDOf: p.UDOf, Workloads: p.ObservedWorkloads(), From: start})
	res.Udrain.finish(o, AllGroups(p.ObservedWorkloads()))
	res.Udrain.Audit = e.audit(ctx, user, res.Udrain.Requests)
	res.GroupPodsTerminated = len(o.Evicted)
	res.GroupPodsEvicted = -1
	if e.AuditLog != nil && user != "" {
		if reqs, err := e.AuditLog(ctx, user); err == nil {
			res.GroupPodsEvicted = EvictionsIn(reqs, p.Name)
		}
	}
	if res.GroupPodsEvicted >= 0 {
		res.OrdinaryPodsEvicted = max(res.Udrain.EvictedPods-res.GroupPodsEvicted, 0)
		res.GroupPodsDeletedByOthers = max(res.GroupPodsTerminated-res.GroupPodsEvicted, 0)
	}
	if rep.Rollout != nil {
		b := Analyze(rep.Events, o, Delays{Terminate: f.TerminateDelay, UpgradeStep: upgradeStep}, rep.Rollout.Started, rep.Rollout.Duration)
		res.Udrain.Breakdown = &b
		e.logf("fleet: rollout %s (bound %s, ratio %.2f), %d requests for %d evicted pods (%.2f each; audit %s), watches %s, peak heap %s, RSS %s",
			b.Wall.Round(time.Second), b.Bound.Round(time.Second), b.Ratio, rep.Requests.Total(), res.Udrain.EvictedPods, res.Udrain.RequestsPerEvictedPod,
			res.Udrain.Audit.brief(), mib(uint64(res.Udrain.WatchBytes)), mib(rep.Memory.PeakHeapAlloc), mib(uint64(rep.Memory.MaxRSS)))
	}
	return res, nil
}
