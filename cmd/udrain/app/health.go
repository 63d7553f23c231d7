package app

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// "udrain wait-healthy" asks package eviction whether a domain is healthy
// (Drainer.WaitHealthy to wait on its watch, Drainer.Health for what is
// still missing) and describes, in its report, the groups and budgets that
// count. The decision is eviction's alone: a group or budget is unhealthy
// in the report exactly when one of eviction's lines names it.

// healthCheck is one wait-healthy: a domain ("" for every domain) judged
// by a Drainer.
type healthCheck struct {
	client  kubernetes.Interface
	drainer *eviction.Drainer
	layout  topology.LayoutOptions
	domain  string
	clock   clock.WithTicker
}

// newHealthCheck returns the check of domain; onWaiting is called with what
// a domain still waits for (lines joined by "; ") whenever that changes.
func newHealthCheck(client kubernetes.Interface, lo topology.LayoutOptions, domain string, clk clock.WithTicker, onWaiting func(domain, waiting string)) (*healthCheck, error) {
	// Health is about groups, not about what a drain may evict: eviction
	// counts the groups of the pods its drain filters let through, so let
	// every pod through (kubectl drain would refuse unreplicated pods and
	// pods with emptyDir without these flags; DaemonSet pods are no group's).
	helper := eviction.KubectlDefaults()
	helper.Force, helper.DeleteEmptyDirData, helper.IgnoreAllDaemonSets = true, true, true
	d, err := eviction.New(client, eviction.Options{
		Helper:      helper,
		DomainLabel: lo.LabelKey,
		Unlabeled:   lo.Unlabeled,
		Clock:       clk,
		OnEvent: func(e eviction.Event) {
			if e.Type == eviction.EventWaitingRecovery {
				onWaiting(e.Domain, e.Message)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return &healthCheck{client: client, drainer: d, layout: lo, domain: domain, clock: clk}, nil
}

func (h *healthCheck) domains() []string {
	if h.domain == "" {
		return nil
	}
	return []string{h.domain}
}

// wait waits until the domain is healthy, timeout passes (0: no limit) or
// ctx ends, and returns the report of that moment: with a
// *NotHealthyError after timeout, with ctx's error when ctx ended. The
// timeout runs on the check's clock.
func (h *healthCheck) wait(ctx context.Context, timeout time.Duration) (HealthReport, error) {
	start := h.clock.Now()
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	if timeout > 0 {
		t := h.clock.NewTimer(timeout)
		defer t.Stop()
		go func() {
			select {
			case <-t.C():
				timedOut.Store(true)
				cancel()
			case <-waitCtx.Done():
			}
		}()
	}
	err := h.drainer.WaitHealthy(waitCtx, h.domains()...)
	switch {
	case err == nil:
		r, err := h.report(ctx, nil)
		r.WaitedSeconds = seconds(h.clock.Since(start))
		return r, err
	case ctx.Err() != nil:
		// Interrupted: say what was missing, if the API still answers.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		r, rerr := h.current(rctx)
		if rerr != nil {
			r = HealthReport{TypeMeta: typeMeta(KindHealthReport), Domain: h.domain, Groups: []GroupInfo{}, PDBs: []PDBHealth{}, Waiting: []string{}}
		}
		r.WaitedSeconds = seconds(h.clock.Since(start))
		return r, ctx.Err()
	case !timedOut.Load():
		return HealthReport{}, err // the layout, the domain or the watch failed
	}
	r, err := h.current(ctx)
	if err != nil {
		return HealthReport{}, err
	}
	r.WaitedSeconds = seconds(h.clock.Since(start))
	if r.Healthy { // healthy just as the time ran out
		return r, nil
	}
	return r, &NotHealthyError{Domain: h.domain, Timeout: timeout, Waiting: r.Waiting}
}

// current reports the domain's health now, without waiting.
func (h *healthCheck) current(ctx context.Context) (HealthReport, error) {
	waiting, err := h.drainer.Health(ctx, h.domains()...)
	if err != nil {
		return HealthReport{}, err
	}
	return h.report(ctx, waiting)
}

// report lists the cluster and describes the groups and budgets that count
// next to eviction's waiting lines.
func (h *healthCheck) report(ctx context.Context, waiting []string) (HealthReport, error) {
	s, err := listCluster(ctx, h.client, listWhat{pods: true, pdbs: true})
	if err != nil {
		return HealthReport{}, err
	}
	layout, err := topology.BuildLayout(s.Nodes, h.layout)
	if err != nil {
		return HealthReport{}, err
	}
	return buildHealthReport(s, layout, h.domain, waiting), nil
}

// buildHealthReport describes the health of domain ("" for every domain)
// given waiting, package eviction's lines of what is still missing (from
// Drainer.Health: each prefixed with its domain and ": "). The groups that
// count are those with a member on the domain's nodes, the budgets those
// selecting such a member, as in eviction. A group or budget is healthy
// unless a waiting line names it; the report's waiting lines lose their
// domain prefix when one domain was asked for.
func buildHealthReport(s *clusterState, layout *topology.Layout, domain string, waiting []string) HealthReport {
	r := HealthReport{TypeMeta: typeMeta(KindHealthReport), Domain: domain, Groups: []GroupInfo{}, PDBs: []PDBHealth{}, Waiting: []string{}}
	reasons := map[string]string{} // "group NS/NAME" or "PodDisruptionBudget NS/NAME" -> reason
	for _, line := range waiting {
		bare := line
		for _, d := range layout.Names() {
			if rest, ok := strings.CutPrefix(line, d+": "); ok {
				bare = rest
				break
			}
		}
		if domain != "" {
			line = bare
		}
		r.Waiting = append(r.Waiting, line)
		if what, why, ok := strings.Cut(bare, ": "); ok {
			if _, seen := reasons[what]; !seen {
				reasons[what] = why
			}
		}
	}
	counts := func(node string) bool {
		d, ok := layout.DomainOf(node)
		return ok && (domain == "" || d == domain)
	}
	idx := topology.NewPDBIndex(s.PDBs)
	pdbSeen := map[string]bool{}
	var pdbs []*policyv1.PodDisruptionBudget
	groups := s.groups()
	for i := range groups {
		g := &groups[i]
		var local []*corev1.Pod
		for _, m := range g.Members {
			if counts(m.Spec.NodeName) {
				local = append(local, m)
			}
		}
		if len(local) == 0 {
			continue
		}
		gi := groupInfo(g, layout)
		gi.Reason = reasons["group "+g.ID.String()]
		gi.Healthy = gi.Reason == ""
		r.Groups = append(r.Groups, gi)
		for _, m := range local {
			for _, b := range idx.For(m) {
				if key := b.Namespace + "/" + b.Name; !pdbSeen[key] {
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
		h := PDBHealth{
			Namespace: b.Namespace, Name: b.Name,
			DisruptionsAllowed: b.Status.DisruptionsAllowed, CurrentHealthy: b.Status.CurrentHealthy,
			DesiredHealthy: b.Status.DesiredHealthy, ExpectedPods: b.Status.ExpectedPods,
			Reason: reasons["PodDisruptionBudget "+b.Namespace+"/"+b.Name],
		}
		h.Healthy = h.Reason == ""
		r.PDBs = append(r.PDBs, h)
	}
	r.Healthy = len(r.Waiting) == 0
	return r
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
