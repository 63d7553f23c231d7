package health_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// pod is a member of LeaderWorkerSet group vllm-0: worker index i (0 is
// the leader), on node n1, Running and Ready unless changed.
func pod(i int, change ...func(*corev1.Pod)) *corev1.Pod {
	name := "vllm-0"
	if i > 0 {
		name += "-" + strconv.Itoa(i)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{
			topology.LWSNameLabel: "vllm", topology.LWSGroupIndexLabel: "0", topology.LWSWorkerIndexLabel: strconv.Itoa(i),
		}, Annotations: map[string]string{topology.LWSSizeAnnotation: "4"}},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, c := range change {
		c(p)
	}
	return p
}

func notReady(p *corev1.Pod) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
}

func containersNotReady(p *corev1.Pod) {
	notReady(p)
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.ContainersReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
}

func terminating(p *corev1.Pod) {
	t := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	p.DeletionTimestamp = &t
}

func unschedulable(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/6 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.",
	}}}
}

func crashLooping(p *corev1.Pod) {
	notReady(p)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "vllm", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
}

func gated(p *corev1.Pod) {
	notReady(p)
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "udrain.dev/group-ready"}}
}

func sizeAnnotation(n int) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[topology.LWSSizeAnnotation] = strconv.Itoa(n) }
}

func group(pods ...*corev1.Pod) *topology.Group {
	gs := topology.FindGroups(pods)
	if len(gs) != 1 {
		panic("want one group")
	}
	return &gs[0]
}

var id = topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "ns", Name: "vllm-0"}

