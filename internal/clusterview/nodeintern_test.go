package clusterview

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/internal/testkit"
)

// fleetNode is node i of a pool as the API server sends it (kwok's
// status: five conditions, addresses, system info), in protobuf.
func fleetNode(t testing.TB, i int, taints ...corev1.Taint) []byte {
	t.Helper()
	now := metav1.NewTime(time.Date(2026, 12, 6, 21, 0, i%60, 0, time.UTC))
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8")}
	name := fmt.Sprintf("node-ud-%02d-%03d", i/100, i%100)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "0b4c5d6e-1111-2222-3333-444455556666", ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: now,
			Labels: map[string]string{"udrain.dev/ud": fmt.Sprintf("ud-%02d", i/100), "pool": "fleet", corev1.LabelHostname: name,
				corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", "type": "kwok", "nvidia.com/gpu.present": "true"},
			Annotations:   map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kwok", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy(),
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250)}, {Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{Architecture: "amd64", KubeProxyVersion: "fake", KubeletVersion: "fake", OperatingSystem: "linux"},
			Phase:           corev1.NodeRunning},
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, LastHeartbeatTime: now,
			LastTransitionTime: now, Reason: "Kubelet" + string(c), Message: "kubelet reports " + string(c)})
	}
	b, err := n.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeNode(t testing.TB, b []byte) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := n.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNodeShareKeepsTheNode: the own view's transform hands back the node
// the watch gave, value for value (less what StripForCache drops), leaves
// the watch's object alone, and shares the parts alike nodes repeat.
func TestNodeShareKeepsTheNode(t *testing.T) {
	steer := corev1.Taint{Key: "udrain.dev/pending", Effect: corev1.TaintEffectPreferNoSchedule}
	evict := corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)}}
	tests := []struct {
		name       string
		a, b       []corev1.Taint
		taintsSame bool
	}{
		{"no taints", nil, nil, true},
		{"the same steering taint", []corev1.Taint{steer}, []corev1.Taint{steer}, true},
		{"one tainted", []corev1.Taint{steer}, nil, false},
		{"taints added at other times", []corev1.Taint{evict}, []corev1.Taint{{Key: evict.Key, Effect: evict.Effect, TimeAdded: &metav1.Time{Time: evict.TimeAdded.Add(time.Second)}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			transform := newTransform(false)
			var got []*corev1.Node
			for i, taints := range [][]corev1.Taint{tt.a, tt.b} {
				raw := fleetNode(t, i, taints...)
				in := decodeNode(t, raw)
				out, err := transform(in)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(decodeNode(t, raw), in); diff != "" {
					t.Errorf("the watch's node changed (-before +after):\n%s", diff)
				}
				want := decodeNode(t, raw)
				want.ManagedFields = nil
				if diff := cmp.Diff(want, out); diff != "" {
					t.Errorf("node %d (-want +got):\n%s", i, diff)
				}
				got = append(got, out.(*corev1.Node))
				runtime.GC() // what is shared outlives a collection
			}
			a, b := got[0], got[1]
			if !sameMap(a.Status.Capacity, b.Status.Capacity) || !sameMap(a.Status.Allocatable, b.Status.Allocatable) || !sameMap(a.Annotations, b.Annotations) {
				t.Errorf("alike nodes do not share their capacity, allocatable and annotations")
			}
			if same := len(a.Spec.Taints) == 0 || len(b.Spec.Taints) > 0 && &a.Spec.Taints[0] == &b.Spec.Taints[0]; same != tt.taintsSame {
				t.Errorf("taints shared: %v, want %v", same, tt.taintsSame)
			}
		})
	}
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return fmt.Sprintf("%p", a) == fmt.Sprintf("%p", b)
}

// TestNodeShareBytes: a node in the own cache holds less than half what
// StripForCache alone keeps of it.
func TestNodeShareBytes(t *testing.T) {
	const nodes = 2000
	raw := make([][]byte, nodes)
	for i := range raw {
		raw[i] = fleetNode(t, i)
	}
	kept := func(transform func(interface{}) (interface{}, error)) uint64 {
		before := testkit.LiveHeap()
		keep := make([]interface{}, 0, nodes)
		for _, b := range raw {
			o, err := transform(decodeNode(t, b))
			if err != nil {
				t.Fatal(err)
			}
			keep = append(keep, o)
		}
		after := testkit.LiveHeap()
		runtime.KeepAlive(keep)
		return (after - before) / nodes
	}
	// Each measure is taken twice, in turns, and the least kept: what a
	// measure keeps moves, in part, to the next one (memory the runtime
	// frees late).
	strip, shared := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for range 2 {
		strip, shared = min(strip, kept(StripForCache)), min(shared, kept(newTransform(false)))
	}
	t.Logf("bytes per node: StripForCache %d, shared %d", strip, shared)
	if shared*2 > strip {
		t.Errorf("a shared node keeps %d bytes, StripForCache's %d: want at most half", shared, strip)
	}
}

// TestNodeShareLeavesTheWatchsNodeAlone: a node with nothing to strip
// (StripForCache hands back the watch's own object) is copied before its
// parts are shared, never changed in place.
func TestNodeShareLeavesTheWatchsNodeAlone(t *testing.T) {
	in := decodeNode(t, fleetNode(t, 7))
	in.ManagedFields = nil
	before := in.DeepCopy()
	labels := in.Labels
	out, err := newTransform(false)(in)
	if err != nil {
		t.Fatal(err)
	}
	if out == in {
		t.Errorf("the transform handed back the watch's node itself")
	}
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("the watch's node changed (-before +after):\n%s", diff)
	}
	if !sameMap(labels, in.Labels) {
		t.Errorf("the watch's node holds another labels map")
	}
	if diff := cmp.Diff(before, out); diff != "" {
		t.Errorf("transformed node (-want +got):\n%s", diff)
	}
}

// TestSharingIsBounded: a sharing table past maxShared values starts
// afresh; what it handed out before stays with its holders.
func TestSharingIsBounded(t *testing.T) {
	var tab sharing[[]string]
	first := tab.share("k0", func() []string { return []string{"first"} })
	for i := 1; i < maxShared; i++ {
		tab.share(fmt.Sprint("k", i), func() []string { return []string{"x"} })
	}
	if got := tab.share("k0", func() []string { return []string{"again"} }); got[0] != "first" {
		t.Fatalf("k0 within the bound = %q, want the first value", got)
	}
	tab.share("one too many", func() []string { return []string{"y"} })
	if got := tab.share("k0", func() []string { return []string{"again"} }); got[0] != "again" {
		t.Errorf("k0 past the bound = %q, want a fresh table's value", got)
	}
	if n := len(tab.values); n != 2 {
		t.Errorf("%d values after the table started afresh, want 2", n)
	}
	if first[0] != "first" {
		t.Errorf("the value handed out first changed: %q", first)
	}
}
