package eviction

import (
	"fmt"
	"strings"
	"time"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/kubeclient"
	"github.com/udrain/udrain/topology"
)

// ErrorReason says why a *ClusterError, a *PermissionError or a
// *RetryError happened: each group's values are listed with it. The values
// are stable; programs may compare and record them.
type ErrorReason string

// The reasons of a *ClusterError: something in the cluster must change
// before the call can succeed.
const (
	// ReasonRefusedPods: pods kubectl drain would refuse to delete with
	// the current options (ClusterError.Pods, Messages). Nothing was
	// cordoned or evicted.
	ReasonRefusedPods ErrorReason = "RefusedPods"
	// ReasonMultiplePDBs: a pod selected by more than one
	// PodDisruptionBudget (ClusterError.Pod, PDBs), which the Eviction API
	// refuses (HTTP 500).
	ReasonMultiplePDBs ErrorReason = "MultiplePDBs"
	// ReasonGPUsLost: GPU nodes of a domain that, after the upgrade step
	// and RolloutOptions.GPUCheckGrace (ClusterError.Waited), do not
	// advertise the GPUs they had before the drain (ClusterError.Losses).
	// The domain stays cordoned; run the rollout again once the nodes are
	// fixed and it goes on.
	ReasonGPUsLost ErrorReason = "GPUsLost"
	// ReasonStuck: members of the domain's groups (ClusterError.Groups)
	// have waited RolloutOptions.StuckAfter (ClusterError.Waited) for a
	// reason that needs somebody to act (the image cannot be pulled, the
	// container or its volume cannot be created). The domain is upgraded
	// and uncordoned; run the rollout again once the cause is fixed.
	ReasonStuck ErrorReason = "Stuck"
	// ReasonNoLockNamespace: the namespace of the rollout's Lease
	// (ClusterError.Namespace, Lease) does not exist, and
	// RolloutOptions.LockNamespaceMustExist is set or it could not be
	// created. Nothing was changed: create the namespace, or choose
	// another (RolloutOptions.LockNamespace).
	ReasonNoLockNamespace ErrorReason = "NoLockNamespace"
)

// The reasons of a *PermissionError: the identity udrain runs as, or an
// admission webhook, refuses what udrain must do.
const (
	// ReasonForbidden: the API server refused a request for lack of
	// permission (Forbidden, Unauthorized): a list or watch, the rollout's
	// Lease, or a cordon or an eviction (PermissionError.Pod), checked with
	// dry-run requests before anything changes.
	ReasonForbidden ErrorReason = "Forbidden"
	// ReasonDenied: an admission webhook denied a pod's eviction
	// (PermissionError.Pod, Webhook, Message) on every attempt, or denied
	// udrain's dry-run check before anything changed (DryRun).
	ReasonDenied ErrorReason = "Denied"
	// ReasonWebhookFailed: calling an admission webhook failed under
	// failurePolicy Fail (a timeout) on every attempt at a pod's eviction.
	ReasonWebhookFailed ErrorReason = "WebhookFailed"
)

