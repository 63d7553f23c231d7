package topology

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// PDBIndex answers which PodDisruptionBudgets select a pod, with the same
// rules as the Eviction API: a PDB in the pod's namespace whose selector
// matches the pod's labels. An empty selector selects every pod of the
// namespace; a missing or invalid selector selects none.
//
// Lookups cost a few map reads per pod label, not one selector match per
// PDB: each PDB is filed under the rarest label=value its selector requires,
// so a namespace with thousands of PDBs stays cheap.
type PDBIndex struct {
	byNamespace map[string]*nsPDBs
}

type pdbEntry struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
	order    int
}

type labelPair struct{ key, value string }

type nsPDBs struct {
	// byLabel files PDBs under one label=value their selector requires.
	byLabel map[labelPair][]*pdbEntry
	// rest holds PDBs whose selectors require no single label value.
	rest []*pdbEntry
}

// NewPDBIndex indexes pdbs. The index points into pdbs, which must not
// change while it is in use.
func NewPDBIndex(pdbs []policyv1.PodDisruptionBudget) *PDBIndex {
	type parsed struct {
		entry *pdbEntry
		pairs []labelPair
	}
	byNS := map[string][]parsed{}
	counts := map[string]map[labelPair]int{}
	for i := range pdbs {
		p := &pdbs[i]
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			// The Eviction API treats an invalid selector as selecting nothing.
			continue
		}
		if labels.MatchesNothing(sel) {
			continue // a nil selector
		}
		var pairs []labelPair
		reqs, _ := sel.Requirements()
		for _, r := range reqs {
			switch r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
				if vals := r.ValuesUnsorted(); len(vals) == 1 {
					pairs = append(pairs, labelPair{r.Key(), vals[0]})
				}
			}
		}
		if counts[p.Namespace] == nil {
			counts[p.Namespace] = map[labelPair]int{}
		}
		for _, lp := range pairs {
			counts[p.Namespace][lp]++
		}
		byNS[p.Namespace] = append(byNS[p.Namespace], parsed{&pdbEntry{pdb: p, selector: sel}, pairs})
	}
	idx := &PDBIndex{byNamespace: make(map[string]*nsPDBs, len(byNS))}
	for ns, list := range byNS {
		sort.Slice(list, func(a, b int) bool { return list[a].entry.pdb.Name < list[b].entry.pdb.Name })
		n := &nsPDBs{byLabel: map[labelPair][]*pdbEntry{}}
		for i, pe := range list {
			pe.entry.order = i
			if len(pe.pairs) == 0 {
				n.rest = append(n.rest, pe.entry)
				continue
			}
			best := pe.pairs[0]
			for _, lp := range pe.pairs[1:] {
				if counts[ns][lp] < counts[ns][best] {
					best = lp
				}
			}
			n.byLabel[best] = append(n.byLabel[best], pe.entry)
		}
		idx.byNamespace[ns] = n
	}
	return idx
}

// For returns the PDBs that select pod, sorted by name.
func (idx *PDBIndex) For(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	n := idx.byNamespace[pod.Namespace]
	if n == nil {
		return nil
	}
	set := labels.Set(pod.Labels)
	var found []*pdbEntry
	for _, e := range n.rest {
		if e.selector.Matches(set) {
			found = append(found, e)
		}
	}
	if len(n.byLabel) > 0 {
		for k, v := range pod.Labels {
			for _, e := range n.byLabel[labelPair{k, v}] {
				if e.selector.Matches(set) {
					found = append(found, e)
				}
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(a, b int) bool { return found[a].order < found[b].order })
	out := make([]*policyv1.PodDisruptionBudget, len(found))
	for i, e := range found {
		out[i] = e.pdb
	}
	return out
}

// PDBNames returns the names of pdbs, in their order.
func PDBNames(pdbs []*policyv1.PodDisruptionBudget) []string {
	if len(pdbs) == 0 {
		return nil
	}
	names := make([]string, len(pdbs))
	for i, p := range pdbs {
		names[i] = p.Name
	}
	return names
}
