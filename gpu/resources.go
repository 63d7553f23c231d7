package gpu

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// migResource is an nvidia.com/mig-<profile> resource of the mixed strategy.
type migResource struct {
	ResourceAmount
	profile string
}

// resources is what the node status says about accelerator resources.
type resources struct {
	amounts        []ResourceAmount // sorted by name
	ranks          []int            // rank of amounts[i] within its vendor
	migs           []migResource
	sharedResource bool // nvidia.com/gpu.shared: time-slicing with renameByDefault
}

// scanResources collects the accelerator resources in capacity and
// allocatable. Resources listed with nothing in either are left out: they
// prove nothing.
func scanResources(node *corev1.Node, extra map[corev1.ResourceName]Vendor) resources {
	type ranked struct {
		ResourceAmount
		rank int
	}
	var found []ranked
	for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		for name := range list {
			v, rank, ok := resourceVendor(name, extra)
			if !ok || slices.ContainsFunc(found, func(f ranked) bool { return f.Name == name }) {
				continue
			}
			capacity := quantity(node.Status.Capacity, name)
			allocatable := quantity(node.Status.Allocatable, name)
			if capacity == 0 && allocatable == 0 {
				continue
			}
			found = append(found, ranked{ResourceAmount{Name: name, Vendor: v, Capacity: capacity, Allocatable: allocatable}, rank})
		}
	}
	slices.SortFunc(found, func(a, b ranked) int { return strings.Compare(string(a.Name), string(b.Name)) })
	var r resources
	for _, f := range found {
		r.amounts = append(r.amounts, f.ResourceAmount)
		r.ranks = append(r.ranks, f.rank)
		s := string(f.Name)
		if s == "nvidia.com/gpu.shared" {
			r.sharedResource = true
		}
		if rest, ok := strings.CutPrefix(s, "nvidia.com/mig-"); ok {
			profile := strings.TrimSuffix(rest, ".shared")
			if validMIGProfile(profile) == nil {
				r.migs = append(r.migs, migResource{ResourceAmount: f.ResourceAmount, profile: profile})
			}
		}
	}
	return r
}

// quantity returns an integer resource amount; device counts are integers,
// and a value that does not fit an int64 is not one.
func quantity(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return 0
	}
	return n
}

// allocatable sums the allocatable devices of vendor v.
func (r resources) allocatable(v Vendor) int64 {
	var n int64
	for _, a := range r.amounts {
		if a.Vendor == v {
			n += a.Allocatable
		}
	}
	return n
}

// pickResource chooses the primary resource of c.Vendor: the best-ranked
// one with allocatable devices, else the best-ranked one listed at all, else
// the name the vendor's device plugin would use.
func (c *Classification) pickResource(r resources) {
	pick := -1
	for pass := 0; pass < 2 && pick < 0; pass++ {
		for i, a := range r.amounts {
			if a.Vendor != c.Vendor || pass == 0 && a.Allocatable == 0 {
				continue
			}
			if pick < 0 || r.ranks[i] < r.ranks[pick] {
				pick = i
			}
		}
	}
	if pick < 0 {
		c.Resource = c.Vendor.DefaultResource()
		return
	}
	a := r.amounts[pick]
	c.Resource, c.Capacity, c.Allocatable = a.Name, a.Capacity, a.Allocatable
}
