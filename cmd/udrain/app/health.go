package app

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain/topology"
)

// STAND-IN for an API package eviction does not export yet. The rollout's
// recovery wait (eviction's waitRecovered) knows which groups a drain
// disrupted, from its plan; "udrain wait-healthy" has no plan, so it
// decides which groups count from the cluster alone, with the rules below.
// The API that would replace this file is named in docs/CLI.md
// ("wait-healthy").

// disruptedPodsGrace is how long the disruption controller keeps a pod it
// saw evicted out of a budget's healthy count (as in package eviction).
const disruptedPodsGrace = 2 * time.Minute

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// groupInfo describes a group and judges its health: whole (as many
// members as expected) and every member Running, Ready and not being
// deleted.
func groupInfo(g *topology.Group, layout *topology.Layout) GroupInfo {
	gi := GroupInfo{
		Namespace: g.ID.Namespace, Name: g.ID.Name, Kind: string(g.ID.Kind), Workload: g.Workload,
		Domains: []string{}, Size: g.ExpectedSize(), Members: len(g.Members),
	}
	if g.Leader != nil {
		gi.Leader = g.Leader.Name
	}
	seen := map[string]bool{}
	var notReady []string
	for _, m := range g.Members {
		if podReady(m) {
			gi.ReadyMembers++
		} else {
			notReady = append(notReady, m.Name)
		}
		if layout != nil && m.Spec.NodeName != "" {
			if d, ok := layout.DomainOf(m.Spec.NodeName); ok && !seen[d] {
				seen[d] = true
				gi.Domains = append(gi.Domains, d)
			}
		}
	}
	sort.Slice(gi.Domains, func(i, j int) bool { return topology.NaturalLess(gi.Domains[i], gi.Domains[j]) })
	switch {
	case g.Leader != nil && !podReady(g.Leader):
		gi.Reason = fmt.Sprintf("leader %s not Ready (%d/%d members Ready)", g.Leader.Name, gi.ReadyMembers, gi.Size)
	case gi.ReadyMembers < gi.Size:
		gi.Reason = fmt.Sprintf("%d/%d members Ready", gi.ReadyMembers, gi.Size)
		if len(notReady) > 0 {
			gi.Reason += "; not Ready: " + strings.Join(abbreviate(notReady, 5), ", ")
		}
	case len(notReady) > 0:
		gi.Reason = "not Ready: " + strings.Join(abbreviate(notReady, 5), ", ")
	}
	gi.Healthy = gi.Reason == ""
	return gi
}

// pdbHealth judges a budget: its status describes the current spec, it is
// not below its desired healthy count, and it has caught up with the Ready
// pods it selects (the disruption controller updates it a little after pods
// turn Ready, and the next drain's evictions are judged by that status).
func pdbHealth(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) PDBHealth {
	h := PDBHealth{
		Namespace: pdb.Namespace, Name: pdb.Name,
		DisruptionsAllowed: pdb.Status.DisruptionsAllowed, CurrentHealthy: pdb.Status.CurrentHealthy,
		DesiredHealthy: pdb.Status.DesiredHealthy, ExpectedPods: pdb.Status.ExpectedPods,
	}
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		h.Reason = "status not yet observed for the current spec"
	case pdb.Status.CurrentHealthy < pdb.Status.DesiredHealthy:
		h.Reason = fmt.Sprintf("in deficit: %d healthy, %d needed", pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy)
	default:
		if shown := readySelected(pdb, pods, now); pdb.Status.CurrentHealthy < shown {
			h.Reason = fmt.Sprintf("status counts %d healthy, the pods show %d", pdb.Status.CurrentHealthy, shown)
		}
	}
	h.Healthy = h.Reason == ""
	return h
}

// readySelected counts the Ready pods pdb selects, leaving out pods the
// disruption controller still counts as disrupted.
func readySelected(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) int32 {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return 0
	}
	var n int32
	for _, p := range pods {
		if p.Namespace != pdb.Namespace || !sel.Matches(labels.Set(p.Labels)) || !podReady(p) {
			continue
		}
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok && t.Add(disruptedPodsGrace).After(now) {
			continue
		}
		n++
	}
	return n
}

