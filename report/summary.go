package report

import (
	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// Summary is the end-of-run account of a drain or a rollout, for people:
// the "summary" of the DrainReport and RolloutReport documents and the
// lines under udrain's tables. SummarizeDrain and SummarizeRollout compute
// it from package eviction's results.
type Summary struct {
	// DomainsDone counts domains drained (and, in a rollout, upgraded and
	// recovered, or dry-run); DomainsSkipped those an earlier run of the
	// same rollout had done; DomainsTotal those asked for.
	DomainsDone    int `json:"domainsDone"`
	DomainsSkipped int `json:"domainsSkipped"`
	DomainsTotal   int `json:"domainsTotal"`
	// Phase1Evicted and Phase2Evicted count evictions accepted per phase.
	Phase1Evicted int `json:"phase1Evicted"`
	Phase2Evicted int `json:"phase2Evicted"`
	// GroupsDisrupted counts distinct groups that lost pods.
	GroupsDisrupted int `json:"groupsDisrupted"`
	// GroupsDisruptedAgain counts, in a rollout, the groups disrupted in
	// more than one domain: each landed on a domain not upgraded yet.
	GroupsDisruptedAgain int `json:"groupsDisruptedAgain,omitempty"`
	// LongestDowntime is, in a rollout, the group that was down longest
	// (see eviction.GroupDowntime); nil if none was disrupted.
	LongestDowntime *eviction.GroupDowntime `json:"longestDowntime,omitempty"`
	// LongestBlock is the record of the longest time a PDB refused
	// evictions (the first of the longest); nil if none did.
	LongestBlock *eviction.BlockInfo `json:"longestBlock,omitempty"`
	Duration     udrain.Seconds      `json:"durationSeconds"`
}

// SummarizeDrain sums up the drain of one domain.
func SummarizeDrain(r *eviction.Result) Summary {
	var s Summary
	s.DomainsTotal = 1
	if r.Completed {
		s.DomainsDone = 1
	}
	s.add(r, map[topology.GroupID]bool{})
	s.Duration = r.Duration
	return s
}

// SummarizeRollout sums up a rollout.
func SummarizeRollout(r *eviction.RolloutResult) Summary {
	s := Summary{DomainsTotal: len(r.Domains), Duration: r.Duration}
	seen := map[topology.GroupID]bool{}
	for _, d := range r.Domains {
		switch d.State {
		case eviction.StateSkipped:
			s.DomainsSkipped++
		case eviction.StateDone, eviction.StateDryRun:
			s.DomainsDone++
		}
		if d.Drain != nil {
			again := map[topology.GroupID]bool{}
			for _, g := range d.Drain.GroupsDisrupted {
				again[g] = seen[g]
			}
			s.add(d.Drain, seen)
			for _, a := range again {
				if a {
					s.GroupsDisruptedAgain++
				}
			}
		}
		for i := range d.Groups {
			if g := d.Groups[i]; s.LongestDowntime == nil || g.Downtime > s.LongestDowntime.Downtime {
				s.LongestDowntime = &g
			}
		}
	}
	return s
}

// add counts a domain's drain into s; seen holds the groups counted
// already, so that a group disrupted in two domains counts once.
func (s *Summary) add(r *eviction.Result, seen map[topology.GroupID]bool) {
	s.Phase1Evicted += r.Pods.Phase1Evicted
	s.Phase2Evicted += r.Pods.Phase2Evicted
	for _, g := range r.GroupsDisrupted {
		if !seen[g] {
			seen[g] = true
			s.GroupsDisrupted++
		}
	}
	for i := range r.Blocks {
		if b := r.Blocks[i]; s.LongestBlock == nil || b.Duration > s.LongestBlock.Duration {
			s.LongestBlock = &b
		}
	}
}
