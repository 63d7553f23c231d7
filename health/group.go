package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/topology"
)

// Reason says, in one machine-readable word, why a group is or is not
// healthy. The values are stable: controllers may set conditions from them.
type Reason string

// The reasons, from healthy to worst.
const (
	// ReasonGroupReady: the group has its expected size and every member is
	// healthy.
	ReasonGroupReady Reason = "GroupReady"
	// ReasonMemberNotReady: a member runs but is not Ready.
	ReasonMemberNotReady Reason = "MemberNotReady"
	// ReasonMemberNotRunning: a member's phase is not Running (Pending on a
	// node, Failed, Succeeded, Unknown).
	ReasonMemberNotRunning Reason = "MemberNotRunning"
	// ReasonMemberUnscheduled: a member is Pending without a node.
	ReasonMemberUnscheduled Reason = "MemberUnscheduled"
	// ReasonMemberTerminating: a member is being deleted.
	ReasonMemberTerminating Reason = "MemberTerminating"
	// ReasonMemberMissing: the group has fewer pods than expected, or no
	// leader pod where one is required.
	ReasonMemberMissing Reason = "MemberMissing"
	// ReasonNoMembers: no pod of the group exists.
	ReasonNoMembers Reason = "NoMembers"
)

// rank orders reasons from worst (0) to healthy.
func (r Reason) rank() int {
	switch r {
	case ReasonNoMembers:
		return 0
	case ReasonMemberMissing:
		return 1
	case ReasonMemberTerminating:
		return 2
	case ReasonMemberUnscheduled:
		return 3
	case ReasonMemberNotRunning:
		return 4
	case ReasonMemberNotReady:
		return 5
	default:
		return 6
	}
}

// LeaderState is the state of a group's leader.
type LeaderState string

// The states of a leader.
const (
	// LeaderReady: the leader is a healthy member.
	LeaderReady LeaderState = "Ready"
	// LeaderNotReady: the leader exists but is not healthy (not Ready, not
	// Running, not scheduled).
	LeaderNotReady LeaderState = "NotReady"
	// LeaderTerminating: the leader is being deleted.
	LeaderTerminating LeaderState = "Terminating"
	// LeaderMissing: a leader is required (Options.RequireLeader) and no
	// pod of the group is its leader.
	LeaderMissing LeaderState = "Missing"
	// LeaderNone: the group names no leader, and none is required.
	LeaderNone LeaderState = "None"
)

// MemberStatus is one member of a group as the judgment saw it. A missing
// member (a pod that does not exist) has no UID and no node, and a name
// only when the group's kind makes it knowable (LeaderWorkerSet).
type MemberStatus struct {
	Name   string    `json:"name,omitempty"`
	UID    types.UID `json:"uid,omitempty"`
	Node   string    `json:"node,omitempty"`
	Leader bool      `json:"leader,omitempty"`
	// Healthy is true for a member that is not being deleted, Running and
	// Ready.
	Healthy bool `json:"healthy"`
	// Reason is why it is not healthy; empty when it is.
	Reason Reason `json:"reason,omitempty"`
	// Detail is what the cluster says about it: "not ready", "Pending:
	// 0/6 nodes are available: 2 Insufficient nvidia.com/gpu",
	// "container vllm waiting: CrashLoopBackOff", "readiness gate
	// udrain.dev/group-ready not True", "missing". Empty when healthy.
	Detail string `json:"detail,omitempty"`
	// Waiting is the reason its first waiting container (init containers
	// first) gives, past starting up: "ImagePullBackOff",
	// "CrashLoopBackOff". Empty when none waits. See Stuck. (A member that
	// eviction finds stuck ContainerCreating, in a ClusterError of reason
	// Stuck, has here the reason of the warning event that says why,
	// "FailedMount", and that event's message in Detail.)
	Waiting string `json:"waiting,omitempty"`
}

// stuckReasons are the waiting reasons that do not clear by themselves.
var stuckReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true,
}

// Stuck reports whether a container's waiting reason is one that does not
// clear by itself while nobody acts: its image cannot be pulled (a registry
// down, a tag gone) or it cannot be created from its configuration. A
// crash loop is not: a model server may crash while it loads.
func Stuck(waiting string) bool { return stuckReasons[waiting] }

// GroupStatus is the judgment of one group.
type GroupStatus struct {
	ID       topology.GroupID `json:"id"`
	Workload string           `json:"workload,omitempty"`
	// Healthy is the verdict. Reason is ReasonGroupReady when it is true,
	// else the reason of the worst problem; Message says the same in a
	// sentence, e.g. "vllm-0-2 not ready; 3/4 members healthy".
	Healthy bool   `json:"healthy"`
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
	// Size is the expected number of members, Members the pods that exist,
	// ReadyMembers the healthy ones.
	Size         int `json:"size"`
	Members      int `json:"members"`
	ReadyMembers int `json:"readyMembers"`
	// Leader is the leader pod's name, "" when there is none.
	Leader      string      `json:"leader,omitempty"`
	LeaderState LeaderState `json:"leaderState"`
	// Problems are the unhealthy members (missing ones included), worst
	// first, then leader first, then in the group's order.
	Problems []MemberStatus `json:"problems,omitempty"`
}

