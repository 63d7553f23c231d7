package podcache

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// fullPod is a pod with most of what the API server sends, and what udrain
// reads of it.
func fullPod(name string, uid types.UID) *corev1.Pod {
	created := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: uid, ResourceVersion: "42", CreationTimestamp: created,
			Labels: map[string]string{"leaderworkerset.sigs.k8s.io/name": "llm", "statefulset.kubernetes.io/pod-name": name},
			Annotations: map[string]string{
				"leaderworkerset.sigs.k8s.io/size":     "8",
				corev1.LastAppliedConfigAnnotation:     `{"big":"json"}`,
				"example.com/same-as-the-name-by-luck": name,
			},
			OwnerReferences: ownedBy("StatefulSet", "llm"),
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			Finalizers:      []string{"example.com/keep"},
		},
		Spec: corev1.PodSpec{
			NodeName: "gpu-1",
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "proxy", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Containers: []corev1.Container{{Name: "vllm", Image: "vllm:1", Args: []string{"--tp", "8"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				}}},
			Volumes: []corev1.Volume{
				{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "udrain.dev/group-ready"}},
			Tolerations:    []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &created,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Reason: "", Message: "", LastTransitionTime: created},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "vllm", Ready: true, Image: "vllm:1", ImageID: "sha256:x",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}}},
		},
	}
}

// slimmed is what a slim cache gives back of fullPod.
func slimmed(name string, uid types.UID) *corev1.Pod {
	full := fullPod(name, uid)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: uid, Labels: full.Labels,
			Annotations:     map[string]string{"leaderworkerset.sigs.k8s.io/size": "8", "example.com/same-as-the-name-by-luck": name},
			OwnerReferences: full.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			NodeName: "gpu-1",
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Containers:     []corev1.Container{{Name: "vllm", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}},
			Volumes:        []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
			ReadinessGates: full.Spec.ReadinessGates,
			Tolerations:    full.Spec.Tolerations,
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "vllm", Ready: true}},
		},
	}
}

const testUUID = "0b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d"

func TestSlimPodKeepsWhatUdrainReads(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	grace := int64(30)
	for _, tt := range []struct {
		name   string
		change func(*corev1.Pod) // of the full pod and of the expectation alike
		full   func(*corev1.Pod) // of the full pod only
		want   func(*corev1.Pod) // of the expectation only
	}{
		{name: "a running leader with a UUID"},
		{name: "a UID that is not a UUID", change: func(p *corev1.Pod) { p.UID = "u-1" }},
		{name: "an upper-case UUID stays as it is", change: func(p *corev1.Pod) { p.UID = "0B1E4C7D-2A5F-4E3B-9C9D-0A1E4F7B2C5D" }},
		{name: "no UID", change: func(p *corev1.Pod) { p.UID = "" }},
		{name: "being deleted", change: func(p *corev1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleted, &grace }},
		{name: "no labels or annotations", full: func(p *corev1.Pod) { p.Labels, p.Annotations = nil, nil },
			want: func(p *corev1.Pod) { p.Labels, p.Annotations = nil, nil }},
		{name: "only the last-applied annotation", full: func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{}"}
		}, want: func(p *corev1.Pod) { p.Annotations = nil }},
		{name: "pending: the scheduler's verdict is kept", change: func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses = "", corev1.PodPending, nil
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
		}},
		{name: "a container waiting", full: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m"}}
		}, want: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}},
		{name: "where it may run: selector, affinity, tolerations, spread", change: func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"pool": "gpu-a"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: "udrain.io/domain", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "leader"}}}}}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "udrain.io/domain", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}},
		{name: "a native PodGroup member", change: func(p *corev1.Pod) {
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptrTo("gang-1")}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			full, want := fullPod("llm-0-1", testUUID), slimmed("llm-0-1", testUUID)
			for _, f := range []func(*corev1.Pod){tt.change} {
				if f != nil {
					f(full)
					f(want)
				}
			}
			if tt.full != nil {
				tt.full(full)
			}
			if tt.want != nil {
				tt.want(want)
			}
			before := full.DeepCopy()
			obj, err := NewTransform(passThrough)(full)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, full); diff != "" {
				t.Errorf("the transform changed the pod it was given (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(want, AsPod(obj)); diff != "" {
				t.Errorf("materialized pod (-want +got):\n%s", diff)
			}
			if !HasUID(obj, want.UID) || (want.UID != "" && HasUID(obj, "other")) {
				t.Errorf("HasUID(%q) is wrong", want.UID)
			}
			// client-go keys and indexes it as it would the pod.
			for _, f := range []cache.KeyFunc{cache.MetaNamespaceKeyFunc, cache.DeletionHandlingMetaNamespaceKeyFunc} {
				if key, err := f(obj); err != nil || key != "team-a/llm-0-1" {
					t.Errorf("key = %q, %v; want team-a/llm-0-1", key, err)
				}
			}
			if ns, err := cache.MetaNamespaceIndexFunc(obj); err != nil || !cmp.Equal(ns, []string{"team-a"}) {
				t.Errorf("namespace index = %v, %v", ns, err)
			}
			indexed := &corev1.Pod{}
			obj.(*Pod).IndexFields(indexed)
			wantIndexed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace, Labels: want.Labels, Annotations: want.Annotations},
				Spec: corev1.PodSpec{NodeName: want.Spec.NodeName, SchedulingGroup: want.Spec.SchedulingGroup}}
			if diff := cmp.Diff(wantIndexed, indexed); diff != "" {
				t.Errorf("IndexFields (-of the pod +of the slim pod):\n%s", diff)
			}
			again, _ := NewTransform(passThrough)(obj)
			if again != obj {
				t.Errorf("a Pod given again was not returned as it is")
			}
		})
	}
}

