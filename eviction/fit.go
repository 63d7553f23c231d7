package eviction

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// fitRisks returns the GPU fits of p that warn of pods that may not come
// back, in a sentence each.
func (p *Plan) fitRisks() []string {
	var out []string
	for _, f := range p.GPUFit {
		if f.Risk() {
			out = append(out, f.String())
		}
	}
	return out
}

// withFitWarning logs the fit risks of p, if any, at V(0), and returns the
// Planned event's message with them.
func (p *Plan) withFitWarning(ctx context.Context, msg string) string {
	risks := p.fitRisks()
	if len(risks) == 0 {
		return msg
	}
	klog.FromContext(ctx).Info("The evicted GPU pods may not all fit back onto the domain's nodes; fix placement before the drain", "domain", p.Domain, "gpuFit", risks)
	return msg + "; GPU fit warning: " + strings.Join(risks, "; ")
}

// planNodes returns the nodes of the plan's domain that are in nodes, in
// the plan's order.
func planNodes(nodes []corev1.Node, plan *Plan) []*corev1.Node {
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	out := make([]*corev1.Node, 0, len(plan.Nodes))
	for _, name := range plan.Nodes {
		if n, ok := byName[name]; ok {
			out = append(out, n)
		}
	}
	return out
}

// gpuFits checks, per GPU resource of the domain's nodes, whether the
// planned pods fit back (gpu.Fits): pods are the domain's pods, the plan's
// come back, the others stay with their GPUs unless they are being
// deleted or have finished.
func gpuFits(nodes []*corev1.Node, pods []*corev1.Pod, plan *Plan, opts gpu.Options) []gpu.Fit {
	planned := map[topology.PodRef]bool{}
	for _, p := range plan.Pods() {
		planned[p.PodRef] = true
	}
	var evicted, staying []*corev1.Pod
	for _, p := range pods {
		switch {
		case planned[topology.RefOf(p)]:
			evicted = append(evicted, p)
		case p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			staying = append(staying, p)
		}
	}
	return gpu.Fits(nodes, evicted, staying, opts)
}
