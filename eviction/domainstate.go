package eviction

import (
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/health"
)

// DomainState is where a rollout stands in one domain (RolloutDomain.State):
// as its plan finds it (Drainer.PlanRollout), as the cluster shows it
// (Drainer.RolloutStatus), or as the rollout left it (its RolloutResult).
// A plan has Pending or Skipped; a status Pending, Draining, Upgrading,
// Recovering, Done or Stopped; a result Done, Skipped, DryRun, Failed,
// Interrupted or Pending.
type DomainState string

// The states of a domain in a rollout's plan, status and result.
const (
	// StatePending: in a plan, the rollout will drain the domain; in a
	// status, no node of the domain carries the rollout's cordon or
	// upgraded mark; in a result, the rollout stopped before reaching it.
	StatePending DomainState = "Pending"
	// StateDraining: the rollout cordoned the domain and its plan still
	// names pods to evict (or terminating pods to wait for).
	StateDraining DomainState = "Draining"
	// StateUpgrading: the rollout cordoned the domain, its plan names no
	// pod, and no node carries the upgraded mark yet: the upgrade step
	// runs.
	StateUpgrading DomainState = "Upgrading"
	// StateRecovering: the domain is marked upgraded, and some node is
	// still cordoned by the rollout (GPU check, uncordon), or it is the
	// domain the rollout upgraded last and the rollout still runs, or its
	// groups (those with a pod on it and those the drain left Pending or
	// incomplete) are not healthy.
	StateRecovering DomainState = "Recovering"
	// StateDone: in a status, the domain is marked upgraded, uncordoned,
	// and not Recovering; in a result, the rollout drained, upgraded,
	// uncordoned it and saw it recover.
	StateDone DomainState = "Done"
	// StateStopped: the domain would be Draining, Upgrading or
	// Recovering, but no holder keeps the rollout's Lease: the rollout
	// failed, was cancelled or crashed there (the cluster does not say
	// which); RolloutDomain.Stage says where. Run it again with the same
	// ID to resume.
	StateStopped DomainState = "Stopped"
	// StateSkipped (a plan's and a result's): an earlier run with the
	// same ID had upgraded the domain; the rollout skips its drain.
	StateSkipped DomainState = "Skipped"
	// StateDryRun (a result's): planned and dry-run; nothing changed.
	StateDryRun DomainState = "DryRun"
	// StateFailed (a result's): the rollout stopped here on an error.
	StateFailed DomainState = "Failed"
	// StateInterrupted (a result's): the rollout was cancelled here.
	StateInterrupted DomainState = "Interrupted"
)

// RolloutDomain is one domain of a rollout: as its plan schedules it
// (RolloutPlan.Domains), as the cluster shows it while the rollout runs
// or after (RolloutStatus.Domains), or as the rollout left it
// (RolloutResult.Domains). Domain and State are set in each; every other
// field says where it is set, and is empty (absent from the JSON)
// elsewhere.
type RolloutDomain struct {
	Domain string `json:"domain"`
	// State is where the rollout stands in the domain. A plan has
	// Pending, or Skipped for a domain a run with the same ID upgraded
	// already; a status Pending, Draining, Upgrading, Recovering, Done
	// or Stopped; a result Done, Skipped, DryRun, Failed, Interrupted or
	// Pending (not reached).
	State DomainState `json:"state"`

	// Stage (status) is the stage of a domain in progress (or Stopped
	// in it): Phase1 or Phase2 while Draining (Phase1 while a pod under
	// a budget remains), Upgrade while Upgrading, Uncordon or Recovery
	// while Recovering (Uncordon while a node is still cordoned by the
	// rollout).
	Stage Stage `json:"stage,omitempty"`
	// Since (status) is when the domain was marked upgraded
	// (udrain.UpgradedAtAnnotation, the end of its upgrade step), for
	// Done and Recovering domains.
	Since *time.Time `json:"since,omitempty"`
	// NotBefore (status) is, for a domain in progress, the last time
	// another domain of the rollout was marked upgraded: the cordon
	// leaves no time on the nodes, but the rollout started this domain
	// after that one.
	NotBefore *time.Time `json:"notBefore,omitempty"`
	// Nodes (status) counts the domain's nodes; Cordoned those cordoned
	// by the rollout (udrain.CordonedByAnnotation); Upgraded those
	// marked upgraded by it.
	Nodes    int `json:"nodes,omitempty"`
	Cordoned int `json:"cordoned,omitempty"`
	Upgraded int `json:"upgraded,omitempty"`
	// Pods (status) counts the pods the domain's plan names now (both
	// phases): what is left to evict in a domain not upgraded yet.
	Pods int `json:"pods,omitempty"`
	// Blockers (status) are the budgets that would refuse phase 1 of
	// the domain now (from its plan), for a domain not upgraded yet.
	Blockers []health.Blocker `json:"blockers,omitempty"`
	// Down (status) are the domain's groups that are not healthy
	// (package health's judgment): those with a pod on its nodes and,
	// for the domain the rollout is in or upgraded last, the groups its
	// drain left Pending or incomplete.
	Down []health.GroupStatus `json:"down,omitempty"`
	// Budgets (status) are the budgets over those groups that are not
	// healthy.
	Budgets []health.BudgetStatus `json:"budgets,omitempty"`
	// Updating (status) are the workloads on a Pending domain that roll
	// out an update of their own: the rollout waits for them
	// (RolloutOptions.IgnoreWorkloadUpdates).
	Updating []WorkloadUpdate `json:"updating,omitempty"`

	// After, With and HeldBy (plan and result, with Parallel other than
	// 1) say when the rollout starts a domain not upgraded yet, as its
	// plan simulates it (domains in flight taken to end in the order
	// they started): After is the domain whose end lets it start, empty
	// when it starts with the rollout; With are the domains in flight
	// when it starts; HeldBy is why it could not start at an earlier
	// domain's end, if it could not: a hold (BlockInfo of BlockBudget,
	// BlockRoom or BlockLimit).
	After  string     `json:"after,omitempty"`
	With   []string   `json:"with,omitempty"`
	HeldBy *BlockInfo `json:"heldBy,omitempty"`

	// Plan (plan and result) is the domain's plan: in a RolloutPlan,
	// the plan its drain would have at the plan's look (the one the
	// destinations were simulated from); in a result, the plan its drain
	// ran. Nil for a domain skipped (upgraded already) or not reached.
	Plan *Plan `json:"plan,omitempty"`
	// Drain (result) is the drain's result (nil when skipped or not
	// reached).
	Drain *Result `json:"drain,omitempty"`
	// Health (plan and result) is the health of the domain's groups: in
	// a RolloutPlan, at the plan's look; in a result, when its recovery
	// ended.
	Health *health.DomainStatus `json:"health,omitempty"`
	// Groups (result) are the groups the domain's drain disrupted, each
	// with its downtime: from its first pod's eviction until it was
	// healthy again, wherever it runs now.
	Groups []GroupDowntime `json:"groups,omitempty"`
	// Upgrade, Recovery and Duration (result) are how long its upgrade
	// step, its recovery and the whole domain took.
	Upgrade  udrain.Seconds `json:"upgradeSeconds,omitempty"`
	Recovery udrain.Seconds `json:"recoverySeconds,omitempty"`
	Duration udrain.Seconds `json:"durationSeconds,omitempty"`
}
