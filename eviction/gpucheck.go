package eviction

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// DefaultGPUGrace is how long a rollout waits, after a domain's upgrade
// step, for its GPU nodes to advertise their GPUs again (a rebooted node's
// driver loading and device plugin starting) before it reports them lost.
const DefaultGPUGrace = 5 * time.Minute

// GPUCheck says how a rollout checks, after each domain's upgrade step and
// before the domain is uncordoned, that its GPU nodes advertise the GPUs
// they had before the drain. An upgrade is when a bad driver, or a new
// taint the device plugin does not tolerate, shows up; a node that comes
// back without its GPUs would take its groups' pods but never run them.
// The check reads the nodes once the rollout's view shows the mark it
// writes after the upgrade step, so never as they were before the step.
// The zero value checks, with DefaultGPUGrace.
type GPUCheck struct {
	// Disabled turns the check off.
	Disabled bool
	// Grace is how long to wait for the GPUs to come back; zero means
	// DefaultGPUGrace.
	Grace time.Duration
}

// GPULoss is a GPU node that came back from its upgrade with fewer GPUs
// advertised than before.
type GPULoss struct {
	Node string `json:"node"`
	// Resource is the extended resource (nvidia.com/gpu); Before and
	// After its allocatable amounts before the drain and now.
	Resource corev1.ResourceName `json:"resource"`
	Before   int64               `json:"before"`
	After    int64               `json:"after"`
	// Findings are package gpu's findings about the node now
	// (ResourceMissing, AllocatableZero, ...); Diagnoses the device plugin
	// DaemonSets checked against it (an untolerated taint, a node
	// selector or affinity it fails), each with its fix.
	Findings  []gpu.Finding   `json:"findings,omitempty"`
	Diagnoses []gpu.Diagnosis `json:"diagnoses,omitempty"`
}

// GPULostError reports GPU nodes of a domain that, after the upgrade step
// and the grace period, do not advertise the GPUs they had before the
// drain. The rollout stops before the domain is uncordoned (and so before
// the next domain); run it again once the nodes are fixed and it goes on.
type GPULostError struct {
	Grace time.Duration
	Nodes []GPULoss
}

func (e *GPULostError) Error() string {
	var parts []string
	for _, n := range e.Nodes {
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
		len(e.Nodes), e.Grace, strings.Join(abbreviate(parts, 5), "; "))
}

// gpusBefore records the GPUs each GPU node of the domain advertises (0
// for one whose GPUs were missing already: the upgrade is not to blame).
func gpusBefore(nodes []corev1.Node, dom topology.Domain) map[string]int64 {
	out := map[string]int64{}
	for _, n := range domainNodes(nodes, dom) {
		if c := gpu.ClassifyNode(n, gpu.Options{}); c.GPU {
			out[n.Name] = c.Allocatable
		}
	}
	return out
}

// expectedGPUs is what a GPU node should advertise after its upgrade: what
// it had before the drain, or, when the rollout resumes and does not know,
// what its labels and capacity say it has.
func expectedGPUs(c gpu.Classification, before map[string]int64) int64 {
	if b, ok := before[c.Node]; ok {
		return b
	}
	return max(c.LabelCount, c.Capacity)
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
	return !ok || n.Annotations[UpgradedByAnnotation] == m.id
}

// checkGPUs waits, on the view's events, until every GPU node of the
// domain advertises the GPUs it should, or the grace period passes; then
// it returns a *GPULostError with package gpu's diagnosis. It judges the
// nodes only once the view shows mark: before, it may still show them as
// they were before the upgrade step.
func (d *Drainer) checkGPUs(ctx context.Context, v *view, dom topology.Domain, before map[string]int64, mark upgradeMark, check GPUCheck, emit func(Event)) error {
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
		lost := d.gpuLosses(v, dom, before)
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
			lost = d.gpuLosses(v, dom, before)
			if len(lost) == 0 {
				return nil
			}
			d.diagnoseGPULosses(ctx, v, lost)
			logger.Info("GPU nodes came back without their GPUs", "nodes", len(lost), "grace", grace)
			return &GPULostError{Grace: grace, Nodes: lost}
		}
	}
}

// gpuLosses returns the domain's GPU nodes that advertise fewer GPUs than
// they should.
func (d *Drainer) gpuLosses(v *view, dom topology.Domain, before map[string]int64) []GPULoss {
	var out []GPULoss
	for _, name := range dom.Nodes {
		n, ok := v.Node(name)
		if !ok {
			continue // deleted: replaced nodes come back with other names
		}
		c := gpu.ClassifyNode(n, gpu.Options{})
		if !c.GPU {
			continue
		}
		if want := expectedGPUs(c, before); c.Allocatable < want {
			out = append(out, GPULoss{Node: name, Resource: c.Resource, Before: want, After: c.Allocatable, Findings: c.Problems()})
		}
	}
	return out
}

// diagnoseGPULosses checks the device plugin DaemonSets against each node
// that lost GPUs, from the caller's DaemonSet informer or one list; without
// the permission to list them, the losses go undiagnosed.
func (d *Drainer) diagnoseGPULosses(ctx context.Context, v *view, lost []GPULoss) {
	var daemonSets []appsv1.DaemonSet
	if v.HasDaemonSets() {
		for _, o := range v.DaemonSetObjects() {
			daemonSets = append(daemonSets, *o.(*appsv1.DaemonSet))
		}
	} else {
		list, err := d.client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			klog.FromContext(ctx).Info("Cannot list DaemonSets to diagnose the GPU nodes", "err", err)
			return
		}
		daemonSets = list.Items
	}
	for i := range lost {
		n, ok := v.Node(lost[i].Node)
		if !ok {
			continue
		}
		vendor := gpu.ClassifyNode(n, gpu.Options{}).Vendor
		for j := range daemonSets {
			if dv, ok := gpu.DevicePluginVendor(&daemonSets[j]); ok && dv == vendor {
				lost[i].Diagnoses = append(lost[i].Diagnoses, gpu.DiagnoseDaemonSet(&daemonSets[j], n))
			}
		}
		slices.SortFunc(lost[i].Diagnoses, func(a, b gpu.Diagnosis) int { return strings.Compare(a.DaemonSet, b.DaemonSet) })
	}
}
