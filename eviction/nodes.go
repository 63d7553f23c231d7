package eviction

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// forEach runs fn for every item, at most limit at once, and returns the
// first error; once one fails, the calls not yet started see a cancelled
// context. A domain's node patches (cordon, upgraded mark, uncordon) are
// independent of each other: made one after another they cost a round
// trip each, ~3s per domain of 50 nodes on a loaded API server; so are a
// drain's preflight dry runs, one a namespace.
func forEach[T any](ctx context.Context, limit int, items []T, fn func(ctx context.Context, i int, item T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i, item := range items {
		g.Go(func() error { return fn(gctx, i, item) })
	}
	return g.Wait()
}

// patchNode sends a strategic merge patch to a node, retrying transient
// errors; a node that is gone is not an error (false).
func (d *Drainer) patchNode(ctx context.Context, emit func(Event), what, name string, patch []byte, opts metav1.PatchOptions) (bool, error) {
	unanswered := 0
	err := retryTransient(ctx, d.s, func(e Event) {
		e.Node = name
		klog.FromContext(ctx).V(2).Info("Node patch failed; retrying", "node", name, "what", what, "err", e.Err)
		emit(e)
	}, what+" node "+name, func() error {
		timedOut, err := d.s.write(ctx, func(ctx context.Context) error {
			_, err := d.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
			return err
		})
		if !timedOut {
			unanswered = 0
		} else if unanswered++; unanswered >= unansweredWrites {
			return d.unanswered("the patch of node "+name+" ("+what+")", unanswered, err)
		}
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s node %s: %w", what, name, err)
	}
	return true, nil
}

func cordonFields(id string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{udrain.CordonedByAnnotation: id}},
		"spec":     map[string]any{"unschedulable": true},
	}
}

func cordonPatch(id string) []byte {
	p, _ := json.Marshal(cordonFields(id))
	return p
}

// uncordonFields makes a node schedulable and removes udrain's cordon
// mark; with an upgraded mark it records on the node, in the same patch,
// that the rollout upgraded it (resume reads both marks: see upgradedBy).
func uncordonFields(upgradedBy string, at time.Time) map[string]any {
	ann := map[string]any{udrain.CordonedByAnnotation: nil}
	if upgradedBy != "" {
		ann[udrain.UpgradedByAnnotation] = upgradedBy
		ann[udrain.UpgradedAtAnnotation] = at.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": ann},
		"spec":     map[string]any{"unschedulable": false},
	}
}

func upgradedFields(id string, at time.Time) map[string]any {
	return map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		udrain.UpgradedByAnnotation: id, udrain.UpgradedAtAnnotation: at.UTC().Format(time.RFC3339Nano)}}}
}

// cordon marks the domain's nodes unschedulable, recording that udrain did
// it; with dryRun the API only validates the change. The same patch takes
// a rollout's pending-upgrade taint off: the cordon keeps evicted pods
// off the domain, and DaemonSet pods, which tolerate the cordon but not
// the taint when it is NoSchedule, must be able to start there during the
// upgrade step (a device plugin the upgrade restarts).
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
		n, ok := ex.v.Node(name)
		switch {
		case !ok:
			outcome[i] = gone
		case n.Spec.Unschedulable:
			if _, ours := n.Annotations[udrain.CordonedByAnnotation]; !ours {
				outcome[i] = already
			}
		default:
			todo, idx = append(todo, name), append(idx, i)
		}
	}
	patch := cordonPatch(ex.id)
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err := forEach(ctx, ex.d.s.Concurrency, todo, func(ctx context.Context, j int, name string) error {
		var ok bool
		var err error
		if n, seen := ex.v.Node(name); seen && !dryRun && hasPendingTaint(n) {
			ok, err = ex.d.patchTaints(ctx, ex.emit, "cordon", name, n, cordonFields(ex.id), withoutPendingTaint)
		} else {
			ok, err = ex.d.patchNode(ctx, ex.emit, "cordon", name, patch, opts)
		}
		switch {
		case err != nil:
			return err
		case ok:
			outcome[idx[j]] = cordoned
		default:
			outcome[idx[j]] = gone
		}
		return nil
	})
	// A cordon refused for want of permission, before any node was
	// cordoned, changed nothing: the drain's first change.
	if err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) && !slices.Contains(outcome, cordoned) {
		err = &PermissionError{Reason: ReasonForbidden, Err: err}
	}
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
			msg := "cordoned"
			if dryRun {
				msg = "would be cordoned (server dry run)"
			}
			ex.emit(Event{Type: EventCordoned, Node: name, Message: msg})
		}
	}
	return err
}

