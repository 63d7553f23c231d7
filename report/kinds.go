package report

import (
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// APIVersion is the apiVersion of every report udrain prints with -o json
// or -o yaml. Within one apiVersion, fields are only added, never renamed,
// removed or given another meaning; docs/CLI.md documents each.
//
// v1alpha2 (udrain 0.2): the reports hold the library's own result types
// (package eviction's Plan, Result and RolloutResult, package health's
// Report, DomainStatus, GroupStatus and BudgetStatus, package topology's
// Finding, package gpu's Summary), so the JSON a script reads is the Go
// value a controller gets; the CLI adds apiVersion, kind and what only a
// command knows (the exit code, the upgrade command, the time waited).
//
// v1alpha3: a rollout's domains are one type in its result,
// its status and its plan (eviction.RolloutDomain): a result's domain says
// "state" where it said "status", an audit's rollout lists its domains as
// objects (its "upgraded" and "schedule" go: a domain's "state" and
// "after", "with" and "heldBy" say it), and a domain's fields that do not
// apply are absent rather than zero.
const APIVersion = "udrain.dev/v1alpha3"

// The kinds of reports: the kind field of each document, and the Go type
// that reads it.
const (
	// KindDomainList is a DomainList.
	KindDomainList = "DomainList"
	// KindAuditReport is an AuditReport.
	KindAuditReport = "AuditReport"
	// KindPlan is a PlanReport.
	KindPlan = "Plan"
	// KindDrainResult is a DrainReport.
	KindDrainResult = "DrainResult"
	// KindRolloutResult is a RolloutReport.
	KindRolloutResult = "RolloutResult"
	// KindRolloutStatus is a RolloutStatusReport.
	KindRolloutStatus = "RolloutStatus"
	// KindUncordonResult is an UncordonResult.
	KindUncordonResult = "UncordonResult"
	// KindHealthReport is a HealthReport.
	KindHealthReport = "HealthReport"
	// KindGPUSummary is a GPUSummary.
	KindGPUSummary = "GPUSummary"
	// KindWaitServerResult is a WaitServerResult.
	KindWaitServerResult = "WaitServerResult"
	// KindVersion is a Version.
	KindVersion = "Version"
)

// TypeMeta opens every report: which kind it is, in which version.
type TypeMeta struct {
	// APIVersion is the version of the report's shape: APIVersion.
	APIVersion string `json:"apiVersion"`
	// Kind names the shape: one of the Kind constants.
	Kind string `json:"kind"`
}

// NewTypeMeta is the TypeMeta of a report of kind in this package's
// APIVersion.
func NewTypeMeta(kind string) TypeMeta { return TypeMeta{APIVersion: APIVersion, Kind: kind} }

// ErrorInfo says why a command failed, in reports that are printed also on
// failure (Plan, DrainResult, RolloutResult, HealthReport,
// WaitServerResult).
type ErrorInfo struct {
	// Reason is the class of the failure: Usage, Blocked,
	// ContractViolation, Interrupted or Error (ReasonOf classifies the
	// module's errors).
	Reason string `json:"reason"`
	// ExitCode is the process's exit code.
	ExitCode int `json:"exitCode"`
	// Message is the error message.
	Message string `json:"message"`
}

// The reasons of ErrorInfo, one per exit code of udrain's command line
// (docs/CLI.md): 2, 3, 4, 130 and any other.
const (
	// ReasonUsage: the command line must change (exit code 2).
	ReasonUsage = "Usage"
	// ReasonBlocked: a PodDisruptionBudget still refused evictions when
	// the drain's time ran out (exit code 3).
	ReasonBlocked = "Blocked"
	// ReasonContractViolation: the placement contract is violated (exit
	// code 4).
	ReasonContractViolation = "ContractViolation"
	// ReasonInterrupted: a signal stopped the command (exit code 130).
	ReasonInterrupted = "Interrupted"
	// ReasonError: any other failure (exit code 1).
	ReasonError = "Error"
)

// DomainList is the report of "udrain domains".
type DomainList struct {
	TypeMeta `json:",inline"`
	// LabelKey is the node label the domains come from.
	LabelKey string `json:"labelKey"`
	// Unlabeled lists nodes without the label (with --unlabeled=skip).
	Unlabeled []string `json:"unlabeled,omitempty"`
	// Items are the domains in natural order (ud-2 before ud-10).
	Items []DomainInfo `json:"items"`
	// Unscheduled are groups none of whose pods is on a node yet.
	Unscheduled []health.GroupStatus `json:"unscheduled,omitempty"`
}

// DomainInfo is one upgrade domain.
type DomainInfo struct {
	// Name is the value of the domain label its nodes share.
	Name string `json:"name"`
	// Nodes are the domain's nodes.
	Nodes []DomainNode `json:"nodes"`
	// CordonedNodes counts the domain's cordoned nodes.
	CordonedNodes int `json:"cordonedNodes"`
	// ControlPlaneNodes counts its control-plane nodes.
	ControlPlaneNodes int `json:"controlPlaneNodes"`
	// GPUs add up the domain's accelerators per vendor and product.
	GPUs []gpu.Capacity `json:"gpus,omitempty"`
	// Health is the health of the domain, its groups and the budgets over
	// them, judged by package health (eviction's Drainer.Health).
	Health health.DomainStatus `json:"health"`
}

// DomainNode is one node of a domain.
type DomainNode struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Ready is the node's Ready condition.
	Ready bool `json:"ready"`
	// Cordoned is spec.unschedulable; CordonedBy the ID of the udrain
	// drain or rollout that cordoned it (annotation udrain.dev/cordoned-by),
	// "" if udrain did not.
	Cordoned   bool   `json:"cordoned"`
	CordonedBy string `json:"cordonedBy,omitempty"`
	// UpgradedBy is the ID of the rollout that upgraded the node
	// (annotation udrain.dev/upgraded-by), "" if none.
	UpgradedBy string `json:"upgradedBy,omitempty"`
	// ControlPlane is true for a control-plane node (label
	// node-role.kubernetes.io/control-plane).
	ControlPlane bool `json:"controlPlane"`
	// GPU is package gpu's classification of the node's accelerators.
	GPU gpu.Classification `json:"gpu"`
}