func TestSlimPodsShareTheirTemplate(t *testing.T) {
	transform := NewTransform(passThrough)
	a, _ := transform(fullPod("llm-0-1", testUUID))
	b, _ := transform(fullPod("llm-0-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d"))
	other := fullPod("llm-0-3", "2b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d")
	other.Status.Conditions[0].Status = corev1.ConditionFalse
	c, _ := transform(other)
	sa, sb, sc := a.(*Pod), b.(*Pod), c.(*Pod)
	if sa.shape != sb.shape || sa.owners != sb.owners || sa.keys != sb.keys {
		t.Errorf("two pods of one template in one state do not share shape, owners and keys")
	}
	if sa.shape == sc.shape {
		t.Errorf("a pod that is not Ready shares the shape of Ready ones")
	}
	if sa.owners != sc.owners || sa.keys != sc.keys {
		t.Errorf("pods of one controller do not share owners and keys across shapes")
	}
	// Each keeps its own name where the label said its name.
	if got := AsPod(b).Labels["statefulset.kubernetes.io/pod-name"]; got != "llm-0-2" {
		t.Errorf("pod-name label of llm-0-2 = %q", got)
	}
}

// TestDaemonSetPodsShareShapes: a DaemonSet gives each of its pods an
// affinity to its own node; the pods still share one shape, and each
// reads back its own affinity.
func TestDaemonSetPodsShareShapes(t *testing.T) {
	affinityTo := func(node string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	}
	tests := []struct {
		name           string
		nodes          []string
		shapes, unique int
	}{
		{"one pod a node", []string{"gpu-1", "gpu-2", "gpu-3"}, 1, 3},
		{"two pods on one node", []string{"gpu-1", "gpu-1"}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shapes := newShapes()
			var held []*Pod
			for i, node := range tt.nodes {
				p := fullPod(fmt.Sprintf("agent-%d", i), testUUID)
				p.OwnerReferences = ownedBy("DaemonSet", "agent")
				p.Spec.NodeName, p.Spec.Affinity = node, affinityTo(node)
				sp := shapes.slim(p)
				held = append(held, sp)
				if diff := cmp.Diff(affinityTo(node), AsPod(sp).Spec.Affinity); diff != "" {
					t.Errorf("pod %d's affinity (-want +got):\n%s", i, diff)
				}
			}
			if n := shapes.shapes.Len(); n != tt.shapes {
				t.Errorf("%d shapes, want %d", n, tt.shapes)
			}
			distinct := map[*corev1.Affinity]bool{}
			for _, sp := range held {
				distinct[sp.affinity] = true
			}
			if len(distinct) != tt.unique {
				t.Errorf("%d affinities held, want %d", len(distinct), tt.unique)
			}
		})
	}
}

