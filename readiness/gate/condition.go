package gate

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/topology"
)

// ConditionType is the pod condition the controller sets on leaders. A
// leader opts in by declaring it as a readiness gate:
//
//	spec:
//	  readinessGates:
//	  - conditionType: udrain.dev/group-ready
//
// The kubelet then keeps the leader unready until the condition is True.
const ConditionType corev1.PodConditionType = "udrain.dev/group-ready"

// Reasons of the condition. A False condition carries the reason of its
// worst problem, in this order: a member missing, terminating, not running,
// not ready.
const (
	// ReasonGroupReady: every member is healthy and the group has its
	// expected size.
	ReasonGroupReady = "GroupReady"
	// ReasonMemberMissing: the group has fewer pods than its expected size.
	ReasonMemberMissing = "MemberMissing"
	// ReasonMemberTerminating: a member is being deleted (evicted,
	// preempted, rolled).
	ReasonMemberTerminating = "MemberTerminating"
	// ReasonMemberNotRunning: a member's phase is not Running (Pending,
	// Failed, Succeeded, Unknown).
	ReasonMemberNotRunning = "MemberNotRunning"
	// ReasonMemberNotReady: a member runs but is not Ready (for the leader:
	// its containers are not ready).
	ReasonMemberNotReady = "MemberNotReady"
)

// maxNamedProblems bounds how many members a message names; the rest are
// counted, so that the message of a large broken group stays short.
const maxNamedProblems = 3

// memberProblem is why one member is not healthy. It is the error a pod
// "check" returns, so that the readiness package's rules can judge it.
type memberProblem struct {
	name   string // the member's pod name; empty for a missing member without a known name
	reason string // one of the Reason constants
	text   string // what is wrong, e.g. "not ready"
}

func (p *memberProblem) Error() string { return p.name + " " + p.text }

// rank orders reasons from worst to mildest.
func rank(reason string) int {
	switch reason {
	case ReasonMemberMissing:
		return 0
	case ReasonMemberTerminating:
		return 1
	case ReasonMemberNotRunning:
		return 2
	default:
		return 3
	}
}

