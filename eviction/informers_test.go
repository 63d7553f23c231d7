package eviction

import (
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/topology"
)

// WithoutDaemonSets keeps the cluster-wide DaemonSet informer out of the
// caller's factory or cache; plans still tell DaemonSet pods apart, with a
// GET of each DaemonSet that owns a pod on the domain, once per call.
func TestInformersWithoutDaemonSets(t *testing.T) {
	ctx := testContext(t)
	objs := append(lwsCluster(2, 1, 2),
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "device-plugin"}},
		readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin-a", OwnerReferences: ownedBy("DaemonSet", "device-plugin")},
			Spec: corev1.PodSpec{NodeName: "node-1-1"}}),
		readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin-b", OwnerReferences: ownedBy("DaemonSet", "device-plugin")},
			Spec: corev1.PodSpec{NodeName: "node-2-1"}}))
	dsType := reflect.TypeOf(&appsv1.DaemonSet{})
	for _, tc := range []struct {
		name string
		opts []clusterinformers.Option
		// wantInformer: a DaemonSet informer is registered and synced.
		wantInformer bool
		// wantGets: GETs of DaemonSets by the two plans.
		wantGets int32
	}{
		{"default", nil, true, 0},
		{"WithoutDaemonSets", []clusterinformers.Option{clusterinformers.WithoutDaemonSets()}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, objs...)
			var gets atomic.Int32
			fc.client.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
				gets.Add(1)
				return false, nil, nil
			})
			f := informers.NewSharedInformerFactory(fc.client, 0)
			inf := clusterinformers.FromFactory(f, tc.opts...)
			stop := make(chan struct{})
			f.Start(stop)
			defer func() {
				close(stop)
				f.Shutdown()
			}()
			synced := f.WaitForCacheSync(ctx.Done())
			if _, ok := synced[dsType]; ok != tc.wantInformer || (inf.DaemonSets != nil) != tc.wantInformer {
				t.Errorf("factory synced %v, Informers.DaemonSets %v: want a DaemonSet informer %t", synced, inf.DaemonSets, tc.wantInformer)
			}
			d, err := New(fc.client, Options{Informers: inf, Helper: &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true}})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				plan, err := d.Plan(ctx, "ud-1")
				if err != nil {
					t.Fatal(err)
				}
				want := []PlannedPod{{PodRef: topology.PodRef{Namespace: "kube-system", Name: "plugin-a", Node: "node-1-1"}, Reason: msgDaemonSetWarning}}
				if diff := cmp.Diff(want, plan.Skipped); diff != "" {
					t.Errorf("skipped (-want +got):\n%s", diff)
				}
			}
			if got := gets.Load(); got != tc.wantGets {
				t.Errorf("%d GETs of DaemonSets by two plans, want %d", got, tc.wantGets)
			}
		})
	}
}

// clusterinformers.FromCache with WithoutDaemonSets asks the cache for no
// DaemonSet informer, so the cache starts none.
func TestInformersFromCacheWithoutDaemonSets(t *testing.T) {
	fc := newFakeCluster(t)
	c := &fakeCache{f: informers.NewSharedInformerFactory(fc.client, 0)}
	inf, err := clusterinformers.FromCache(testContext(t), c, clusterinformers.WithoutDaemonSets())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"*v1.Node", "*v1.Pod", "*v1.PodDisruptionBudget"}, c.asks); diff != "" {
		t.Errorf("informers asked of the cache (-want +got):\n%s", diff)
	}
	if inf.DaemonSets != nil {
		t.Errorf("Informers.DaemonSets = %v, want nil", inf.DaemonSets)
	}
}
