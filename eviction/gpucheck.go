package eviction

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// DefaultGPUGrace is how long a rollout waits, after a domain's upgrade
// step, for its GPU nodes to advertise their GPUs again (a rebooted node's
// driver loading and device plugin starting) before it reports them lost.
const DefaultGPUGrace = 5 * time.Minute

// gpuCheck says how a rollout checks, after each domain's upgrade step and
// before the domain is uncordoned, that its GPU nodes advertise the GPUs
// they had before the drain. An upgrade is when a bad driver, or a new
// taint the device plugin does not tolerate, shows up; a node that comes
// back without its GPUs would take its groups' pods but never run them.
// The check reads the nodes once the rollout's view shows the mark it
// writes after the upgrade step, so never as they were before the step.
// The zero value checks, with DefaultGPUGrace.
type gpuCheck struct {
	// Disabled turns the check off.
	Disabled bool
	// Grace is how long to wait for the GPUs to come back; zero means
	// DefaultGPUGrace.
	Grace time.Duration
}

// gpusLostMessage names the nodes (five at most), their GPUs before and
// now, and why: a device plugin that cannot run there and its fix, else
// the node's first problem.
func gpusLostMessage(losses []gpu.Loss, grace time.Duration) string {
	var parts []string
	for _, n := range losses {
		s := fmt.Sprintf("node %s advertises %d %s, had %d", n.Node, n.After, n.Resource, n.Before)
		var why []string
		for _, d := range n.Diagnoses {
			if !d.CanRun && d.Fix != "" {
				why = append(why, fmt.Sprintf("device plugin %s cannot run there: %s", d.DaemonSet, d.Fix))
			} else if !d.CanRun {
				why = append(why, fmt.Sprintf("device plugin %s cannot run there", d.DaemonSet))
			}
		}
		if len(why) == 0 {
			for _, f := range n.Findings {
				if f.IsProblem() {
					why = append(why, f.Message)
					break
				}
			}
		}
		if len(why) > 0 {
			s += " (" + strings.Join(why, "; ") + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d GPU node(s) came back from the upgrade without their GPUs after %s: %s; fix the driver or the device plugin, then run the rollout again",
		len(losses), grace, strings.Join(abbreviate(parts, 5), "; "))
}

// upgradeMark is the node markUpgraded patched after the upgrade step, and
// the mark it wrote ("" node: none).
type upgradeMark struct{ node, id string }

// seen reports whether the view shows the mark: node events come in the
// order they were written, so the view then also shows what the upgrade
// step did to the domain's nodes before it.
func (m upgradeMark) seen(v *view) bool {
	if m.node == "" {
		return true
	}
	n, ok := v.Node(m.node)
	return !ok || n.Annotations[udrain.UpgradedByAnnotation] == m.id
}

// checkGPUs waits, on the view's events, until every GPU node of the
// domain advertises the GPUs it should, or the grace period passes; then
// it returns a *ClusterError (ReasonGPUsLost) with package gpu's diagnosis. It judges the
// nodes only once the view shows mark: before, it may still show them as
// they were before the upgrade step.
func (d *Drainer) checkGPUs(ctx context.Context, v *view, dom topology.Domain, before map[string]int64, mark upgradeMark, check gpuCheck, emit func(Event)) error {
	if check.Disabled {
		return nil
	}
	grace := check.Grace
	if grace == 0 {
		grace = DefaultGPUGrace
	}
	logger := klog.FromContext(ctx).WithValues("domain", dom.Name)
	deadline := d.s.Clock.NewTimer(grace)
	defer deadline.Stop()
	reported := ""
	for {
		changed := v.Changed()
		if !mark.seen(v) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
				continue
			case <-deadline.C():
				return fmt.Errorf("the view of the cluster did not show node %s's upgraded mark within the GPU check's grace period (%v): the node watch is behind; run the rollout again", mark.node, grace)
			}
		}
		lost := gpu.Losses(before, viewNodes(v, dom), nil, d.s.GPU)
		if len(lost) == 0 {
			return nil
		}
		names := make([]string, len(lost))
		for i, l := range lost {
			names[i] = fmt.Sprintf("%s %d/%d", l.Node, l.After, l.Before)
		}
		if msg := strings.Join(names, ", "); msg != reported {
			reported = msg
			logger.V(2).Info("Waiting for GPU nodes to advertise their GPUs", "nodes", msg)
			emit(Event{Type: EventWaitingGPUs, Message: "waiting for GPUs to be advertised again: " + msg})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-deadline.C():
			lost = gpu.Losses(before, viewNodes(v, dom), d.daemonSets(ctx, v), d.s.GPU)
			if len(lost) == 0 {
				return nil
			}
			logger.Info("GPU nodes came back without their GPUs", "nodes", len(lost), "grace", grace)
			return &ClusterError{Reason: ReasonGPUsLost, Domain: dom.Name, Losses: lost, Waited: grace}
		}
	}
}

// viewNodes returns the domain's nodes as the view shows them, leaving out
// those deleted (replaced nodes come back with other names).
func viewNodes(v *view, dom topology.Domain) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(dom.Nodes))
	for _, name := range dom.Nodes {
		if n, ok := v.Node(name); ok {
			out = append(out, n)
		}
	}
	return out
}

// daemonSets returns the cluster's DaemonSets, to diagnose the nodes that
// lost GPUs: the view's, from the caller's DaemonSet informer, or listed in
// pages as Drainer.DaemonSets lists them. When they cannot be listed (no
// permission, say) it logs so and returns nil: the losses go undiagnosed.
func (d *Drainer) daemonSets(ctx context.Context, v *view) []*appsv1.DaemonSet {
	if v.HasDaemonSets() {
		var out []*appsv1.DaemonSet
		for _, o := range v.DaemonSetObjects() {
			out = append(out, o.(*appsv1.DaemonSet))
		}
		return out
	}
	list, err := d.listDaemonSets(ctx)
	if err != nil {
		klog.FromContext(ctx).Info("Cannot list DaemonSets to diagnose the GPU nodes", "err", err)
		return nil
	}
	out := make([]*appsv1.DaemonSet, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out
}
