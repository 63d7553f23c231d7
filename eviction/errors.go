package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/udrain/udrain/kubeclient"
	"github.com/udrain/udrain/topology"
)

// Stage names the step of a domain's drain, upgrade and recovery.
type Stage string

// The stages of a domain, in order.
const (
	// StagePlan: the plan is checked before anything changes (refused
	// pods, contract violations, a pod under two budgets, a domain held by
	// another rollout or drain).
	StagePlan Stage = "Plan"
	// StageCordon: permissions are checked and the nodes cordoned.
	StageCordon Stage = "Cordon"
	// StagePhase1: the pods some PodDisruptionBudget selects are evicted.
	StagePhase1 Stage = "Phase1"
	// StagePhase2: the other pods are evicted.
	StagePhase2 Stage = "Phase2"
	// StageWaitGone: udrain waits until every evicted pod is gone.
	StageWaitGone Stage = "WaitGone"
	// StageUpgrade: the caller's upgrade step runs.
	StageUpgrade Stage = "Upgrade"
	// StageGPUCheck: the upgraded GPU nodes must advertise their GPUs
	// again (RolloutOptions.SkipGPUCheck).
	StageGPUCheck Stage = "GPUCheck"
	// StageUncordon: the nodes are marked upgraded and uncordoned.
	StageUncordon Stage = "Uncordon"
	// StageRecovery: udrain waits until the domain's groups are healthy
	// and their budgets have caught up.
	StageRecovery Stage = "Recovery"
)

// DomainError is how every stop of a domain's drain or rollout is
// reported, however it ended: refused before it started, a budget that
// did not free in time, a cancel, the upgrade step failing, groups that
// did not recover. It names the domain and the stage, the pods still
// waiting and the budget blocking, if any, and unwraps to the cause:
// context.Canceled or context.DeadlineExceeded (a timeout of the drain or
// of the recovery, or the context's deadline), a *BlockedError for the
// blocking budget, the upgrade step's error, a *GPULostError, an
// *AdmissionError, a *RefusedPodsError, a *topology.ContractError, a
// *MultiplePDBsError, an *EvictionError, a *PermissionError or an
// *InProgressError. Test them with errors.Is and
// errors.As.
type DomainError struct {
	// ID is the drain's or rollout's ID.
	ID     string
	Domain string
	Stage  Stage
	// Pending are the pods of the plan not yet evicted (StagePhase1,
	// StagePhase2) or not yet gone (StageWaitGone).
	Pending []topology.PodRef
	// Block is the budget that was refusing evictions when the domain
	// stopped, if one was; errors.As finds it as a *BlockedError too.
	Block *BlockInfo
	// Health is what recovery still waited for (StageRecovery).
	Health *DomainHealth
	// Timeout is the limit that ran out (Helper.Timeout for a drain,
	// RolloutOptions.RecoveryTimeout for recovery); zero when the context
	// ended or the domain stopped for another reason.
	Timeout time.Duration
	// Err is the cause.
	Err error

	// deletedNamespaces are the namespaces, being deleted, whose pods
	// were among those still waiting (their events say so, with
	// RequestNamespaceTerminating).
	deletedNamespaces []string
}

// Error says which domain stopped where, why, and what was still waiting.
func (e *DomainError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "domain %s", e.Domain)
	if e.ID != "" {
		fmt.Fprintf(&b, " (%s)", e.ID)
	}
	fmt.Fprintf(&b, " stopped at %s: ", e.Stage)
	switch {
	case e.Timeout > 0 && errors.Is(e.Err, context.DeadlineExceeded):
		fmt.Fprintf(&b, "not done within %s", e.Timeout)
	default:
		b.WriteString(e.Err.Error())
	}
	if e.Block != nil {
		fmt.Fprintf(&b, "; blocked since %s by %s", e.Block.Since.UTC().Format(time.TimeOnly), e.Block)
	}
	if len(e.Pending) > 0 {
		fmt.Fprintf(&b, "; %d pod(s) still waiting: %s", len(e.Pending), strings.Join(abbreviate(refStrings(e.Pending), 10), ", "))
	}
	if len(e.deletedNamespaces) > 0 {
		fmt.Fprintf(&b, "; namespace(s) being deleted, which refuse evictions and take their pods with them: %s", strings.Join(abbreviate(e.deletedNamespaces, 10), ", "))
	}
	if e.Health != nil {
		if w := e.Health.waiting(); len(w) > 0 {
			fmt.Fprintf(&b, "; not healthy yet: %s", strings.Join(abbreviate(w, 10), "; "))
		}
	}
	switch {
	case e.Stage == StagePlan:
		b.WriteString(" (nothing was changed)")
	case e.Cordoned():
		b.WriteString(" (the domain's nodes stay cordoned)")
	}
	return b.String()
}