// The edge cases of the package documentation, pinned.
func TestEvaluateEdgeCases(t *testing.T) {
	missing := func(name string, leader bool) health.MemberStatus {
		return health.MemberStatus{Name: name, Leader: leader, Reason: health.ReasonMemberMissing, Detail: "missing"}
	}
	problem := func(name string, leader bool, r health.Reason, detail string) health.MemberStatus {
		m := health.MemberStatus{Name: name, UID: types.UID("uid-" + name), Node: "n1", Leader: leader, Reason: r, Detail: detail}
		if r == health.ReasonMemberUnscheduled {
			m.Node = ""
		}
		return m
	}
	for _, tc := range []struct {
		name string
		g    *topology.Group
		opts health.Options
		want health.GroupStatus
	}{{
		name: "whole and Ready",
		g:    group(pod(0), pod(1), pod(2), pod(3)),
		want: health.GroupStatus{Healthy: true, Reason: health.ReasonGroupReady, Message: "4/4 members healthy", Size: 4, Members: 4, ReadyMembers: 4, Leader: "vllm-0", LeaderState: health.LeaderReady},
	}, {
		name: "more pods than the expected size, all Ready: healthy",
		g:    group(pod(0, sizeAnnotation(3)), pod(1, sizeAnnotation(3)), pod(2, sizeAnnotation(3)), pod(3, sizeAnnotation(3))),
		want: health.GroupStatus{Healthy: true, Reason: health.ReasonGroupReady, Message: "4/4 members healthy", Size: 3, Members: 4, ReadyMembers: 4, Leader: "vllm-0", LeaderState: health.LeaderReady},
	}, {
		name: "more pods than the expected size, the surplus not Ready: not healthy",
		g:    group(pod(0, sizeAnnotation(4)), pod(1), pod(2), pod(3), pod(4, notReady)),
		want: health.GroupStatus{Reason: health.ReasonMemberNotReady, Message: "vllm-0-4 not ready; 4/5 members healthy", Size: 4, Members: 5, ReadyMembers: 4, Leader: "vllm-0", LeaderState: health.LeaderReady,
			Problems: []health.MemberStatus{problem("vllm-0-4", false, health.ReasonMemberNotReady, "not ready")}},
	}, {
		name: "leader Running but not Ready",
		g:    group(pod(0, notReady), pod(1), pod(2), pod(3)),
		want: health.GroupStatus{Reason: health.ReasonMemberNotReady, Message: "vllm-0 not ready; 3/4 members healthy", Size: 4, Members: 4, ReadyMembers: 3, Leader: "vllm-0", LeaderState: health.LeaderNotReady,
			Problems: []health.MemberStatus{problem("vllm-0", true, health.ReasonMemberNotReady, "not ready")}},
	}, {
		name: "leader gated: the gate controller judges its containers",
		g:    group(pod(0, notReady), pod(1), pod(2), pod(3)),
		opts: health.Options{LeaderByContainers: true},
		want: health.GroupStatus{Healthy: true, Reason: health.ReasonGroupReady, Message: "4/4 members healthy", Size: 4, Members: 4, ReadyMembers: 4, Leader: "vllm-0", LeaderState: health.LeaderReady},
	}, {
		name: "leader's containers not ready, judged by containers",
		g:    group(pod(0, containersNotReady), pod(1), pod(2), pod(3)),
		opts: health.Options{LeaderByContainers: true},
		want: health.GroupStatus{Reason: health.ReasonMemberNotReady, Message: "vllm-0 containers not ready; 3/4 members healthy", Size: 4, Members: 4, ReadyMembers: 3, Leader: "vllm-0", LeaderState: health.LeaderNotReady,
			Problems: []health.MemberStatus{problem("vllm-0", true, health.ReasonMemberNotReady, "containers not ready")}},
	}, {
		name: "a gated leader waits for its gate",
		g:    group(pod(0, gated), pod(1), pod(2), pod(3)),
		want: health.GroupStatus{Reason: health.ReasonMemberNotReady, Message: "vllm-0 not ready; readiness gate udrain.dev/group-ready not True; 3/4 members healthy", Size: 4, Members: 4, ReadyMembers: 3, Leader: "vllm-0", LeaderState: health.LeaderNotReady,
			Problems: []health.MemberStatus{problem("vllm-0", true, health.ReasonMemberNotReady, "not ready; readiness gate udrain.dev/group-ready not True")}},
	}, {
		name: "an unscheduled member carries the scheduler's reason",
		g:    group(pod(0), pod(1), pod(2), pod(3, unschedulable)),
		want: health.GroupStatus{Reason: health.ReasonMemberUnscheduled, Message: "vllm-0-3 Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu.; 3/4 members healthy", Size: 4, Members: 4, ReadyMembers: 3, Leader: "vllm-0", LeaderState: health.LeaderReady,
			Problems: []health.MemberStatus{problem("vllm-0-3", false, health.ReasonMemberUnscheduled, "Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu.")}},
	}, {
		name: "no pod on any node",
		g:    group(pod(0, unschedulable), pod(1, unschedulable), pod(2, unschedulable), pod(3, unschedulable)),
		want: health.GroupStatus{Reason: health.ReasonMemberUnscheduled, Message: "vllm-0 Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu., vllm-0-1 Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu., vllm-0-2 Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu. and 1 more; 0/4 members healthy", Size: 4, Members: 4, Leader: "vllm-0", LeaderState: health.LeaderNotReady,
			Problems: []health.MemberStatus{
				problem("vllm-0", true, health.ReasonMemberUnscheduled, "Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu."),
				problem("vllm-0-1", false, health.ReasonMemberUnscheduled, "Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu."),
				problem("vllm-0-2", false, health.ReasonMemberUnscheduled, "Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu."),
				problem("vllm-0-3", false, health.ReasonMemberUnscheduled, "Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu."),
			}},
	}, {
		name: "a terminating member is worse than a not-ready one",
		g:    group(pod(0), pod(1, crashLooping), pod(2, terminating), pod(3)),
		want: health.GroupStatus{Reason: health.ReasonMemberTerminating, Message: "vllm-0-2 terminating, vllm-0-1 not ready; container vllm waiting: CrashLoopBackOff; 2/4 members healthy", Size: 4, Members: 4, ReadyMembers: 2, Leader: "vllm-0", LeaderState: health.LeaderReady,
			Problems: []health.MemberStatus{
				problem("vllm-0-2", false, health.ReasonMemberTerminating, "terminating"),
				withWaiting(problem("vllm-0-1", false, health.ReasonMemberNotReady, "not ready; container vllm waiting: CrashLoopBackOff"), "CrashLoopBackOff"),
			}},
	}, {
		name: "a missing worker is named from the LWS indexes",
		g:    group(pod(0), pod(1), pod(3)),
		want: health.GroupStatus{Reason: health.ReasonMemberMissing, Message: "vllm-0-2 missing; 3/4 members healthy", Size: 4, Members: 3, ReadyMembers: 3, Leader: "vllm-0", LeaderState: health.LeaderReady,
			Problems: []health.MemberStatus{missing("vllm-0-2", false)}},
	}, {
		name: "a missing leader",
		g:    group(pod(1), pod(2), pod(3)),
		want: health.GroupStatus{Reason: health.ReasonMemberMissing, Message: "vllm-0 missing; 3/4 members healthy", Size: 4, Members: 3, ReadyMembers: 3, LeaderState: health.LeaderMissing,
			Problems: []health.MemberStatus{missing("vllm-0", true)}},
	}, {
		name: "MinSize: a group smaller than it was",
		g:    group(rayPod("head", true), rayPod("w1", false)),
		opts: health.Options{MinSize: 3},
		want: health.GroupStatus{ID: rayID, Workload: "rc", Reason: health.ReasonMemberMissing, Message: "1 member missing; 2/3 members healthy", Size: 3, Members: 2, ReadyMembers: 2, Leader: "head", LeaderState: health.LeaderReady,
			Problems: []health.MemberStatus{missing("", false)}},
	}, {
		name: "RequireLeader: workers without their head",
		g:    group(rayPod("w1", false), rayPod("w2", false)),
		opts: health.Options{RequireLeader: true},
		want: health.GroupStatus{ID: rayID, Workload: "rc", Reason: health.ReasonMemberMissing, Message: "leader missing; 2/2 members healthy", Size: 2, Members: 2, ReadyMembers: 2, LeaderState: health.LeaderMissing,
			Problems: []health.MemberStatus{missing("", true)}},
	}, {
		name: "no leader named and none required",
		g:    group(rayPod("w1", false), rayPod("w2", false)),
		want: health.GroupStatus{ID: rayID, Workload: "rc", Healthy: true, Reason: health.ReasonGroupReady, Message: "2/2 members healthy", Size: 2, Members: 2, ReadyMembers: 2, LeaderState: health.LeaderNone},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want.ID == (topology.GroupID{}) {
				tc.want.ID, tc.want.Workload = id, "vllm"
			}
			got := health.Evaluate(tc.g, tc.opts)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
			if got.Healthy != (got.Reason == health.ReasonGroupReady) {
				t.Errorf("Healthy %v with reason %s", got.Healthy, got.Reason)
			}
		})
	}
}

