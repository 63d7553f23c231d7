package evictiontest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"
)

// Options shape the reactors Install adds. The zero value is the API
// server's behaviour, with no controller.
type Options struct {
	// OnEvicted, if set, is called after an eviction or a deletion
	// removed a pod (never for a dry run), with the fake's object tracker
	// and the pod as it was: a test plays the workload's controllers
	// there (adds the pod again with a new UID, as a StatefulSet would;
	// restores its budget's status, as the disruption controller would).
	// It runs inside the fake's reactor, which holds the clientset's lock:
	// change objects through tracker, never through the clientset, which
	// would deadlock. An error it returns answers the request.
	OnEvicted func(tracker k8stesting.ObjectTracker, pod *corev1.Pod) error
}

// NewClientset returns client-go's fake clientset holding objs, with
// Install's reactors and discovery, as Install(fake.NewClientset(objs...),
// Options{}).
func NewClientset(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	Install(c, Options{})
	return c
}

// Install adds to c what a drain needs of an API server (see the package
// documentation): discovery serving pods/eviction in policy/v1, unless
// c.Resources lists v1 already; evictions that delete the pod after the
// budget's check; dry runs that change nothing; deletes that honour their
// preconditions. Its reactors go in front of c's; reactors the caller
// prepends afterwards run before them (to refuse a request, say) and may
// fall through to them.
func Install(c *fake.Clientset, opts Options) {
	if !servesV1(c) {
		c.Resources = append(c.Resources,
			&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "nodes", Kind: "Node", Verbs: metav1.Verbs{"get", "list", "watch", "patch", "update"}},
				{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "watch", "create", "delete", "patch", "update"}},
				{Name: drain.EvictionSubresource, Namespaced: true, Group: "policy", Version: "v1", Kind: drain.EvictionKind, Verbs: metav1.Verbs{"create"}},
			}},
			&metav1.APIResourceList{GroupVersion: "policy/v1", APIResources: []metav1.APIResource{
				{Name: "poddisruptionbudgets", Namespaced: true, Kind: "PodDisruptionBudget", Verbs: metav1.Verbs{"get", "list", "watch"}},
			}},
		)
	}
	s := &server{tracker: c.Tracker(), opts: opts}
	// Prepended in reverse: the eviction first, then deletes, then the
	// other dry runs.
	c.PrependReactor("*", "*", s.dryRun)
	c.PrependReactor("delete", "*", s.delete)
	c.PrependReactor("create", "pods", s.evict)
}

func servesV1(c *fake.Clientset) bool {
	for _, l := range c.Resources {
		if l.GroupVersion == "v1" {
			return true
		}
	}
	return false
}

// server is what Install's reactors share: the fake's tracker and the
// options.
type server struct {
	tracker k8stesting.ObjectTracker
	opts    Options
}