// Options adjust the judgment for what a caller knows beyond the group's
// pods. The zero value judges the group as its pods say.
type Options struct {
	// MinSize, if larger than the group's expected size, is the size that
	// counts: a size recorded when the group was whole (a plan made before
	// a drain), for groups whose pods declare none (Ray).
	MinSize int
	// RequireLeader makes a group without a leader pod unhealthy
	// (MemberMissing, LeaderMissing): its leader is gone. Recovery sets it
	// for groups that had a leader before the drain.
	RequireLeader bool
	// LeaderByContainers judges the leader by its ContainersReady
	// condition instead of Ready. The readiness-gate controller sets it: a
	// gated leader's Ready waits for the condition computed from this
	// judgment, so Ready would be circular.
	LeaderByContainers bool
}

// Evaluate judges group g (see the package documentation for the rules).
// It reads nothing but g and opts.
func Evaluate(g *topology.Group, opts Options) GroupStatus {
	st := GroupStatus{ID: g.ID, Workload: g.Workload, Members: len(g.Members), Size: max(g.ExpectedSize(), opts.MinSize), LeaderState: LeaderNone}
	if g.Leader != nil {
		st.Leader = g.Leader.Name
	}
	for _, pod := range g.Members {
		leader := g.Leader != nil && pod.Name == g.Leader.Name && pod.Namespace == g.Leader.Namespace
		m := judgeMember(pod, leader && opts.LeaderByContainers)
		m.Leader = leader
		if leader {
			st.LeaderState = leaderState(m)
		}
		if m.Healthy {
			st.ReadyMembers++
			continue
		}
		st.Problems = append(st.Problems, m)
	}
	st.Problems = append(st.Problems, absentMembers(g, st.Size, opts.RequireLeader)...)
	if g.Leader == nil && slices.ContainsFunc(st.Problems, func(m MemberStatus) bool { return m.Leader }) {
		st.LeaderState = LeaderMissing
	}
	slices.SortStableFunc(st.Problems, func(a, b MemberStatus) int {
		if d := a.Reason.rank() - b.Reason.rank(); d != 0 {
			return d
		}
		switch {
		case a.Leader && !b.Leader:
			return -1
		case b.Leader && !a.Leader:
			return 1
		}
		return 0
	})
	summary := fmt.Sprintf("%d/%d members healthy", st.ReadyMembers, max(st.Size, st.Members))
	switch {
	case len(g.Members) == 0:
		st.Reason, st.Message = ReasonNoMembers, fmt.Sprintf("no member exists; %s", summary)
	case len(st.Problems) == 0:
		st.Healthy, st.Reason, st.Message = true, ReasonGroupReady, summary
	default:
		st.Reason, st.Message = st.Problems[0].Reason, describe(st.Problems)+"; "+summary
	}
	return st
}

// Absent is the judgment of a group none of whose pods exists (evicted and
// not yet recreated, or deleted): not healthy, ReasonNoMembers. size is
// its expected size and leader its leader's name, as known from earlier.
func Absent(id topology.GroupID, workload, leader string, size int) GroupStatus {
	st := Evaluate(&topology.Group{ID: id, Workload: workload, Size: size}, Options{})
	st.Leader = leader
	if leader != "" {
		st.LeaderState = LeaderMissing
	}
	return st
}

func leaderState(m MemberStatus) LeaderState {
	switch {
	case m.Healthy:
		return LeaderReady
	case m.Reason == ReasonMemberTerminating:
		return LeaderTerminating
	default:
		return LeaderNotReady
	}
}

// MemberHealthy reports whether pod counts as a healthy member: not being
// deleted, Running and Ready.
func MemberHealthy(pod *corev1.Pod) bool {
	return judgeMember(pod, false).Healthy
}

// judgeMember judges one pod; byContainers reads ContainersReady for Ready.
func judgeMember(pod *corev1.Pod, byContainers bool) MemberStatus {
	m := MemberStatus{Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName}
	ready := corev1.PodReady
	if byContainers {
		ready = corev1.ContainersReady
	}
	switch {
	case pod.DeletionTimestamp != nil:
		m.Reason, m.Detail = ReasonMemberTerminating, "terminating"
	case pod.Spec.NodeName == "" && (pod.Status.Phase == corev1.PodPending || pod.Status.Phase == ""):
		m.Reason, m.Detail = ReasonMemberUnscheduled, "Pending"
		if c := condition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Message != "" {
			// The scheduler's verdict, without its account of preemption
			// (why evicting others would not help), which says nothing
			// a reader of a recovery can act on.
			msg, _, _ := strings.Cut(c.Message, " preemption: ")
			m.Detail += ": " + msg
		}
	case pod.Status.Phase != corev1.PodRunning:
		phase := string(pod.Status.Phase)
		if phase == "" {
			phase = "phase unknown"
		}
		m.Reason, m.Detail = ReasonMemberNotRunning, phase
		if w := waiting(pod); w != "" {
			m.Detail += "; " + w
		}
		_, m.Waiting = waitingContainer(pod)
	case !conditionTrue(pod, ready):
		m.Reason, m.Detail = ReasonMemberNotReady, notReadyDetail(pod, ready)
		_, m.Waiting = waitingContainer(pod)
	default:
		m.Healthy = true
	}
	return m
}