// uncordonNodes makes nodes schedulable again and removes udrain's cordon
// mark and pending-upgrade taint, concurrently, marking each upgraded by
// upgradedBy unless it is empty; it reports each node uncordoned and
// returns them in the order given. One patch a node: the taint goes with
// the uncordon.
func (d *Drainer) uncordonNodes(ctx context.Context, emit func(Event), lookup nodeLookup, names []string, upgradedBy string, at time.Time) ([]string, error) {
	ok := make([]bool, len(names))
	fields := uncordonFields(upgradedBy, at)
	err := forEach(ctx, d.s.Concurrency, names, func(ctx context.Context, i int, name string) error {
		n, _ := lookup(name)
		done, err := d.patchTaints(ctx, emit, "uncordon", name, n, fields, withoutPendingTaint)
		if err != nil {
			return err
		}
		if done {
			ok[i] = true
			emit(Event{Type: EventUncordoned, Node: name})
		}
		return nil
	})
	return selected(names, ok), err
}

// markUpgraded records that the rollout id upgraded the domain, on one of
// its nodes (the first that exists), before anything is uncordoned; each
// node then gets the mark with its uncordon patch. Two patches per node
// instead of three, and resume as strong: a rollout stopped after this
// finds the domain upgraded (upgradedBy: every node marked, or still
// cordoned by the rollout beside a marked one) and only finishes the
// uncordon and the recovery.
func (d *Drainer) markUpgraded(ctx context.Context, emit func(Event), nodes []string, id string, at time.Time) (marked string, err error) {
	patch, _ := json.Marshal(upgradedFields(id, at))
	for _, n := range nodes {
		ok, err := d.patchNode(ctx, emit, "mark upgraded", n, patch, metav1.PatchOptions{})
		if err != nil {
			return "", err
		}
		if ok {
			return n, nil
		}
	}
	return "", nil
}

// Uncordon makes every node of the domain schedulable again, like kubectl
// uncordon, and removes udrain's cordon mark; it returns the nodes it
// changed. It is how a domain held by an unfinished drain or rollout is
// released by hand. A Drainer from NewReader returns a
// *udrain.ConfigError instead, before any request.
func (d *Drainer) Uncordon(ctx context.Context, domain string) ([]string, error) {
	if err := d.writable("Uncordon"); err != nil {
		return nil, err
	}
	if domain == "" {
		return nil, emptyDomainError("Drainer.Uncordon(domain)")
	}
	nodes, err := d.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	layout, err := topology.BuildLayout(nodes, d.s.layoutOptions())
	if err != nil {
		return nil, err
	}
	dom, err := layout.Domain(domain)
	if err != nil {
		return nil, err
	}
	var todo []string
	byName := map[string]*corev1.Node{}
	for _, n := range domainNodes(nodes, dom) {
		if n.Spec.Unschedulable || n.Annotations[udrain.CordonedByAnnotation] != "" || hasPendingTaint(n) {
			todo = append(todo, n.Name)
			byName[n.Name] = n
		}
	}
	emit := func(e Event) {
		e.Time, e.Domain = d.s.Clock.Now(), domain
		d.events.emit(callSinkFrom(ctx), e)
	}
	done, err := d.uncordonNodes(ctx, emit, func(name string) (*corev1.Node, bool) { n, ok := byName[name]; return n, ok }, todo, "", time.Time{})
	klog.FromContext(ctx).Info("Uncordoned", "domain", domain, "nodes", len(done))
	return done, err
}

// domainNodes returns the nodes of the domain, in the order of nodes.
func domainNodes(nodes []corev1.Node, dom topology.Domain) []*corev1.Node {
	in := make(map[string]bool, len(dom.Nodes))
	for _, n := range dom.Nodes {
		in[n] = true
	}
	var out []*corev1.Node
	for i := range nodes {
		if in[nodes[i].Name] {
			out = append(out, &nodes[i])
		}
	}
	return out
}

// nodeReady reports whether node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