// checkMemberPod is the pod-status equivalent of a member's health check:
// nil when the pod runs, is ready and is not being deleted. A pod that will
// not come back by itself (being deleted, Failed, Succeeded) is marked
// [readiness.Gone], so that it counts as a hard failure. For the leader,
// ContainersReady stands for Ready: the leader's Ready depends on the very
// condition computed from this.
func checkMemberPod(pod *corev1.Pod, leader bool) error {
	switch {
	case pod.DeletionTimestamp != nil:
		return readiness.Gone(&memberProblem{pod.Name, ReasonMemberTerminating, "terminating"})
	case pod.Status.Phase == corev1.PodFailed, pod.Status.Phase == corev1.PodSucceeded:
		return readiness.Gone(&memberProblem{pod.Name, ReasonMemberNotRunning, string(pod.Status.Phase)})
	case pod.Status.Phase != corev1.PodRunning:
		phase := string(pod.Status.Phase)
		if phase == "" {
			phase = "phase unknown"
		}
		return &memberProblem{pod.Name, ReasonMemberNotRunning, phase}
	case leader && !podConditionTrue(pod, corev1.ContainersReady):
		return &memberProblem{pod.Name, ReasonMemberNotReady, "containers not ready"}
	case !leader && !podConditionTrue(pod, corev1.PodReady):
		return &memberProblem{pod.Name, ReasonMemberNotReady, "not ready"}
	default:
		return nil
	}
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Evaluate returns the condition the leader of g should carry: True with
// [ReasonGroupReady] when the group has at least its expected size and
// every member is healthy, else False with the reason of the worst problem
// and a message naming the members at fault, e.g.
//
//	MemberNotReady: vllm-0-2 not ready; 3/4 members healthy
//
// A member is healthy when its pod is Running, Ready and not being deleted.
// The leader (g.Leader) counts as a member, but its ContainersReady condition
// stands for Ready, since its Ready waits for this condition. Members are
// judged with the readiness package's rules ([readiness.MemberState.Verdict]
// with a failure threshold of 1, as the kubelet has already applied the
// probes' own thresholds; [readiness.GroupReady]), so an empty group is not
// ready. The condition's LastTransitionTime is now; Evaluate reads nothing
// but g, so it is safe to call from anywhere.
func Evaluate(g *topology.Group, now time.Time) corev1.PodCondition {
	var (
		verdicts []error
		problems []*memberProblem
		healthy  int
	)
	judge := func(checkErr error) {
		verdict := readiness.MemberState{}.Observe(checkErr).Verdict(1)
		verdicts = append(verdicts, verdict)
		var p *memberProblem
		switch {
		case verdict == nil:
			healthy++
		case errors.As(verdict, &p):
			problems = append(problems, p)
		}
	}
	for _, pod := range g.Members {
		judge(checkMemberPod(pod, isLeader(g, pod)))
	}
	expected := g.ExpectedSize()
	missing := expected - len(g.Members)
	if missing > 0 {
		names := missingMemberNames(g)
		if len(names) != missing {
			names = nil
		}
		for i := range missing {
			name := ""
			if names != nil {
				name = names[i]
			}
			judge(readiness.Gone(&memberProblem{name, ReasonMemberMissing, "missing"}))
		}
	}

	total := max(expected, len(g.Members))
	summary := fmt.Sprintf("%d/%d members healthy", healthy, total)
	cond := corev1.PodCondition{
		Type:               ConditionType,
		LastTransitionTime: metav1.NewTime(now),
	}
	if readiness.GroupReady(verdicts) {
		cond.Status = corev1.ConditionTrue
		cond.Reason = ReasonGroupReady
		cond.Message = summary
		return cond
	}
	cond.Status = corev1.ConditionFalse
	if len(problems) == 0 {
		// Only an empty group with no expected size gets here.
		cond.Reason = ReasonMemberMissing
		cond.Message = "no members; " + summary
		return cond
	}
	// Stable sort: worst reason first, then member order (natural order of
	// names), so the message does not change while the problems do not.
	sort.SliceStable(problems, func(a, b int) bool { return rank(problems[a].reason) < rank(problems[b].reason) })
	cond.Reason = problems[0].reason
	cond.Message = describeProblems(problems) + "; " + summary
	return cond
}

func isLeader(g *topology.Group, pod *corev1.Pod) bool {
	return g.Leader != nil && g.Leader.Name == pod.Name && g.Leader.Namespace == pod.Namespace
}

// describeProblems names up to maxNamedProblems problems and counts the
// rest; missing members without a known name are counted together.
func describeProblems(problems []*memberProblem) string {
	var parts []string
	unnamedMissing, more := 0, 0
	for _, p := range problems {
		switch {
		case p.name == "":
			unnamedMissing++
		case len(parts) < maxNamedProblems:
			parts = append(parts, p.Error())
		default:
			more++
		}
	}
	if unnamedMissing > 0 {
		text := fmt.Sprintf("%d members missing", unnamedMissing)
		if unnamedMissing == 1 {
			text = "1 member missing"
		}
		parts = append([]string{text}, parts...)
	}
	s := strings.Join(parts, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// missingMemberNames names the absent members of a LeaderWorkerSet group
// from the worker indexes of the present ones: the leader is "<group>", the
// worker with index i is "<group>-<i>", as LeaderWorkerSet names them. It
// returns nil for other kinds of groups, whose absent members have no
// knowable name.
func missingMemberNames(g *topology.Group) []string {
	if g.ID.Kind != topology.KindLeaderWorkerSet || g.Size <= 0 {
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
	for i := range g.Size {
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

// DeclaresGate reports whether pod lists [ConditionType] among its readiness
// gates. The controller only ever writes to leaders that do.
func DeclaresGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == ConditionType {
			return true
		}
	}
	return false
}

// CurrentCondition returns pod's [ConditionType] condition, or nil if it has
// none.
func CurrentCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ConditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
