package app

import (
	"fmt"
	"testing"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// largeState is a cluster of domains×perDomain GPU nodes with one
// LeaderWorkerSet group of 8 pods per node pair, 10 workloads, one PDB
// over each workload's leaders.
func largeState(b *testing.B, domains, perDomain int) (*eviction.Snapshot, *topology.Layout) {
	b.Helper()
	s := &eviction.Snapshot{}
	for d := 0; d < domains; d++ {
		for i := 0; i < perDomain; i++ {
			s.Nodes = append(s.Nodes, *gpuNode(fmt.Sprintf("n-%d-%d", d, i), fmt.Sprintf("ud-%d", d), true))
		}
	}
	group := 0
	for d := 0; d < domains; d++ {
		for i := 0; i+1 < perDomain; i += 2 {
			lws := fmt.Sprintf("w%d", group%10)
			for w := 0; w < 8; w++ {
				p := lwsPod(lws, group, w, fmt.Sprintf("n-%d-%d", d, i+w/4))
				p.Annotations[topology.LWSSizeAnnotation] = "8"
				s.Pods = append(s.Pods, p)
			}
			group++
		}
	}
	for w := 0; w < 10; w++ {
		pdb := leaderPDB(fmt.Sprintf("w%d", w), 1)
		pdb.Status.CurrentHealthy, pdb.Status.ExpectedPods = int32(group/10), int32(group/10)
		s.PDBs = append(s.PDBs, *pdb)
	}
	l, err := topology.BuildLayout(s.Nodes, topology.LayoutOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return s, l
}

// BenchmarkBuildDomainList is "udrain domains" after the lists
// (report.NewDomainList), at 1,000 nodes and 4,000 pods.
func BenchmarkBuildDomainList(b *testing.B) {
	s, l := largeState(b, 50, 20)
	h := &health.Report{Healthy: true}
	for _, name := range l.Names() {
		h.Domains = append(h.Domains, health.DomainStatus{Domain: name, Healthy: true})
	}
	b.ReportAllocs()
	for b.Loop() {
		if list := report.NewDomainList(s.Nodes, l, h, gpu.Options{}); len(list.Items) != 50 {
			b.Fatal(len(list.Items))
		}
	}
}
