package eviction

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// requestCache keeps pods' requests (in milli-units, by resource) by UID
// from one simulation to the next of a rollout's decisions, which each
// see new copies of the same pods. A pod resized in place keeps the
// requests it was first seen with: the room is modelled simply. Its
// methods do nothing on a nil cache.
type requestCache struct {
	by  map[types.UID]*cachedRequests
	gen int
}

type cachedRequests struct {
	r   map[corev1.ResourceName]int64
	gen int // the last simulation that saw it
}

func newRequestCache() *requestCache {
	return &requestCache{by: map[types.UID]*cachedRequests{}}
}

func (c *requestCache) get(p *corev1.Pod) (map[corev1.ResourceName]int64, bool) {
	if c == nil || p.UID == "" {
		return nil, false
	}
	e, ok := c.by[p.UID]
	if !ok {
		return nil, false
	}
	e.gen = c.gen
	return e.r, true
}

// put keeps p's requests; false when it does not (a nil cache, a pod
// without UID).
func (c *requestCache) put(p *corev1.Pod, r map[corev1.ResourceName]int64) bool {
	if c == nil || p.UID == "" {
		return false
	}
	c.by[p.UID] = &cachedRequests{r: r, gen: c.gen}
	return true
}

// turn forgets the pods the last simulation did not see (gone since).
func (c *requestCache) turn() {
	if c == nil {
		return
	}
	for uid, e := range c.by {
		if e.gen != c.gen {
			delete(c.by, uid)
		}
	}
	c.gen++
}

// requestsKey names the containers a pod's requests are made of: the
// first of its containers' backing array, and how many. The pods udrain
// materializes from its slim cache share the array of their shape, so
// the pods of one template share one entry.
type requestsKey struct {
	first *corev1.Container
	n     int
}

// requestsKeyOf is p's requestsKey when its containers alone make its
// requests (resourcehelper.PodRequests then sums them): no init
// containers, overhead or pod-level resources.
func requestsKeyOf(p *corev1.Pod) (requestsKey, bool) {
	if len(p.Spec.Containers) == 0 || len(p.Spec.InitContainers) > 0 || p.Spec.Overhead != nil || p.Spec.Resources != nil {
		return requestsKey{}, false
	}
	return requestsKey{&p.Spec.Containers[0], len(p.Spec.Containers)}, true
}

// containersRequests sums the containers' requests, in milli-units, as
// resourcehelper.PodRequests does for a pod of containers alone, without
// its intermediate lists.
func containersRequests(cs []corev1.Container) map[corev1.ResourceName]int64 {
	r := map[corev1.ResourceName]int64{}
	for i := range cs {
		for name, q := range cs[i].Resources.Requests {
			r[name] += q.MilliValue()
		}
	}
	for name, v := range r {
		if v <= 0 {
			delete(r, name)
		}
	}
	return r
}