// Cordoned reports whether the domain's nodes stay cordoned: the domain
// stopped after its cordon and before its uncordon. The same Drain or
// Rollout with the same ID resumes it; Drainer.Uncordon releases its
// nodes instead.
func (e *DomainError) Cordoned() bool {
	switch e.Stage {
	case StagePhase1, StagePhase2, StageWaitGone, StageUpgrade, StageGPUCheck:
		return true
	}
	return false
}

// Unwrap returns the cause and, when a budget was blocking, a
// *BlockedError for it.
func (e *DomainError) Unwrap() []error {
	errs := []error{e.Err}
	if e.Block != nil {
		errs = append(errs, &BlockedError{Block: *e.Block})
	}
	return errs
}

// BlockedError is a PodDisruptionBudget refusing evictions (HTTP 429): its
// counts, since when, and the pods waiting on it. A *DomainError that
// stopped while blocked unwraps to one.
type BlockedError struct {
	Block BlockInfo
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s; the budget frees when the groups it counts are healthy again", e.Block)
}

func refStrings(refs []topology.PodRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

// RefusedPodsError reports pods that kubectl drain would refuse to delete
// with the current options. Nothing was cordoned or evicted.
type RefusedPodsError struct {
	Pods []PodReason
	// Messages are kubectl's error lines ("cannot delete Pods with local
	// storage (use --delete-emptydir-data to override): ns/a, ns/b").
	Messages []string
}

func (e *RefusedPodsError) Error() string {
	return fmt.Sprintf("pods cannot be drained with these options (nothing was cordoned or evicted): %s", strings.Join(e.Messages, "; "))
}

// MultiplePDBsError reports a pod selected by more than one
// PodDisruptionBudget: the Eviction API refuses it (HTTP 500), so the domain
// stops before phase 2.
type MultiplePDBsError struct {
	Pod  topology.PodRef
	PDBs []string
}

func (e *MultiplePDBsError) Error() string {
	pdbs := "more than one PodDisruptionBudget"
	if len(e.PDBs) > 0 {
		pdbs = strings.Join(e.PDBs, ", ")
	}
	return fmt.Sprintf("pod %s is selected by several PodDisruptionBudgets (%s), which the Eviction API does not support; narrow the PDB selectors so that one selects it (no pod of phase 2 was touched)",
		e.Pod, pdbs)
}

// EvictionError reports an eviction the API refused for a reason retrying
// cannot fix (e.g. Forbidden, an admission webhook's denial).
type EvictionError struct {
	Pod topology.PodRef
	Err error
}

func (e *EvictionError) Error() string {
	return fmt.Sprintf("evicting pod %s: %v", e.Pod, e.Err)
}

func (e *EvictionError) Unwrap() error { return e.Err }

// AdmissionError reports an eviction that admission webhooks refused on
// every attempt: a webhook denied it (Denied), or calling one failed under
// failurePolicy Fail (a timeout). The domain stops there: nothing else is
// evicted, and its nodes stay cordoned. A denial of udrain's dry-run check
// (DryRun, a webhook that sees dry runs) stops the domain before its
// cordon, with nothing changed.
type AdmissionError struct {
	Pod topology.PodRef
	// Webhook is the webhook's name, when the API server's message gives
	// it; Message is that message (the webhook's reason).
	Webhook string
	Message string
	Denied  bool
	// DryRun marks a refusal of udrain's dry-run check, before anything
	// changed.
	DryRun bool
	// Attempts is how many times the eviction was tried.
	Attempts int
	Err      error
}

func (e *AdmissionError) Error() string {
	what := "was denied by"
	if !e.Denied {
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

func (e *AdmissionError) Unwrap() error { return e.Err }

// InProgressError reports a domain that another rollout, or a drain, has
// cordoned and not finished. Nothing was changed. Resume that one
// (Drainer.Rollout or Drainer.Drain with ID By), or release the domain
// (Drainer.Uncordon) before running this one again.
type InProgressError struct {
	Domain, Node string
	// By is the ID of the rollout or drain that cordoned it; ID this one's.
	By, ID string
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("node %s of domain %s is cordoned by %q, which has not finished (this is %q)", e.Node, e.Domain, e.By, e.ID)
}

// PermissionError reports a request the API server refused for lack of
// permission (Forbidden, Unauthorized): a list or watch udrain needs to see
// the cluster, the rollout's Lease, or, checked with dry-run requests
// before anything changes, a cordon or an eviction. Nothing was changed.
// deploy/rbac/drainer.yaml has the roles udrain needs.
type PermissionError struct {
	Err error
	// Role names the role of deploy/rbac/drainer.yaml that grants the
	// refused request; empty means the ClusterRole udrain-drainer.
	Role string
}

func (e *PermissionError) Error() string {
	role := e.Role
	if role == "" {
		role = "the ClusterRole udrain-drainer"
	}
	return fmt.Sprintf("udrain is not allowed to do its work (nothing was changed): %v; bind %s of deploy/rbac/drainer.yaml to the identity udrain runs as", e.Err, role)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// UnreachableError reports an API server that did not serve udrain within
// Options.ConnectTimeout: it refused connections, did not answer, answered
// every request with a 5xx status or with 429 Too Many Requests, or could
// not be reached at all (DNS, TLS). Problem says which. Nothing was
// changed.
type UnreachableError struct {
	// Server is the API server's address ("https://10.0.0.1:6443"), if
	// known.
	Server string
	// Problem is how the server failed.
	Problem kubeclient.ServerProblem
	// Status is the HTTP status it answered with (ServerFailing,
	// ServerThrottled), else 0.
	Status int
	Waited time.Duration
	// Write names the write the server left unanswered ("the eviction of
	// ns/pod", "the patch of node n1 (cordon)"), for a call that failed
	// after its informers had listed the cluster: what the call did
	// before stays done (a drain's DomainError says where it stopped).
	// Empty when the server failed before anything was changed.
	Write string
	// Err is the last error seen.
	Err error
}

func (e *UnreachableError) Error() string {
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

// unanswered is the *UnreachableError of a write that ran out of
// RequestTimeout attempts times in a row.
func (d *Drainer) unanswered(write string, attempts int, err error) *UnreachableError {
	server := d.server()
	if s := serverOf(err); s != "" {
		server = s
	}
	return &UnreachableError{Server: server, Problem: kubeclient.ServerNoAnswer, Waited: time.Duration(attempts) * d.s.RequestTimeout, Write: write, Err: err}
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// NotSyncedError reports informers given in Options.Informers that did not
// sync within Options.ConnectTimeout: they were not started, or cannot
// list. Nothing was changed.
type NotSyncedError struct {
	Waited time.Duration
}

func (e *NotSyncedError) Error() string {
	return fmt.Sprintf("the informers of Options.Informers did not sync within %s: start them (factory.Start, or the manager's cache) before calling, and check that they may list and watch nodes, pods, PodDisruptionBudgets and DaemonSets", e.Waited)
}

func abbreviate(s []string, max int) []string {
	if len(s) <= max {
		return s
	}
	return append(s[:max:max], fmt.Sprintf("and %d more", len(s)-max))
}

// StuckPod is a member of a recovering group that cannot start by itself:
// its container waits for a reason that does not clear by itself
// (health.Stuck), or it stays ContainerCreating while its latest warning
// event says its volume cannot be attached or mounted or its sandbox
// cannot be made (CSI or CNI failure: FailedAttachVolume, FailedMount,
// FailedMapVolume, FailedCreatePodSandBox).
type StuckPod struct {
	Group  topology.GroupID `json:"group"`
	Pod    string           `json:"pod"`
	Node   string           `json:"node,omitempty"`
	Reason string           `json:"reason"`
	// Message is the warning event's message, for a pod found stuck by
	// its events ("MountVolume.SetUp failed for volume …").
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

// StuckError stops a rollout's recovery before its timeout: members of the
// domain's groups have waited RolloutOptions.StuckAfter for a reason that
// needs somebody to act (the image cannot be pulled, the container cannot
// be created). The domain is upgraded and uncordoned; run the rollout
// again once the cause is fixed, and it waits for the recovery again.
type StuckError struct {
	Domain string
	Pods   []StuckPod
	After  time.Duration
}

func (e *StuckError) Error() string {
	type key struct {
		group  topology.GroupID
		reason string
	}
	var order []key
	pods := map[key][]string{}
	messages := map[key]string{}
	for _, p := range e.Pods {
		k := key{p.Group, p.Reason}
		if _, ok := pods[k]; !ok {
			order = append(order, k)
			messages[k] = p.Message
		}
		pods[k] = append(pods[k], p.Pod)
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d pod(s) of group %s cannot start: %s (%s)", len(pods[k]), k.group, k.reason, strings.Join(abbreviate(pods[k], 5), ", "))
		if m := messages[k]; m != "" {
			parts[i] += ": " + m
		}
	}
	return fmt.Sprintf("%s (the first for %s or longer)", strings.Join(parts, "; "), e.After)
}