// notReadyDetail says why a running pod is not Ready: a container waiting
// (CrashLoopBackOff), a readiness gate not set, or just "not ready".
func notReadyDetail(pod *corev1.Pod, ready corev1.PodConditionType) string {
	if w := waiting(pod); w != "" {
		return "not ready; " + w
	}
	if ready == corev1.PodReady && conditionTrue(pod, corev1.ContainersReady) {
		for _, g := range pod.Spec.ReadinessGates {
			if !conditionTrue(pod, g.ConditionType) {
				return fmt.Sprintf("not ready; readiness gate %s not True", g.ConditionType)
			}
		}
	}
	if ready == corev1.ContainersReady {
		return "containers not ready"
	}
	return "not ready"
}

// waiting names the first container (init containers first) that waits
// for a reason other than starting up, e.g. "container vllm waiting:
// CrashLoopBackOff".
func waiting(pod *corev1.Pod) string {
	if name, reason := waitingContainer(pod); reason != "" {
		return fmt.Sprintf("container %s waiting: %s", name, reason)
	}
	return ""
}

// waitingContainer returns the first container (init containers first)
// that waits for a reason other than starting up, and the reason.
func waitingContainer(pod *corev1.Pod) (name, reason string) {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return cs.Name, w.Reason
			}
		}
	}
	return "", ""
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	c := condition(pod, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// maxNamed bounds how many problems a message names; the rest are
// counted, so that the message of a large broken group stays short.
const maxNamed = 3

// describe names up to maxNamed problems and counts the rest; missing
// members without a known name are counted together.
func describe(problems []MemberStatus) string {
	var parts []string
	unnamed, more := 0, 0
	for _, p := range problems {
		switch {
		case p.Name == "" && p.Leader:
			parts = append(parts, "leader missing")
		case p.Name == "":
			unnamed++
		case len(parts) < maxNamed:
			parts = append(parts, p.Name+" "+p.Detail)
		default:
			more++
		}
	}
	if unnamed == 1 {
		parts = append([]string{"1 member missing"}, parts...)
	} else if unnamed > 1 {
		parts = append([]string{fmt.Sprintf("%d members missing", unnamed)}, parts...)
	}
	s := strings.Join(parts, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// absentMembers returns the members of g that do not exist: size minus
// the pods there are, named where the kind makes names knowable. Without a
// leader pod, the absent leader is one of them (the LeaderWorkerSet member
// named like the group, else the first unnamed one); with requireLeader and
// no absent member to be it, it is added.
func absentMembers(g *topology.Group, size int, requireLeader bool) []MemberStatus {
	missing := max(size-len(g.Members), 0)
	names := missingNames(g, size)
	absent := make([]MemberStatus, missing)
	for i := range absent {
		absent[i] = MemberStatus{Reason: ReasonMemberMissing, Detail: "missing"}
		if len(names) == missing {
			absent[i].Name = names[i]
		}
	}
	if g.Leader != nil {
		return absent
	}
	for i := range absent {
		if absent[i].Name == "" || absent[i].Name == g.ID.Name {
			if absent[i].Name != "" || requireLeader {
				absent[i].Leader = true
			}
			return absent
		}
	}
	if requireLeader {
		absent = append(absent, MemberStatus{Leader: true, Reason: ReasonMemberMissing, Detail: "missing"})
	}
	return absent
}

// missingNames names the absent members of a LeaderWorkerSet group from the
// worker indexes of the present ones: the leader is "<group>", the worker
// with index i "<group>-<i>", as LeaderWorkerSet names them. Nil for other
// kinds, whose absent members have no knowable name.
func missingNames(g *topology.Group, size int) []string {
	if g.ID.Kind != topology.KindLeaderWorkerSet || size <= 0 {
		return nil
	}
	present := make(map[int]bool, len(g.Members))
	for _, pod := range g.Members {
		i, err := strconv.Atoi(pod.Labels[topology.LWSWorkerIndexLabel])
		if err != nil {
			return nil
		}
		present[i] = true
	}
	var names []string
	for i := range size {
		switch {
		case present[i]:
		case i == 0:
			names = append(names, g.ID.Name)
		default:
			names = append(names, g.ID.Name+"-"+strconv.Itoa(i))
		}
	}
	return names
}
