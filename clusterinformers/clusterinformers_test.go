package clusterinformers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/clusterview"
)

// cacheOf answers GetInformer from a client-go factory, with the method
// shape of a controller-runtime cache (whose Informer type declares no
// GetStore).
type cacheOf struct {
	f    informers.SharedInformerFactory
	asks []string
	bare bool // hand out informers without GetStore
}

// eventsOnly hides GetStore.
type eventsOnly struct{ EventInformer }

func (c *cacheOf) GetInformer(_ context.Context, obj any, _ ...struct{}) (EventInformer, error) {
	c.asks = append(c.asks, fmt.Sprintf("%T", obj))
	var inf cache.SharedIndexInformer
	switch obj.(type) {
	case *corev1.Node:
		inf = c.f.Core().V1().Nodes().Informer()
	case *corev1.Pod:
		inf = c.f.Core().V1().Pods().Informer()
	case *policyv1.PodDisruptionBudget:
		inf = c.f.Policy().V1().PodDisruptionBudgets().Informer()
	case *appsv1.DaemonSet:
		inf = c.f.Apps().V1().DaemonSets().Informer()
	default:
		return nil, fmt.Errorf("no informer of %T", obj)
	}
	if c.bare {
		return eventsOnly{inf}, nil
	}
	return inf, nil
}

// hasPodIndex reports whether the set's pod informer has udrain's index.
func hasPodIndex(set *Set) bool {
	_, ok := set.Pods.(cache.SharedIndexInformer).GetIndexer().GetIndexers()[clusterview.PodIndexName]
	return ok
}

func TestFromFactoryAndFromCache(t *testing.T) {
	all := []string{"*v1.Node", "*v1.Pod", "*v1.PodDisruptionBudget", "*v1.DaemonSet"}
	for _, tc := range []struct {
		name           string
		opts           []Option
		wantDaemonSets bool
		wantAsks       []string
	}{
		{"default", nil, true, all},
		{"WithoutDaemonSets", []Option{WithoutDaemonSets()}, false, all[:3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cacheOf{f: informers.NewSharedInformerFactory(fake.NewClientset(), 0)}
			fromCache, err := FromCache(t.Context(), c, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantAsks, c.asks); diff != "" {
				t.Errorf("informers asked of the cache (-want +got):\n%s", diff)
			}
			for from, set := range map[string]*Set{
				"FromFactory": FromFactory(informers.NewSharedInformerFactory(fake.NewClientset(), 0), tc.opts...),
				"FromCache":   fromCache,
			} {
				if set.Nodes == nil || set.Pods == nil || set.PodDisruptionBudgets == nil {
					t.Fatalf("%s = %+v, want nodes, pods and budgets", from, set)
				}
				if got := set.DaemonSets != nil; got != tc.wantDaemonSets {
					t.Errorf("%s: DaemonSets set %t, want %t", from, got, tc.wantDaemonSets)
				}
				if set.PodGroups != nil || set.LeaderWorkerSets != nil {
					t.Errorf("%s set PodGroups or LeaderWorkerSets: %+v", from, set)
				}
				if !hasPodIndex(set) {
					t.Errorf("%s: the pod informer lacks udrain's pod index", from)
				}
			}
		})
	}
}

// An informer without GetStore cannot be read: a ConfigError naming
// FromCache's argument, before anything is registered further.
func TestFromCacheWithoutGetStore(t *testing.T) {
	c := &cacheOf{f: informers.NewSharedInformerFactory(fake.NewClientset(), 0), bare: true}
	_, err := FromCache(t.Context(), c)
	var ce *udrain.ConfigError
	if !errors.As(err, &ce) || ce.Field != "clusterinformers.FromCache(c)" {
		t.Fatalf("FromCache = %v, want a ConfigError for clusterinformers.FromCache(c)", err)
	}
	if diff := cmp.Diff([]string{"*v1.Node"}, c.asks); diff != "" {
		t.Errorf("informers asked of the cache (-want +got):\n%s", diff)
	}
}
