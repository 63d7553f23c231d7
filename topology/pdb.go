package topology

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PDBIndex answers which PodDisruptionBudgets select a pod, with the same
// rules as the Eviction API: a PDB in the pod's namespace whose selector
// matches the pod's labels. An empty selector selects every pod of the
// namespace; a missing or invalid selector selects none.
type PDBIndex struct {
	byNamespace map[string][]pdbEntry
}

type pdbEntry struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

// NewPDBIndex indexes pdbs. The index points into pdbs, which must not
// change while it is in use.
func NewPDBIndex(pdbs []policyv1.PodDisruptionBudget) *PDBIndex {
	idx := &PDBIndex{byNamespace: map[string][]pdbEntry{}}
	for i := range pdbs {
		p := &pdbs[i]
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			// The Eviction API treats an invalid selector as selecting nothing.
			sel = labels.Nothing()
		}
		idx.byNamespace[p.Namespace] = append(idx.byNamespace[p.Namespace], pdbEntry{pdb: p, selector: sel})
	}
	for _, entries := range idx.byNamespace {
		sort.Slice(entries, func(a, b int) bool { return entries[a].pdb.Name < entries[b].pdb.Name })
	}
	return idx
}

// For returns the PDBs that select pod, sorted by name.
func (idx *PDBIndex) For(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	entries := idx.byNamespace[pod.Namespace]
	if len(entries) == 0 {
		return nil
	}
	set := labels.Set(pod.Labels)
	var out []*policyv1.PodDisruptionBudget
	for _, e := range entries {
		if e.selector.Matches(set) {
			out = append(out, e.pdb)
		}
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