// evaluateHealth judges the health of domain ("" for all domains). The
// groups that count are those with a pod on the domain's nodes, and those
// none of whose pods is on a node yet (a group recreated after a drain is
// Pending before it lands anywhere, possibly in this domain). The budgets
// that count are those selecting a pod of those groups.
func evaluateHealth(s *clusterState, layout *topology.Layout, domain string, now time.Time) HealthReport {
	r := HealthReport{TypeMeta: typeMeta(KindHealthReport), Domain: domain, Groups: []GroupInfo{}, PDBs: []PDBHealth{}, Waiting: []string{}}
	groups := s.groups()
	pods := s.Pods
	idx := topology.NewPDBIndex(s.PDBs)
	pdbSeen := map[string]bool{}
	var pdbs []*policyv1.PodDisruptionBudget
	for i := range groups {
		g := &groups[i]
		gi := groupInfo(g, layout)
		if domain != "" && len(gi.Domains) > 0 && !contains(gi.Domains, domain) {
			continue
		}
		r.Groups = append(r.Groups, gi)
		if !gi.Healthy {
			r.Waiting = append(r.Waiting, fmt.Sprintf("group %s/%s: %s", gi.Namespace, gi.Name, gi.Reason))
		}
		for _, m := range g.Members {
			for _, b := range idx.For(m) {
				key := b.Namespace + "/" + b.Name
				if !pdbSeen[key] {
					pdbSeen[key] = true
					pdbs = append(pdbs, b)
				}
			}
		}
	}
	sort.Slice(pdbs, func(i, j int) bool {
		if pdbs[i].Namespace != pdbs[j].Namespace {
			return pdbs[i].Namespace < pdbs[j].Namespace
		}
		return pdbs[i].Name < pdbs[j].Name
	})
	for _, b := range pdbs {
		h := pdbHealth(b, pods, now)
		r.PDBs = append(r.PDBs, h)
		if !h.Healthy {
			r.Waiting = append(r.Waiting, fmt.Sprintf("PodDisruptionBudget %s/%s: %s", h.Namespace, h.Name, h.Reason))
		}
	}
	r.Healthy = len(r.Waiting) == 0
	return r
}

// healthWatch keeps nodes, pods and budgets current through watches, so
// that waiting for health reacts to changes instead of polling.
type healthWatch struct {
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	pdbs    cache.SharedIndexInformer
	changed chan struct{}
	base    *clusterState
	cancel  context.CancelFunc
}

func startHealthWatch(ctx context.Context, client kubernetes.Interface) (*healthWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(client, 0)
	w := &healthWatch{
		cancel:  cancel,
		factory: f,
		nodes:   f.Core().V1().Nodes().Informer(),
		pods:    f.Core().V1().Pods().Informer(),
		pdbs:    f.Policy().V1().PodDisruptionBudgets().Informer(),
		changed: make(chan struct{}, 1),
		base:    &clusterState{PodGroups: listPodGroups(ctx, client)},
	}
	notify := func() {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{w.nodes, w.pods, w.pdbs} {
		if _, err := inf.AddEventHandler(h); err != nil {
			cancel()
			return nil, err
		}
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			w.stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("watching %v did not sync", typ)
		}
	}
	return w, nil
}

// stop ends the watches and waits for them.
func (w *healthWatch) stop() {
	w.cancel()
	w.factory.Shutdown()
}

// state copies the caches into a clusterState.
func (w *healthWatch) state() *clusterState {
	s := &clusterState{PodGroups: w.base.PodGroups}
	for _, o := range w.nodes.GetStore().List() {
		s.Nodes = append(s.Nodes, *o.(*corev1.Node))
	}
	for _, o := range w.pods.GetStore().List() {
		s.Pods = append(s.Pods, o.(*corev1.Pod)) // shared with the cache, read only
	}
	for _, o := range w.pdbs.GetStore().List() {
		s.PDBs = append(s.PDBs, *o.(*policyv1.PodDisruptionBudget))
	}
	return s
}

// waitHealthy waits until domain ("" for all) is healthy, timeout passes
// (0: no limit) or ctx ends. It calls onWaiting whenever what it waits for
// changes, and returns the last report with a *NotHealthyError on timeout.
func waitHealthy(ctx context.Context, client kubernetes.Interface, lo topology.LayoutOptions, domain string, timeout time.Duration, clk clock.WithTicker, onWaiting func([]string)) (HealthReport, error) {
	start := clk.Now()
	w, err := startHealthWatch(ctx, client)
	if err != nil {
		return HealthReport{}, err
	}
	defer w.stop()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := clk.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C()
	}
	var last string
	for {
		s := w.state()
		layout, err := topology.BuildLayout(s.Nodes, lo)
		if err != nil {
			return HealthReport{}, err
		}
		if domain != "" {
			if _, err := layout.Domain(domain); err != nil {
				return HealthReport{}, err
			}
		}
		r := evaluateHealth(s, layout, domain, clk.Now())
		r.WaitedSeconds = seconds(clk.Since(start))
		if r.Healthy {
			return r, nil
		}
		if joined := strings.Join(r.Waiting, "\n"); joined != last {
			last = joined
			onWaiting(r.Waiting)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-deadline:
			r.WaitedSeconds = seconds(clk.Since(start))
			return r, &NotHealthyError{Domain: domain, Timeout: timeout, Waiting: r.Waiting}
		case <-w.changed:
		}
	}
}

// NotHealthyError reports a domain (or the cluster) not healthy within
// wait-healthy's --timeout.
type NotHealthyError struct {
	// Domain is "" for every domain.
	Domain  string
	Timeout time.Duration
	// Waiting says what is still not healthy.
	Waiting []string
}

func (e *NotHealthyError) Error() string {
	what := "the cluster's groups"
	if e.Domain != "" {
		what = "domain " + e.Domain
	}
	return fmt.Sprintf("%s not healthy within %s: %s", what, e.Timeout, strings.Join(abbreviate(e.Waiting, 10), "; "))
}

func abbreviate(s []string, max int) []string {
	if len(s) <= max {
		return s
	}
	return append(s[:max:max], fmt.Sprintf("and %d more", len(s)-max))
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