// AuditReport is the report of "udrain audit".
type AuditReport struct {
	TypeMeta `json:",inline"`
	// LabelKey is the node label the domains come from.
	LabelKey string `json:"labelKey"`
	// Domains are the domains audited.
	Domains []string `json:"domains"`
	// Groups counts the groups found; PDBs the PodDisruptionBudgets.
	Groups int `json:"groups"`
	PDBs   int `json:"pdbs"`
	// Errors and Warnings count the findings by severity. Errors > 0 makes
	// the exit code 4.
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	// Findings are the contract's findings, then the simulated rollout's
	// DisruptedAgain and NoRoom findings.
	Findings []topology.Finding `json:"findings,omitempty"`
	// Rollout is the simulated rollout over every domain: its order and
	// where each evicted group can go (its findings are in Findings);
	// without each domain's Plan and Health, which PlanRollout gives
	// (udrain plan and udrain health show them).
	Rollout *eviction.RolloutPlan `json:"rollout,omitempty"`
	// RolloutProblem says why the rollout was not simulated (a domain
	// held by a rollout in progress, say).
	RolloutProblem string `json:"rolloutProblem,omitempty"`
}

// PlanReport is the report of "udrain plan": what draining a domain would
// do.
type PlanReport struct {
	TypeMeta `json:",inline"`
	// Plan is package eviction's plan of the drain (Drainer.Plan).
	Plan *eviction.Plan `json:"plan"`
	// Executable is true when a drain would start; Problem says why not
	// (refused pods, contract violations, a pod under two PDBs).
	Executable bool       `json:"executable"`
	Problem    *ErrorInfo `json:"problem,omitempty"`
}

// DrainReport is the report of "udrain drain".
type DrainReport struct {
	TypeMeta `json:",inline"`
	// Plan is what the drain set out to do (absent when it stopped
	// before a plan was made).
	Plan *eviction.Plan `json:"plan,omitempty"`
	// Result is package eviction's result of the drain; Summary its
	// summary (SummarizeDrain).
	Result  *eviction.Result `json:"result"`
	Summary Summary          `json:"summary"`
	// Error is why the drain failed; absent when it did not.
	Error *ErrorInfo `json:"error,omitempty"`
}

