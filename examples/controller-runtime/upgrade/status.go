package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// Phase is where an upgrade request is.
type Phase string

// The phases of a request.
const (
	// PhaseRunning: the rollout runs.
	PhaseRunning Phase = "Running"
	// PhaseSucceeded: every domain is upgraded and its groups healthy.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: the rollout stopped on an error; it is retried (and
	// resumes) after Options.RetryAfter.
	PhaseFailed Phase = "Failed"
	// PhaseInterrupted: the controller stopped during the rollout; it
	// resumes when the controller starts again.
	PhaseInterrupted Phase = "Interrupted"
	// PhaseInvalid: the request cannot be run; it waits until it is
	// changed.
	PhaseInvalid Phase = "Invalid"
)

// The condition types of a request's Status.
const (
	// ConditionSucceeded is True when the rollout is done, False with the
	// reason it stopped (StoppedAt<Stage>, Interrupted, InvalidRequest,
	// ...), Unknown while it runs.
	ConditionSucceeded = "Succeeded"
	// ConditionProgressing is True while the rollout runs, with what it
	// is doing as reason (DomainStarted, EvictionBlocked, Upgrading,
	// WaitingRecovery, ...).
	ConditionProgressing = "Progressing"
	// ConditionGroupsHealthy is the health of the groups of the domain
	// last drained, as package health judged it: True (GroupReady) or
	// False with the worst group's reason (MemberNotReady,
	// MemberMissing, ...) or a budget's (BudgetBehind, ...).
	ConditionGroupsHealthy = "GroupsHealthy"
)

// Status is what the controller writes on a request (StatusAnnotation).
type Status struct {
	// ID is the rollout the status is about.
	ID    string `json:"id"`
	Phase Phase  `json:"phase"`
	// Domains are the request's domains and where the rollout is with
	// each (eviction.DomainState, or Running).
	Domains    []DomainState      `json:"domains,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DomainState is where a rollout is with one domain.
type DomainState struct {
	Domain string               `json:"domain"`
	Status eviction.DomainState `json:"status"`
}

// DomainRunning is the status of the domain a rollout works on.
const DomainRunning eviction.DomainState = "Running"

// Condition returns the condition of type t, or nil.
func (s *Status) Condition(t string) *metav1.Condition {
	return meta.FindStatusCondition(s.Conditions, t)
}

// setDomain records where the rollout is with domain.
func (s *Status) setDomain(domain string, st eviction.DomainState) {
	if i := slices.IndexFunc(s.Domains, func(d DomainState) bool { return d.Domain == domain }); i >= 0 {
		s.Domains[i].Status = st
		return
	}
	s.Domains = append(s.Domains, DomainState{Domain: domain, Status: st})
}

func (s *Status) set(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: clip(message)})
}

// clip keeps a message within a condition's limit.
func clip(s string) string {
	const max = 32 * 1024
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// healthCondition is the GroupsHealthy condition of a domain's health.
func healthCondition(h *health.DomainStatus) (metav1.ConditionStatus, string, string) {
	if h.Healthy {
		return metav1.ConditionTrue, "GroupReady", fmt.Sprintf("domain %s: %d group(s) healthy, %d budget(s) caught up", h.Domain, len(h.Groups), len(h.Budgets))
	}
	reason := ""
	var lines []string
	u := h.Unhealthy()
	for _, g := range u.Groups {
		if reason == "" {
			reason = string(g.Reason)
		}
		lines = append(lines, fmt.Sprintf("group %s: %s", g.ID, g.Message))
	}
	for _, b := range u.Budgets {
		if reason == "" {
			reason = "Budget" + string(b.Reason)
		}
		lines = append(lines, fmt.Sprintf("PodDisruptionBudget %s/%s: %s", b.Namespace, b.Name, b.Message))
	}
	if reason == "" {
		reason = "NotHealthy"
	}
	return metav1.ConditionFalse, reason, fmt.Sprintf("domain %s: %s", h.Domain, strings.Join(lines, "; "))
}

// stopReason is the Succeeded condition's reason for a rollout that
// stopped with err: the stage of a *eviction.DomainError, or the kind of
// error that stopped it before any domain.
func stopReason(err error) string {
	var stop *eviction.DomainError
	var config *udrain.ConfigError
	var contract *topology.ContractError
	var unknown *topology.UnknownDomainError
	switch {
	case errors.Is(err, context.Canceled):
		return "Interrupted"
	case errors.As(err, &stop):
		return "StoppedAt" + string(stop.Stage)
	case errors.As(err, &config):
		return "InvalidConfiguration"
	case errors.As(err, &contract):
		return "ContractViolated"
	case errors.As(err, &unknown):
		return "UnknownDomain"
	}
	return "Failed"
}
