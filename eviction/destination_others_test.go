package eviction

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/topology"
)

// webPods are n pods of ReplicaSet "web" on node, each requesting one
// CPU.
func webPods(domain, n int, node string) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		name := fmt.Sprintf("web-%d-%d", domain, i)
		out = append(out, readyPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID(name), OwnerReferences: ownedBy("ReplicaSet", "web")},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}))
	}
	return out
}

// cpuNode is destNode with cpus CPUs allocatable.
func cpuNode(domain int, gpus int64, cpus string) *corev1.Node {
	n := destNode(domain, 1, gpus)
	n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpus)
	return n
}

// TestScheduleFindsRoomForEveryPod pins which domains the simulated
// rollout finds upgraded room for every pod they evict (what SteerAuto
// taints pending domains NoSchedule for): three domains of one 8-GPU node; ud-1 and ud-2
// hold a group of two 4-GPU pods and three one-CPU pods of ReplicaSet
// "web" on 4 CPUs; the spare ud-3 has room for the group and spare
// CPUs.
func TestScheduleFindsRoomForEveryPod(t *testing.T) {
	spareFirst := []string{"ud-3", "ud-1", "ud-2"}
	fleet := func(spareCPUs string) []runtime.Object {
		return objects(cpuNode(1, 8, "4"), cpuNode(2, 8, "4"), cpuNode(3, 8, spareCPUs),
			destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1"), webPods(1, 3, "node-1-1"), webPods(2, 3, "node-2-1"))
	}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		order    []string
		steering Steering
		want     map[string]bool
	}{
		{"spare first with room for all", fleet("8"), spareFirst, SteerPreferUpgraded,
			map[string]bool{"ud-3": true, "ud-1": true, "ud-2": true}},
		// ud-1's third web pod finds no upgraded room (it lands on ud-2
		// or waits); ud-1 (4 CPUs, upgraded) takes ud-2's three.
		{"the spare short of CPUs for ud-1's web pods", fleet("2"), spareFirst, SteerPreferUpgraded,
			map[string]bool{"ud-3": true, "ud-1": false, "ud-2": true}},
		{"the same, strict", fleet("2"), spareFirst, SteerStrict,
			map[string]bool{"ud-3": true, "ud-1": false, "ud-2": true}},
		// ud-1's group goes to the spare, not upgraded yet: disrupted
		// again there.
		{"spare last", fleet("8"), []string{"ud-1", "ud-2", "ud-3"}, SteerPreferUpgraded,
			map[string]bool{"ud-1": false, "ud-2": true, "ud-3": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotOf(tc.objs)
			layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: tc.order, upgraded: map[string]bool{}, plans: map[string]*Plan{}, steering: tc.steering}
			for _, name := range tc.order {
				if in.plans[name], err = NewPlan(name, snap, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			a := &admission{sim: newDestSim(in), steering: tc.steering}
			_, _, _, roomy := a.schedule(in, 1, true)
			if diff := cmp.Diff(tc.want, roomy); diff != "" {
				t.Errorf("domains with upgraded room for every pod they evict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlaceOther places the evicted pods of no group on their own, on
// upgraded room only, whatever the steering (one that finds none is left
// out); a pod without a controller is not replaced and needs no room; a
// trial undone gives the room back.
func TestPlaceOther(t *testing.T) {
	objs := objects(cpuNode(1, 8, "4"), cpuNode(2, 8, "2"), cpuNode(3, 8, "1"), webPods(1, 3, "node-1-1"))
	snap := snapshotOf(objs)
	layout, err := topology.BuildLayout(snap.Nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bare := snap.Pods[0].DeepCopy()
	bare.OwnerReferences = nil
	for _, steering := range []Steering{SteerAuto, SteerPreferUpgraded, SteerStrict, SteerOff} {
		t.Run(string(steering), func(t *testing.T) {
			in := destinationInput{nodes: snap.Nodes, pods: snap.Pods, layout: layout, order: []string{"ud-3", "ud-1", "ud-2"},
				upgraded: map[string]bool{"ud-3": true}, steering: steering}
			s := newDestSim(in)
			s.setState(s.domains["ud-1"], simDraining)
			for _, p := range snap.Pods {
				s.remove(p)
			}
			if !s.placeOther(bare) {
				t.Error("a pod without a controller needs room")
			}
			pending := s.domains["ud-2"].nodes[0]
			s.trial(func() bool {
				var got []bool
				for _, p := range snap.Pods {
					got = append(got, s.placeOther(p))
				}
				// ud-3 (upgraded) has one CPU: one pod; the pending
				// ud-2 takes none, the draining ud-1 none.
				if diff := cmp.Diff([]bool{true, false, false}, got); diff != "" {
					t.Errorf("upgraded room per pod (-want +got):\n%s", diff)
				}
				if len(pending.pods) != 0 {
					t.Errorf("%d pods placed on the pending ud-2", len(pending.pods))
				}
				return false
			})
			if !s.placeOther(snap.Pods[0]) {
				t.Error("the room the undone trial took did not come back")
			}
		})
	}
}