func TestPodShapesForgetShapesNoPodHolds(t *testing.T) {
	shapes := newShapes()
	kept := shapes.slim(fullPod("llm-0-1", testUUID))
	for i := range 50 {
		p := fullPod("llm-0-2", testUUID)
		p.Status.Conditions[0].Message = string(rune('a' + i%26)) // only the PodScheduled=False message is kept: no new shape
		p.Status.Phase = corev1.PodPhase("phase-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		shapes.slim(p)
	}
	if n := shapes.shapes.Len(); n < 2 {
		t.Fatalf("%d shapes after 51 pods of 51 phases", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for shapes.shapes.Len() > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := shapes.shapes.Len(); n != 1 {
		t.Errorf("%d shapes left once only one pod holds one; want 1", n)
	}
	if got := AsPod(kept).Status.Phase; got != corev1.PodRunning {
		t.Errorf("the kept pod's phase is %q", got)
	}
}

func TestUUIDRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{testUUID, true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"0B1E4C7D-2A5F-4E3B-9C9D-0A1E4F7B2C5D", false},
		{"0b1e4c7d2a5f4e3b9c9d0a1e4f7b2c5d", false},
		{"0b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5", false},
		{"0b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5g", false},
		{"", false},
	} {
		var u [16]byte
		ok := parseUUID(tt.in, &u)
		if ok != tt.ok {
			t.Errorf("parseUUID(%q) = %v, want %v", tt.in, ok, tt.ok)
		}
		if ok && formatUUID(&u) != tt.in {
			t.Errorf("formatUUID(parseUUID(%q)) = %q", tt.in, formatUUID(&u))
		}
	}
}

func TestSlimLabelsMatchAsTheMap(t *testing.T) {
	obj, _ := NewTransform(passThrough)(fullPod("llm-0-1", testUUID))
	full := fullPod("llm-0-1", testUUID)
	for _, sel := range []string{
		"leaderworkerset.sigs.k8s.io/name=llm",
		"leaderworkerset.sigs.k8s.io/name=other",
		"statefulset.kubernetes.io/pod-name=llm-0-1",
		"statefulset.kubernetes.io/pod-name in (llm-0-2)",
		"leaderworkerset.sigs.k8s.io/size", // an annotation, not a label
		"!leaderworkerset.sigs.k8s.io/name",
		"app notin (web)",
		"",
	} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Matches(LabelsOf(obj)), s.Matches(labels.Set(full.Labels)); got != want {
			t.Errorf("%q matches the Pod: %v, the pod: %v", sel, got, want)
		}
	}
}

func TestPodMemoReadsEachSlimPodOnceUntilItChanges(t *testing.T) {
	transform := NewTransform(passThrough)
	a, _ := transform(fullPod("llm-0-1", testUUID))
	b, _ := transform(fullPod("llm-0-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d"))
	memo := NewMemo()
	pa, pb := memo.Pod(a), memo.Pod(b)
	if memo.Pod(a) != pa {
		t.Errorf("a second read in one evaluation materialized again")
	}
	memo.Turn()
	if memo.Pod(a) != pa {
		t.Errorf("the next evaluation materialized an unchanged pod again")
	}
	memo.Turn() // b was not read by the last evaluation: forgotten
	if _, kept := memo.last[b.(*Pod)]; kept {
		t.Errorf("a pod the last evaluation did not read is still kept")
	}
	if memo.Pod(b) != pb {
		t.Errorf("a pod its reader still holds was materialized again")
	}
	updated := fullPod("llm-0-1", testUUID)
	updated.Status.Phase = corev1.PodFailed
	a2, _ := transform(updated)
	if got := memo.Pod(a2).Status.Phase; got != corev1.PodFailed {
		t.Errorf("after an update the memo gives phase %q", got)
	}
	if p := (&corev1.Pod{}); memo.Pod(p) != p {
		t.Errorf("a whole pod is not given as it is")
	}
}

// passThrough is the transform of objects that are not pods.
func passThrough(obj interface{}) (interface{}, error) { return obj, nil }

func ptrTo[T any](v T) *T { return &v }

func ownedBy(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptrTo(true), UID: types.UID(name + "-owner")}}
}

// replicaPod is a pod of a ReplicaSet, whose labels and annotations are
// those of its template.
func replicaPod(name, uid string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web", UID: types.UID(uid), Labels: labels, Annotations: annotations,
		OwnerReferences: ownedBy("ReplicaSet", "web-5d8f")}, Spec: corev1.PodSpec{NodeName: "n-1"}}
}

