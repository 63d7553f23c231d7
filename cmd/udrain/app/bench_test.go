package app

import (
	"fmt"
	"testing"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/topology"
)

// largeState is a cluster of domains×perDomain GPU nodes with one
// LeaderWorkerSet group of 8 pods per node pair, 10 workloads, one PDB
// over each workload's leaders.
func largeState(b *testing.B, domains, perDomain int) (*clusterState, *topology.Layout) {
	b.Helper()
	s := &clusterState{}
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

// BenchmarkHealthReport is the description wait-healthy adds to package
// eviction's verdict (groups and budgets that count), at 1,000 nodes and
// 4,000 pods, with one waiting line.
func BenchmarkHealthReport(b *testing.B) {
	s, l := largeState(b, 50, 20)
	for _, domain := range []string{"ud-7", ""} {
		name := "domain"
		if domain == "" {
			name = "all"
		}
		b.Run(name, func(b *testing.B) {
			waiting := []string{"ud-7: group inference/w0-70: 7/8 members Ready; not Ready: w0-70-1"}
			b.ReportAllocs()
			for b.Loop() {
				if r := buildHealthReport(s, l, domain, waiting); r.Healthy || len(r.Groups) == 0 {
					b.Fatal(r.Waiting)
				}
			}
		})
	}
}

// BenchmarkBuildDomainList is "udrain domains" after the lists, at 1,000
// nodes and 4,000 pods.
func BenchmarkBuildDomainList(b *testing.B) {
	s, l := largeState(b, 50, 20)
	b.ReportAllocs()
	for b.Loop() {
		if list := buildDomainList(s, l, gpu.Options{}); len(list.Items) != 50 {
			b.Fatal(len(list.Items))
		}
	}
}
