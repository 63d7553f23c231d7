package gpu

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const benchNodes = 10000

// benchCluster returns n nodes in the proportions of a large inference
// cluster: 60% CPU nodes with NFD labels, then GPU Operator H100 nodes,
// MIG, AMD, Intel, GKE, EKS, Karpenter nodes, and a few broken ones.
func benchCluster(n int) []corev1.Node {
	dedicated := withTaint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)
	kinds := []func(name string) *corev1.Node{
		func(name string) *corev1.Node { return newNode(name, nfdCPU) },
		func(name string) *corev1.Node { return newNode(name, nfdCPU) },
		func(name string) *corev1.Node { return newNode(name, nfdCPU) },
		func(name string) *corev1.Node { return newNode(name, nfdCPU) },
		func(name string) *corev1.Node { return newNode(name, nfdCPU) },
		func(name string) *corev1.Node { return newNode(name, nfdCPU) },
		func(name string) *corev1.Node {
			return newNode(name, merge(nfdCPU, gpuOperatorH100), dedicated, withResource("nvidia.com/gpu", 8, 8))
		},
		func(name string) *corev1.Node {
			return newNode(name, merge(nfdCPU, gfdA100MixedMIG), dedicated, withResource("nvidia.com/mig-1g.10gb", 14, 14), withResource("nvidia.com/mig-3g.40gb", 4, 4))
		},
		func(name string) *corev1.Node {
			return newNode(name, merge(nfdCPU, amdMI300X), withResource("amd.com/gpu", 8, 8))
		},
		func(name string) *corev1.Node { return newNode(name, merge(nfdCPU, gpuOperatorH100), dedicated) },
	}
	nodes := make([]corev1.Node, n)
	for i := range nodes {
		nodes[i] = *kinds[i%len(kinds)](fmt.Sprintf("node-%05d", i))
	}
	return nodes
}

// BenchmarkClassifyNode classifies 10,000 nodes per iteration and reports
// ns per node. Compare the mix with its cheapest and dearest members in the
// same run:
//
//	go test -run '^$' -bench . -benchmem ./gpu/
func BenchmarkClassifyNode(b *testing.B) {
	mixed := benchCluster(benchNodes)
	cpu := make([]corev1.Node, benchNodes)
	h100 := make([]corev1.Node, benchNodes)
	for i := range cpu {
		cpu[i] = mixed[0]
		h100[i] = mixed[6]
	}
	opts := Options{Clock: testOptions().Clock}
	for _, bc := range []struct {
		name  string
		nodes []corev1.Node
	}{{"mix", mixed}, {"cpu-only", cpu}, {"gpu-operator-h100", h100}} {
		b.Run(fmt.Sprintf("%s/nodes=%d", bc.name, len(bc.nodes)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range bc.nodes {
					_ = ClassifyNode(&bc.nodes[i], opts)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bc.nodes)), "ns/node")
		})
	}
}

// BenchmarkSummarize summarises 10,000 nodes with the device plugin
// DaemonSet, which is diagnosed against every node missing its resource.
func BenchmarkSummarize(b *testing.B) {
	nodes := benchCluster(benchNodes)
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	ds := []*appsv1.DaemonSet{devicePluginDS()}
	opts := Options{Clock: testOptions().Clock, GracePeriod: time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		_ = Summarize(ptrs, ds, opts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(nodes)), "ns/node")
}