// The reasons of a *RetryError: the same call, later, may succeed.
const (
	// ReasonBlocked: a PodDisruptionBudget refused evictions (HTTP 429)
	// when the time ran out (RetryError.Block). It frees when the groups
	// it counts are healthy again.
	ReasonBlocked ErrorReason = "Blocked"
	// ReasonUnreachable: the API server did not serve udrain within
	// Options.ConnectTimeout, or left a write unanswered
	// (RetryError.Server, Problem, Status, Write, Waited).
	ReasonUnreachable ErrorReason = "Unreachable"
	// ReasonNotSynced: the informers of Options.Informers did not sync
	// within Options.ConnectTimeout (RetryError.Waited): they were not
	// started, or cannot list. Nothing was changed.
	ReasonNotSynced ErrorReason = "NotSynced"
	// ReasonNotHealthy: Drainer.WaitHealthy ended before the groups were
	// healthy (RetryError.Domains, Report, Waited); it unwraps to the
	// context's error.
	ReasonNotHealthy ErrorReason = "NotHealthy"
	// ReasonLocked: another holder renewed the rollout's Lease within its
	// duration (RetryError.Holder, RenewedAt, LockDuration): that rollout
	// runs now. Nothing was changed; RetryAfter is when the Lease expires
	// unless renewed.
	ReasonLocked ErrorReason = "Locked"
	// ReasonLockLost: the rollout lost its Lease while it ran (it could
	// not renew it in time, or another holder took it over: Err says
	// which) and stopped. It comes wrapped in the *DomainError of the
	// domain it stopped in, when it stopped in one: the same rollout,
	// run again once the Lease is free, resumes.
	ReasonLockLost ErrorReason = "LockLost"
	// ReasonInProgress: a domain that another rollout or drain
	// (RetryError.By) has cordoned and not finished (RetryError.Domain,
	// Node). Nothing was changed. Resume that one (Drainer.Rollout or
	// Drainer.Drain with ID By), or release the domain (Drainer.Uncordon)
	// before running this one again.
	ReasonInProgress ErrorReason = "InProgress"
	// ReasonWorkloadUpdating: a domain that waited
	// RolloutOptions.WorkloadUpdateTimeout (RetryError.Waited) for the
	// updates of workloads with a group on it (RetryError.Updates).
	// Nothing of the domain was touched.
	ReasonWorkloadUpdating ErrorReason = "WorkloadUpdating"
)

// ClusterError is a call stopped by the cluster's state, which must
// change before the call can succeed: Reason says what (ReasonRefusedPods,
// ReasonMultiplePDBs, ReasonGPUsLost, ReasonStuck, ReasonNoLockNamespace),
// the fields that go with it the details. errors.Is(err,
// &ClusterError{Reason: r}) reports whether one with Reason r is anywhere
// in err's tree. A placement-contract violation is a
// *topology.ContractError, and nodes without the domain label a
// *topology.UnlabeledNodesError: they are fixed in the cluster too.
type ClusterError struct {
	Reason ErrorReason
	// Domain is the domain the error is about (ReasonStuck, ReasonGPUsLost).
	Domain string
	// Pod is the pod selected by several budgets, PDBs their names
	// (ReasonMultiplePDBs).
	Pod  topology.PodRef
	PDBs []string
	// Pods are the pods kubectl drain would refuse (each with its
	// Reason, as in Plan.Refused), Messages kubectl's
	// error lines ("cannot delete Pods with local storage (use
	// --delete-emptydir-data to override): ns/a, ns/b") (ReasonRefusedPods).
	Pods     []PlannedPod
	Messages []string
	// Losses are the nodes that lost GPUs, with package gpu's findings
	// and the device plugin DaemonSets' diagnoses (ReasonGPUsLost).
	Losses []gpu.Loss
	// Groups are the domain's groups with members that cannot start by
	// themselves, as the recovery last judged them (package health), each
	// with only those members in Problems (ReasonStuck). A member whose
	// container waits for a reason that does not clear by itself
	// (health.Stuck) has it in Waiting; a member stuck ContainerCreating
	// has in Waiting the reason of the warning event that says why
	// (FailedAttachVolume, FailedMount, FailedMapVolume,
	// FailedCreatePodSandBox), and that event's message in Detail.
	Groups []health.GroupStatus
	// Waited is how long the GPU check waited (ReasonGPUsLost), or
	// RolloutOptions.StuckAfter (ReasonStuck).
	Waited time.Duration
	// Namespace and Lease name the rollout's Lease (ReasonNoLockNamespace).
	Namespace, Lease string
	// Err is the API server's answer, if one.
	Err error
}