// RolloutReport is the report of "udrain rollout".
type RolloutReport struct {
	TypeMeta `json:",inline"`
	// UpgradeCommand is the shell command run per domain, "" if none.
	UpgradeCommand string `json:"upgradeCommand,omitempty"`
	// UpgradeStep names the other upgrade step (--upgrade-job-template,
	// --upgrade-node-label, --upgrade-webhook with its URL redacted), ""
	// if none.
	UpgradeStep string `json:"upgradeStep,omitempty"`
	// LabelKey is the node label the domains come from.
	LabelKey string `json:"labelKey"`
	// Result is package eviction's result of the rollout; Summary its
	// summary (SummarizeRollout).
	Result  *eviction.RolloutResult `json:"result"`
	Summary Summary                 `json:"summary"`
	// Error is why the rollout failed; absent when it did not.
	Error *ErrorInfo `json:"error,omitempty"`
}

// RolloutStatusReport is the report of "udrain rollout status".
type RolloutStatusReport struct {
	TypeMeta `json:",inline"`
	// LabelKey is the node label the domains come from.
	LabelKey string `json:"labelKey"`
	// NoLock is true with --no-lock: the Lease was not read, so whether
	// the rollout runs is unknown.
	NoLock bool `json:"noLock,omitempty"`
	// Status is package eviction's status of the rollout
	// (Drainer.RolloutStatus).
	Status *eviction.RolloutStatus `json:"status"`
}

// UncordonResult is the report of "udrain uncordon".
type UncordonResult struct {
	TypeMeta `json:",inline"`
	// Domain is the domain uncordoned.
	Domain string `json:"domain"`
	// Uncordoned are the nodes made schedulable (those that were cordoned
	// or carried udrain's cordon mark).
	Uncordoned []string `json:"uncordoned,omitempty"`
}

// HealthReport is the report of "udrain wait-healthy": the command's
// document (its kind, the domain, the time waited, its error) around the
// library's health.Report.
type HealthReport struct {
	TypeMeta `json:",inline"`
	// Domain is the domain waited for, "" for every domain.
	Domain string `json:"domain,omitempty"`
	// Health is the library's report, package health's (eviction's
	// Drainer.WaitHealthy).
	Health *health.Report `json:"health"`
	// WaitedSeconds is how long the command waited.
	WaitedSeconds float64 `json:"waitedSeconds"`
	// Error is why the wait failed (its timeout passed); absent when it
	// did not.
	Error *ErrorInfo `json:"error,omitempty"`
}

// GPUSummary is the report of "udrain gpu".
type GPUSummary struct {
	TypeMeta `json:",inline"`
	// LabelKey is the node label of the upgrade domains.
	LabelKey string `json:"labelKey"`
	// Domains gives each node's upgrade domain ("" without the label).
	Domains map[string]string `json:"domains"`
	// Summary is package gpu's classification of the nodes, pools,
	// products, problems and device plugin diagnoses.
	Summary gpu.Summary `json:"summary"`
}

// WaitServerResult is the report of "udrain wait-server".
type WaitServerResult struct {
	TypeMeta `json:",inline"`
	// Target is the URL with credentials redacted.
	Target string `json:"target"`
	// Reachable is true when the server answered as asked.
	Reachable bool `json:"reachable"`
	// Attempts counts the attempts made; ElapsedSeconds is how long they
	// took.
	Attempts       int     `json:"attempts"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// StatusCode is the HTTP status of the last answer (0 for tcp:// or
	// none).
	StatusCode int `json:"statusCode"`
	// RemoteAddr is the address that answered last, "" if none did.
	RemoteAddr string `json:"remoteAddr"`
	// FailureClass is the class of the last failure (DNSNotFound,
	// ConnectionRefused, HTTPStatus, ...), "" when reachable; Hint what it
	// usually means.
	FailureClass string `json:"failureClass"`
	Hint         string `json:"hint"`
	// Error is why the wait failed, null when it did not.
	Error *ErrorInfo `json:"error"`
}

// Version is the report of "udrain version".
type Version struct {
	TypeMeta `json:",inline"`
	// Version is the release stamped at build time, else the module
	// version ("(devel)" for a build from a checkout).
	Version string `json:"version"`
	// Commit is the git commit the binary was built from ("-dirty" when
	// the tree had changes), "" when unknown.
	Commit string `json:"commit"`
	// BuildDate is the time of that commit (RFC 3339), "" when unknown.
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}