func TestPodsShareTheMapsOfPodsWithTheSameLabels(t *testing.T) {
	web := map[string]string{"app": "web", "pod-template-hash": "5d8f"}
	seen := map[string]string{"example.com/checksum": "abc"}
	for _, tc := range []struct {
		name string
		a, b *corev1.Pod
		// shared: the two pods read in one read share their maps.
		shared bool
	}{
		{"the same labels and annotations", replicaPod("web-1", testUUID, web, seen), replicaPod("web-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d", web, seen), true},
		{"the same labels, no annotations", replicaPod("web-1", testUUID, web, nil), replicaPod("web-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d", web, nil), true},
		{"a label value differs", replicaPod("web-1", testUUID, web, seen),
			replicaPod("web-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d", map[string]string{"app": "web", "pod-template-hash": "6e9a"}, seen), false},
		{"an annotation value differs", replicaPod("web-1", testUUID, web, seen),
			replicaPod("web-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d", web, map[string]string{"example.com/checksum": "abd"}), false},
		{"a value moved from a label to an annotation", replicaPod("web-1", testUUID, map[string]string{"app": "web", "x": "1"}, nil),
			replicaPod("web-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d", map[string]string{"app": "web"}, map[string]string{"x": "1"}), false},
		{"values that name the pod", fullPod("llm-0-1", testUUID), fullPod("llm-0-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transform := NewTransform(passThrough)
			a, _ := transform(tc.a)
			b, _ := transform(tc.b)
			for _, read := range []struct {
				name string
				pods func() []*corev1.Pod
				// may: this read may share maps.
				may bool
			}{
				{"Pods", func() []*corev1.Pod { return Pods([]interface{}{a, b}) }, true},
				{"Memo", func() []*corev1.Pod { m := NewMemo(); return m.Pods([]interface{}{a, b}) }, true},
				{"AsPod", func() []*corev1.Pod { return []*corev1.Pod{AsPod(a), AsPod(b)} }, false},
			} {
				runtime.GC() // the last read's pods are gone: this read materializes them anew
				pods := read.pods()
				for i, want := range []*corev1.Pod{tc.a, tc.b} {
					wantAnn := maps.Clone(want.Annotations)
					delete(wantAnn, corev1.LastAppliedConfigAnnotation)
					if diff := cmp.Diff(want.Labels, pods[i].Labels); diff != "" {
						t.Errorf("%s: labels of %s (-want +got):\n%s", read.name, want.Name, diff)
					}
					if diff := cmp.Diff(wantAnn, pods[i].Annotations, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("%s: annotations of %s (-want +got):\n%s", read.name, want.Name, diff)
					}
				}
				shared := sameMap(pods[0].Labels, pods[1].Labels)
				if want := tc.shared && read.may; shared != want {
					t.Errorf("%s: labels shared = %v, want %v", read.name, shared, want)
				}
				if len(pods[0].Annotations) > 0 && sameMap(pods[0].Annotations, pods[1].Annotations) != (tc.shared && read.may) {
					t.Errorf("%s: annotations shared = %v, want %v", read.name, !(tc.shared && read.may), tc.shared && read.may)
				}
			}
		})
	}
}

// sameMap reports whether a and b are one map.
func sameMap(a, b map[string]string) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestSharedMapsTellPodsOfOneHashApart(t *testing.T) {
	transform := NewTransform(passThrough)
	a, _ := transform(replicaPod("web-1", testUUID, map[string]string{"app": "web"}, nil))
	b, _ := transform(replicaPod("web-2", "1b1e4c7d-2a5f-4e3b-9c9d-0a1e4f7b2c5d", map[string]string{"app": "api"}, nil))
	shared := newSharedMaps()
	h, ok := shared.hash(b.(*Pod))
	if !ok {
		t.Fatal("no hash for a pod whose values do not name it")
	}
	// a's maps filed under b's hash, as a collision would.
	sa := a.(*Pod)
	shared.byHash[h] = []sharedPairs{{keys: sa.keys, values: sa.values, labels: sa.labels()}}
	if got := b.(*Pod).build(shared).Labels["app"]; got != "api" {
		t.Errorf("a pod whose hash another pod's maps were filed under got app=%q, want its own api", got)
	}
}

func TestReadersShareAPodUntilNoneHoldsIt(t *testing.T) {
	transform := NewTransform(passThrough)
	obj, _ := transform(fullPod("llm-0-1", testUUID))
	sp := obj.(*Pod)
	for _, tc := range []struct {
		name   string
		first  func() *corev1.Pod
		second func() *corev1.Pod
	}{
		{"AsPod, AsPod", func() *corev1.Pod { return AsPod(obj) }, func() *corev1.Pod { return AsPod(obj) }},
		{"Pods, a Memo", func() *corev1.Pod { return Pods([]interface{}{obj})[0] }, func() *corev1.Pod { return NewMemo().Pod(obj) }},
		{"a read, a nil Memo", func() *corev1.Pod { return NewRead().Pod(obj) }, func() *corev1.Pod { var none *Memo; return none.Pod(obj) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			if made := sp.made.Load(); made != nil && made.Value() != nil {
				t.Fatal("a pod no reader holds is still kept after a collection")
			}
			p := tc.first()
			if q := tc.second(); q != p {
				t.Errorf("a second reader got a pod of its own while the first holds one")
			}
			if diff := cmp.Diff(fullPod("llm-0-1", testUUID).Labels, p.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			runtime.KeepAlive(p)
		})
	}
	// A pod updated is a new slim pod: it never reads the old one's.
	old := AsPod(obj)
	updated := fullPod("llm-0-1", testUUID)
	updated.Status.Phase = corev1.PodFailed
	obj2, _ := transform(updated)
	if got := AsPod(obj2); got == old || got.Status.Phase != corev1.PodFailed {
		t.Errorf("after an update AsPod gives phase %q (the old pod: %v)", got.Status.Phase, got == old)
	}
	runtime.KeepAlive(old)
}