func (e *ClusterError) Error() string {
	switch e.Reason {
	case ReasonRefusedPods:
		return fmt.Sprintf("pods cannot be drained with these options (nothing was cordoned or evicted): %s", strings.Join(e.Messages, "; "))
	case ReasonMultiplePDBs:
		pdbs := "more than one PodDisruptionBudget"
		if len(e.PDBs) > 0 {
			pdbs = strings.Join(e.PDBs, ", ")
		}
		return fmt.Sprintf("pod %s is selected by several PodDisruptionBudgets (%s), which the Eviction API does not support; narrow the PDB selectors so that one selects it (no pod of phase 2 was touched)",
			e.Pod, pdbs)
	case ReasonGPUsLost:
		return gpusLostMessage(e.Losses, e.Waited)
	case ReasonStuck:
		return stuckMessage(e.Groups, e.Waited)
	case ReasonNoLockNamespace:
		return fmt.Sprintf("taking the rollout's Lease %s/%s: the namespace does not exist: %v", e.Namespace, e.Lease, e.Err)
	}
	return fmt.Sprintf("the cluster stops udrain (%s): %v", e.Reason, e.Err)
}

func (e *ClusterError) Unwrap() error { return e.Err }

// Is reports whether target is a *ClusterError with e's Reason, or with
// none.
func (e *ClusterError) Is(target error) bool {
	t, ok := target.(*ClusterError)
	return ok && (t.Reason == "" || t.Reason == e.Reason)
}

// PermissionError is a request refused for lack of permission: by the API
// server (ReasonForbidden: Role names the role of deploy/rbac/drainer.yaml
// that grants it) or by an admission webhook (ReasonDenied,
// ReasonWebhookFailed: Webhook and Message say which and why). Checked
// with dry-run requests before anything changes, nothing was changed; a
// refused eviction (Pod) stops its domain there, with its nodes cordoned.
// errors.Is(err, &PermissionError{Reason: r}) reports whether one with
// Reason r is anywhere in err's tree.
type PermissionError struct {
	Reason ErrorReason
	Err    error
	// Role names the role of deploy/rbac/drainer.yaml that grants the
	// refused request; empty means the ClusterRole udrain-drainer
	// (ReasonForbidden).
	Role string
	// Pod is the pod whose eviction was refused, if one was.
	Pod topology.PodRef
	// Webhook is the admission webhook's name, when the API server's
	// message gives it; Message is that message (the webhook's reason).
	Webhook string
	Message string
	// DryRun marks a refusal of udrain's dry-run check, before anything
	// changed.
	DryRun bool
	// Attempts is how many times the eviction was tried.
	Attempts int
}

func (e *PermissionError) Error() string {
	switch {
	case e.Reason == ReasonDenied || e.Reason == ReasonWebhookFailed:
		return admissionMessage(e)
	case e.Pod != (topology.PodRef{}):
		return fmt.Sprintf("evicting pod %s: %v", e.Pod, e.Err)
	}
	role := e.Role
	if role == "" {
		role = "the ClusterRole udrain-drainer"
	}
	return fmt.Sprintf("udrain is not allowed to do its work (nothing was changed): %v; bind %s of deploy/rbac/drainer.yaml to the identity udrain runs as", e.Err, role)
}