var rayID = topology.GroupID{Kind: topology.KindRay, Namespace: "ns", Name: "rc"}

func rayPod(name string, head bool) *corev1.Pod {
	p := pod(1)
	p.Name, p.UID = name, types.UID("uid-"+name)
	p.Labels = map[string]string{topology.RayClusterLabel: "rc", topology.RayNodeTypeLabel: "worker"}
	p.Annotations = nil
	if head {
		p.Labels[topology.RayNodeTypeLabel] = topology.RayNodeTypeHead
	}
	return p
}

func TestAbsent(t *testing.T) {
	got := health.Absent(id, "vllm", "vllm-0", 2)
	want := health.GroupStatus{ID: id, Workload: "vllm", Reason: health.ReasonNoMembers, Message: "no member exists; 0/2 members healthy", Size: 2,
		Leader: "vllm-0", LeaderState: health.LeaderMissing, Problems: []health.MemberStatus{
			{Name: "vllm-0", Leader: true, Reason: health.ReasonMemberMissing, Detail: "missing"},
			{Name: "vllm-0-1", Reason: health.ReasonMemberMissing, Detail: "missing"},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Absent (-want +got):\n%s", diff)
	}
}

func TestMemberHealthy(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"ready", pod(1), true},
		{"not ready", pod(1, notReady), false},
		{"terminating", pod(1, terminating), false},
		{"unscheduled", pod(1, unschedulable), false},
		{"failed", pod(1, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
	} {
		if got := health.MemberHealthy(tc.pod); got != tc.want {
			t.Errorf("%s: MemberHealthy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func withWaiting(m health.MemberStatus, reason string) health.MemberStatus {
	m.Waiting = reason
	return m
}

// Stuck names the waiting reasons that need somebody to act; a crash loop,
// a pull in progress or a container being created do not.
func TestStuck(t *testing.T) {
	for reason, want := range map[string]bool{
		"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "CreateContainerConfigError": true,
		"CrashLoopBackOff": false, "ContainerCreating": false, "": false,
	} {
		if got := health.Stuck(reason); got != want {
			t.Errorf("Stuck(%q) = %t, want %t", reason, got, want)
		}
	}
}
