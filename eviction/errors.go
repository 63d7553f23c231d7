package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/udrain/udrain/health"
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
// did not recover, the rollout's Lease lost. It names the domain and the
// stage, the pods still waiting and the budget blocking, if any, and
// unwraps to the cause: context.Canceled or context.DeadlineExceeded (a
// timeout of the drain or of the recovery, or the context's deadline), a
// *RetryError (ReasonBlocked) for the blocking budget, the upgrade step's
// error, a *ClusterError, a *PermissionError, a *RetryError or a
// *topology.ContractError. Test them with errors.Is and errors.As; the
// package doc says in which order. The same call with the same ID resumes
// the domain.
type DomainError struct {
	// ID is the drain's or rollout's ID.
	ID     string
	Domain string
	Stage  Stage
	// Pending are the pods of the plan not yet evicted (StagePhase1,
	// StagePhase2) or not yet gone (StageWaitGone).
	Pending []topology.PodRef
	// Block is the budget that was refusing evictions when the domain
	// stopped, if one was; errors.Is(err, &RetryError{Reason:
	// ReasonBlocked}) finds it too.
	Block *BlockInfo
	// Health is what recovery still waited for (StageRecovery).
	Health *health.DomainStatus
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
		if w := domainWaiting(e.Health); len(w) > 0 {
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
// *RetryError (ReasonBlocked) for it.
func (e *DomainError) Unwrap() []error {
	errs := []error{e.Err}
	if e.Block != nil {
		errs = append(errs, &RetryError{Reason: ReasonBlocked, ID: e.ID, Domain: e.Domain, Block: e.Block})
	}
	return errs
}

func refStrings(refs []topology.PodRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

// unanswered is the *RetryError (ReasonUnreachable) of a write that ran out of
// RequestTimeout attempts times in a row.
func (d *Drainer) unanswered(write string, attempts int, err error) *RetryError {
	server := d.server()
	if s := serverOf(err); s != "" {
		server = s
	}
	return &RetryError{Reason: ReasonUnreachable, Server: server, Problem: kubeclient.ServerNoAnswer, Waited: time.Duration(attempts) * d.s.RequestTimeout, Write: write, Err: err}
}

func abbreviate(s []string, max int) []string {
	if len(s) <= max {
		return s
	}
	return append(s[:max:max], fmt.Sprintf("and %d more", len(s)-max))
}