func admissionMessage(e *PermissionError) string {
	what := "was denied by"
	if e.Reason != ReasonDenied {
		what = "could not be checked by"
	}
	hook := "an admission webhook"
	if e.Webhook != "" {
		hook = fmt.Sprintf("admission webhook %q", e.Webhook)
	}
	if e.DryRun {
		return fmt.Sprintf("the dry run of the eviction of pod %s %s %s (nothing was changed): %s; fix what it objects to (or the webhook), then run it again",
			e.Pod, what, hook, e.Message)
	}
	return fmt.Sprintf("the eviction of pod %s %s %s on %d attempt(s): %s; fix what it objects to (or the webhook), then run it again",
		e.Pod, what, hook, e.Attempts, e.Message)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// Is reports whether target is a *PermissionError with e's Reason, or
// with none.
func (e *PermissionError) Is(target error) bool {
	t, ok := target.(*PermissionError)
	return ok && (t.Reason == "" || t.Reason == e.Reason)
}

// RetryError is a call that the same call, later, may complete: Reason
// says what it waits for (ReasonBlocked, ReasonUnreachable,
// ReasonNotSynced, ReasonNotHealthy, ReasonLocked, ReasonLockLost,
// ReasonInProgress, ReasonWorkloadUpdating), the fields that go with it
// the details, RetryAfter how long to wait when that is known. Inside a
// domain it comes wrapped in the domain's *DomainError, which says where
// the call stopped. errors.Is(err, &RetryError{Reason: r}) reports
// whether one with Reason r is anywhere in err's tree (a *DomainError
// stopped while blocked holds one with ReasonBlocked beside its cause).
type RetryError struct {
	Reason ErrorReason
	// RetryAfter is how long to wait before trying again, when known
	// (ReasonLocked: until the Lease expires unless renewed); else zero.
	RetryAfter time.Duration
	// ID is the drain's or rollout's ID (ReasonLocked, ReasonLockLost,
	// ReasonInProgress, ReasonBlocked in a *DomainError).
	ID string
	// Domain is the domain the error is about; Node the node found
	// cordoned and By the ID of the rollout or drain that cordoned it
	// (ReasonInProgress).
	Domain, Node, By string
	// Block is the budget refusing evictions: its counts, since when, and
	// the pods waiting on it (ReasonBlocked).
	Block *BlockInfo
	// Server is the API server's address ("https://10.0.0.1:6443"), if
	// known; Problem how it failed; Status the HTTP status it answered
	// with (ServerFailing, ServerThrottled), else 0 (ReasonUnreachable).
	Server  string
	Problem kubeclient.ServerProblem
	Status  int
	// Write names the write the server left unanswered ("the eviction of
	// ns/pod", "the patch of node n1 (cordon)"), for a call that failed
	// after its informers had listed the cluster: what the call did
	// before stays done (a drain's DomainError says where it stopped).
	// Empty when the server failed before anything was changed
	// (ReasonUnreachable).
	Write string
	// Waited is how long the call waited (ReasonUnreachable,
	// ReasonNotSynced, ReasonNotHealthy, ReasonWorkloadUpdating).
	Waited time.Duration
	// Domains are the domains WaitHealthy waited for, as named (empty for
	// every domain), and Report what was still missing (ReasonNotHealthy).
	Domains []string
	Report  *health.Report
	// Namespace and Lease name the rollout's Lease; Holder is the identity
	// of its holder (RolloutOptions.LockIdentity), RenewedAt when it last
	// renewed it, LockDuration how long it holds without a renewal
	// (ReasonLocked, ReasonLockLost).
	Namespace, Lease, Holder string
	RenewedAt                time.Time
	LockDuration             time.Duration
	// Updates are the workloads' updates the domain waited for
	// (ReasonWorkloadUpdating).
	Updates []WorkloadUpdate
	// Err is the last error seen, or the cause (the context's error for
	// ReasonNotHealthy; how the Lease was lost for ReasonLockLost).
	Err error
}

func (e *RetryError) Error() string {
	switch e.Reason {
	case ReasonBlocked:
		var block BlockInfo
		if e.Block != nil {
			block = *e.Block
		}
		return fmt.Sprintf("%s; the budget frees when the groups it counts are healthy again", block)
	case ReasonUnreachable:
		return unreachableMessage(e)
	case ReasonNotSynced:
		return fmt.Sprintf("the informers of Options.Informers did not sync within %s: start them (factory.Start, or the manager's cache) before calling, and check that they may list and watch nodes, pods, PodDisruptionBudgets and DaemonSets", e.Waited)
	case ReasonNotHealthy:
		return notHealthyMessage(e)
	case ReasonLocked:
		return fmt.Sprintf("rollout %s is running elsewhere: Lease %s/%s is held by %q, renewed at %s (it expires %s after its last renewal); wait for that rollout to end, or stop it; nothing was changed",
			e.ID, e.Namespace, e.Lease, e.Holder, e.RenewedAt.UTC().Format(time.RFC3339), e.LockDuration)
	case ReasonLockLost:
		return fmt.Sprintf("rollout %s lost its Lease %s/%s and stopped: %v", e.ID, e.Namespace, e.Lease, e.Err)
	case ReasonInProgress:
		return fmt.Sprintf("node %s of domain %s is cordoned by %q, which has not finished (this is %q)", e.Node, e.Domain, e.By, e.ID)
	case ReasonWorkloadUpdating:
		parts := make([]string, len(e.Updates))
		for i, u := range e.Updates {
			parts[i] = u.String()
		}
		return fmt.Sprintf("domain %s not started after waiting %s for workloads with a group on it to finish their own update (it deletes groups through no budget): %s",
			e.Domain, e.Waited.Round(time.Millisecond), strings.Join(parts, "; "))
	}
	return fmt.Sprintf("try again later (%s): %v", e.Reason, e.Err)
}

func unreachableMessage(e *RetryError) string {
	server := e.Server
	if server == "" {
		server = "the API server"
	}
	var what string
	switch e.Problem {
	case kubeclient.ServerRefused:
		what = fmt.Sprintf("cannot reach %s: connection refused", server)
	case kubeclient.ServerNoAnswer:
		what = fmt.Sprintf("the API server %s did not answer", server)
	case kubeclient.ServerFailing:
		what = fmt.Sprintf("the API server %s answers %d (server error) to every request", server, e.Status)
	case kubeclient.ServerThrottled:
		what = fmt.Sprintf("the API server %s throttles every request (429 Too Many Requests)", server)
	default:
		what = "cannot reach " + server
	}
	if e.Write != "" {
		return fmt.Sprintf("%s %s (gave up after %s): %v", what, e.Write, e.Waited, e.Err)
	}
	return fmt.Sprintf("%s (nothing was changed; gave up after %s): %v", what, e.Waited, e.Err)
}

func notHealthyMessage(e *RetryError) string {
	what := "the groups of every domain"
	switch len(e.Domains) {
	case 0:
	case 1:
		what = "domain " + e.Domains[0]
	default:
		what = "domains " + strings.Join(e.Domains, ", ")
	}
	var waiting []string
	if e.Report != nil {
		waiting = reportWaiting(e.Report)
	}
	return fmt.Sprintf("%s not healthy after %s (%v): %s", what, e.Waited.Round(time.Millisecond), e.Err,
		strings.Join(abbreviate(waiting, 10), "; "))
}

func (e *RetryError) Unwrap() error { return e.Err }

// Is reports whether target is a *RetryError with e's Reason, or with
// none.
func (e *RetryError) Is(target error) bool {
	t, ok := target.(*RetryError)
	return ok && (t.Reason == "" || t.Reason == e.Reason)
}

// stuckMessage names the stuck members by group and reason, with the
// warning event's message of those stuck ContainerCreating.
func stuckMessage(groups []health.GroupStatus, after time.Duration) string {
	var parts []string
	for _, g := range groups {
		var reasons []string
		pods := map[string][]string{}
		messages := map[string]string{}
		for _, m := range g.Problems {
			if _, ok := pods[m.Waiting]; !ok {
				reasons = append(reasons, m.Waiting)
				if !health.Stuck(m.Waiting) {
					messages[m.Waiting] = m.Detail
				}
			}
			pods[m.Waiting] = append(pods[m.Waiting], m.Name)
		}
		for _, r := range reasons {
			part := fmt.Sprintf("%d pod(s) of group %s cannot start: %s (%s)", len(pods[r]), g.ID, r, strings.Join(abbreviate(pods[r], 5), ", "))
			if m := messages[r]; m != "" {
				part += ": " + m
			}
			parts = append(parts, part)
		}
	}
	return fmt.Sprintf("%s (the first for %s or longer)", strings.Join(parts, "; "), after)
}
