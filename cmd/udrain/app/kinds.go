package app

import (
	"time"
)

// APIVersion is the apiVersion of every report udrain prints with -o json
// or -o yaml. Within one apiVersion, fields are only added, never renamed,
// removed or given another meaning; docs/CLI.md documents each.
const APIVersion = "udrain.dev/v1alpha1"

// The kinds of reports.
const (
	KindDomainList       = "DomainList"
	KindAuditReport      = "AuditReport"
	KindPlan             = "Plan"
	KindDrainResult      = "DrainResult"
	KindRolloutResult    = "RolloutResult"
	KindUncordonResult   = "UncordonResult"
	KindHealthReport     = "HealthReport"
	KindGPUSummary       = "GPUSummary"
	KindWaitServerResult = "WaitServerResult"
	KindVersion          = "Version"
)

// TypeMeta opens every report: which kind it is, in which version.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func typeMeta(kind string) TypeMeta { return TypeMeta{APIVersion: APIVersion, Kind: kind} }

// Lists in reports are never null: an empty list is []. Strings are never
// omitted: an unknown or absent value is "". Durations are seconds (a
// number, to the millisecond) in fields ending in "Seconds"; times are
// RFC 3339 in UTC.

// ErrorInfo says why a command failed, in reports that are printed also on
// failure (DrainResult, RolloutResult, HealthReport, WaitServerResult).
type ErrorInfo struct {
	// Reason is the class of the failure: Usage, Blocked,
	// ContractViolation, Interrupted or Error.
	Reason string `json:"reason"`
	// ExitCode is the process's exit code.
	ExitCode int `json:"exitCode"`
	// Message is the error message.
	Message string `json:"message"`
}

func errorInfo(err error) *ErrorInfo {
	if err == nil {
		return nil
	}
	code := ExitCode(err)
	return &ErrorInfo{Reason: reason(code), ExitCode: code, Message: err.Error()}
}

// DomainList is the report of "udrain domains".
type DomainList struct {
	TypeMeta `json:",inline"`
	// LabelKey is the node label the domains come from.
	LabelKey string `json:"labelKey"`
	// Unlabeled lists nodes without the label (with --unlabeled=skip).
	Unlabeled []string `json:"unlabeled"`
	// Items are the domains in natural order (ud-2 before ud-10).
	Items []DomainInfo `json:"items"`
	// UnscheduledGroups are groups none of whose pods is on a node yet.
	UnscheduledGroups []GroupInfo `json:"unscheduledGroups"`
}

// DomainInfo is one upgrade domain.
type DomainInfo struct {
	Name  string       `json:"name"`
	Nodes []DomainNode `json:"nodes"`
	// CordonedNodes counts the domain's cordoned nodes.
	CordonedNodes int `json:"cordonedNodes"`
	// ControlPlaneNodes counts its control-plane nodes.
	ControlPlaneNodes int `json:"controlPlaneNodes"`
	// Groups are the groups with a pod on the domain's nodes.
	Groups []GroupInfo `json:"groups"`
	// GPUs add up the domain's accelerators per vendor and product.
	GPUs []GPUCount `json:"gpus"`
	// Healthy is true when every group in Groups is healthy.
	Healthy bool `json:"healthy"`
}

// DomainNode is one node of a domain.
type DomainNode struct {
	Name string `json:"name"`
	// Ready is the node's Ready condition.
	Ready bool `json:"ready"`
	// Cordoned is spec.unschedulable; CordonedByUdrain is true when udrain
	// cordoned it (annotation udrain.dev/cordoned-by).
	Cordoned         bool `json:"cordoned"`
	CordonedByUdrain bool `json:"cordonedByUdrain"`
	// UpgradedBy is the ID of the rollout that upgraded the node
	// (annotation udrain.dev/upgraded-by), "" if none.
	UpgradedBy   string `json:"upgradedBy"`
	ControlPlane bool   `json:"controlPlane"`
	// GPUVendor, GPUProduct, GPUs and GPUStatus are package gpu's
	// classification of the node ("", "", 0 and "NotGPU" without GPUs).
	GPUVendor  string `json:"gpuVendor"`
	GPUProduct string `json:"gpuProduct"`
	GPUs       int64  `json:"gpus"`
	GPUStatus  string `json:"gpuStatus"`
}

// GroupInfo is a group of pods that live or die together.
type GroupInfo struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Kind is where the group's identity comes from: LeaderWorkerSet, Ray,
	// Label or PodGroup.
	Kind     string `json:"kind"`
	Workload string `json:"workload"`
	// Leader is the leader pod's name, "" when the group names none or the
	// leader pod does not exist.
	Leader string `json:"leader"`
	// Domains are the domains of its scheduled pods (more than one breaks
	// the pack rule).
	Domains []string `json:"domains"`
	// Size is the expected number of members; Members the pods that exist;
	// ReadyMembers those Running, Ready and not being deleted.
	Size         int `json:"size"`
	Members      int `json:"members"`
	ReadyMembers int `json:"readyMembers"`
	// Healthy is true when the group is whole and every member Ready.
	Healthy bool `json:"healthy"`
	// Reason says why it is not healthy, "" when it is.
	Reason string `json:"reason"`
}

// GPUCount is a number of accelerators of one product.
type GPUCount struct {
	Vendor  string `json:"vendor"`
	Product string `json:"product"`
	GPUs    int64  `json:"gpus"`
	Nodes   int    `json:"nodes"`
}

// AuditReport is the report of "udrain audit".
type AuditReport struct {
	TypeMeta `json:",inline"`
	LabelKey string `json:"labelKey"`
	// Domains are the domains audited.
	Domains []string `json:"domains"`
	// Groups counts the groups found; PDBs the PodDisruptionBudgets.
	Groups int `json:"groups"`
	PDBs   int `json:"pdbs"`
	// Errors and Warnings count the findings by severity. Errors > 0 makes
	// the exit code 4.
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Findings []Finding `json:"findings"`
}

// Finding is one violation of the placement contract.
type Finding struct {
	// Type is the rule: Pack, Spread, UnprotectedLeader, MultiplePDBs,
	// ProtectedWorker or ControlPlaneQuorum.
	Type string `json:"type"`
	// Severity is Error (breaks the contract) or Warning.
	Severity  string   `json:"severity"`
	Namespace string   `json:"namespace"`
	Group     string   `json:"group"`
	Workload  string   `json:"workload"`
	Domains   []string `json:"domains"`
	PDBs      []string `json:"pdbs"`
	Pods      []string `json:"pods"`
	Nodes     []string `json:"nodes"`
	// Message says what is wrong and what to fix.
	Message string `json:"message"`
}

// Plan is the report of "udrain plan": what draining a domain would do.
type Plan struct {
	TypeMeta `json:",inline"`
	Domain   string   `json:"domain"`
	LabelKey string   `json:"labelKey"`
	Nodes    []string `json:"nodes"`
	// CreatedAt is when the cluster state was read.
	CreatedAt time.Time `json:"createdAt"`
	// Executable is true when a drain would start; Problem says why not
	// (refused pods, contract violations, a pod under two PDBs).
	Executable bool       `json:"executable"`
	Problem    *ErrorInfo `json:"problem"`
	// Phases are phase 1 (pods some PDB selects: the leaders, evicted
	// first) and phase 2 (the others, once phase 1 is done).
	Phases []PlanPhase `json:"phases"`
	// Skipped are pods left alone, with kubectl's reasons.
	Skipped []PodReason `json:"skipped"`
	// Refused are pods kubectl drain would refuse with these flags.
	Refused []PodReason `json:"refused"`
	// Warnings are kubectl drain's warnings.
	Warnings []string `json:"warnings"`
	// Blockers are the PDBs that would refuse phase 1 right now.
	Blockers []Blocker `json:"blockers"`
	// Groups are the groups the drain disrupts.
	Groups []AffectedGroup `json:"groups"`
	// GPUs are the accelerators taken out of service.
	GPUs []GPUCount `json:"gpus"`
	// Findings are the contract findings that concern the domain.
	Findings []Finding `json:"findings"`
}

// PlanPhase is one phase of a drain.
type PlanPhase struct {
	Phase int          `json:"phase"`
	Pods  []PlannedPod `json:"pods"`
}

// PlannedPod is a pod a drain evicts.
type PlannedPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node"`
	// PDBs select the pod (more than one cannot be evicted).
	PDBs []string `json:"pdbs"`
	// Group is "namespace/name" of its group, "" if none.
	Group  string `json:"group"`
	Leader bool   `json:"leader"`
	// Terminating pods are only waited for.
	Terminating bool `json:"terminating"`
	// Warning is kubectl's warning for the pod, if any.
	Warning string `json:"warning"`
}

// PodReason is a pod with the reason it is skipped or refused.
type PodReason struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Reason    string `json:"reason"`
}

// Blocker is a PodDisruptionBudget that would refuse phase 1 now.
type Blocker struct {
	Namespace string `json:"namespace"`
	PDB       string `json:"pdb"`
	// Needed is how many disruptions the domain's phase 1 charges to it.
	Needed             int   `json:"needed"`
	DisruptionsAllowed int32 `json:"disruptionsAllowed"`
	CurrentHealthy     int32 `json:"currentHealthy"`
	DesiredHealthy     int32 `json:"desiredHealthy"`
	ExpectedPods       int32 `json:"expectedPods"`
}

// AffectedGroup is a group that loses pods in a drain.
type AffectedGroup struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Workload  string `json:"workload"`
	Leader    string `json:"leader"`
	Size      int    `json:"size"`
	// Evicted counts its pods in the plan.
	Evicted int `json:"evicted"`
	// Healthy says whether it was whole and Ready when planned.
	Healthy bool `json:"healthy"`
}

// DrainResult is the report of "udrain drain".
type DrainResult struct {
	TypeMeta `json:",inline"`
	Domain   string `json:"domain"`
	// DryRun is none, client or server.
	DryRun string `json:"dryRun"`
	// Completed is true when every planned pod is gone (or, in a dry run,
	// was checked).
	Completed bool `json:"completed"`
	// Cordoned are the nodes udrain cordoned now; AlreadyCordoned those
	// cordoned before; NodesGone those deleted during the drain.
	Cordoned        []string `json:"cordoned"`
	AlreadyCordoned []string `json:"alreadyCordoned"`
	NodesGone       []string `json:"nodesGone"`
	Phase1          Phase    `json:"phase1"`
	Phase2          Phase    `json:"phase2"`
	// Skipped and Warnings come from the plan.
	Skipped  []PodReason `json:"skipped"`
	Warnings []string    `json:"warnings"`
	// Blocks are the stretches of time a PDB refused evictions.
	Blocks []Block `json:"blocks"`
	// GroupsDisrupted are "namespace/name" of the groups that lost pods.
	GroupsDisrupted []string `json:"groupsDisrupted"`
	// DryRunOutcomes say, in a dry run, what would happen to each pod.
	DryRunOutcomes  []DryRunOutcome `json:"dryRunOutcomes"`
	Started         time.Time       `json:"started"`
	DurationSeconds float64         `json:"durationSeconds"`
	Summary         Summary         `json:"summary"`
	// Error is why the drain failed, null when it did not.
	Error *ErrorInfo `json:"error"`
}

// Phase counts what happened to one phase's pods.
type Phase struct {
	// Pods is the number the plan put in the phase.
	Pods int `json:"pods"`
	// Evicted counts evictions (or deletions) the API accepted.
	Evicted int `json:"evicted"`
	// AlreadyGone were gone before udrain got to them;
	// AlreadyTerminating were being deleted already.
	AlreadyGone        int     `json:"alreadyGone"`
	AlreadyTerminating int     `json:"alreadyTerminating"`
	DurationSeconds    float64 `json:"durationSeconds"`
}

// Block is a stretch of time a PodDisruptionBudget refused evictions.
type Block struct {
	Namespace       string    `json:"namespace"`
	PDB             string    `json:"pdb"`
	Since           time.Time `json:"since"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Pods are the pods that waited on it.
	Pods []string `json:"pods"`
}

// DryRunOutcome is what a dry run found for one pod.
type DryRunOutcome struct {
	Pod   string `json:"pod"`
	Phase int    `json:"phase"`
	// Outcome is "would evict", "would delete", "blocked by ..." or the
	// API's error.
	Outcome string `json:"outcome"`
}

// Summary is the end-of-run summary of a drain or a rollout.
type Summary struct {
	// DomainsDone counts domains drained (and, in a rollout, upgraded and
	// recovered); DomainsSkipped those an earlier run of the same rollout
	// had done; DomainsTotal those asked for.
	DomainsDone    int `json:"domainsDone"`
	DomainsSkipped int `json:"domainsSkipped"`
	DomainsTotal   int `json:"domainsTotal"`
	// Phase1Evicted and Phase2Evicted count evictions accepted per phase.
	Phase1Evicted int `json:"phase1Evicted"`
	Phase2Evicted int `json:"phase2Evicted"`
	// GroupsDisrupted counts distinct groups that lost pods.
	GroupsDisrupted int `json:"groupsDisrupted"`
	// LongestBlock is the longest time a PDB refused evictions, null if
	// none did.
	LongestBlock    *LongestBlock `json:"longestBlock"`
	DurationSeconds float64       `json:"durationSeconds"`
}

// LongestBlock names the PDB that blocked longest.
type LongestBlock struct {
	Namespace       string  `json:"namespace"`
	PDB             string  `json:"pdb"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// RolloutResult is the report of "udrain rollout".
type RolloutResult struct {
	TypeMeta `json:",inline"`
	// ID names the rollout; running the same command (or --id ID) again
	// resumes it.
	ID string `json:"id"`
	// UpgradeCommand is the shell command run per domain, "" if none.
	UpgradeCommand string `json:"upgradeCommand"`
	LabelKey       string `json:"labelKey"`
	DryRun         string `json:"dryRun"`
	// Completed is true when every domain is done or skipped.
	Completed bool            `json:"completed"`
	Started   time.Time       `json:"started"`
	Domains   []RolloutDomain `json:"domains"`
	// Findings are contract warnings (and errors allowed with
	// --allow-violations) found before the first domain.
	Findings []Finding  `json:"findings"`
	Summary  Summary    `json:"summary"`
	Error    *ErrorInfo `json:"error"`
}

// RolloutDomain is what a rollout did in one domain.
type RolloutDomain struct {
	Domain string `json:"domain"`
	// Status is Done, Skipped (an earlier run with this ID did it), Failed
	// (the rollout stopped here on an error), Interrupted (a signal stopped
	// it here), DryRun, or Pending (not reached).
	Status          string   `json:"status"`
	Phase1          Phase    `json:"phase1"`
	Phase2          Phase    `json:"phase2"`
	Blocks          []Block  `json:"blocks"`
	GroupsDisrupted []string `json:"groupsDisrupted"`
	UpgradeSeconds  float64  `json:"upgradeSeconds"`
	RecoverySeconds float64  `json:"recoverySeconds"`
	DurationSeconds float64  `json:"durationSeconds"`
}

// UncordonResult is the report of "udrain uncordon".
type UncordonResult struct {
	TypeMeta `json:",inline"`
	Domain   string `json:"domain"`
	// Uncordoned are the nodes made schedulable (those that were cordoned
	// or carried udrain's cordon mark).
	Uncordoned []string `json:"uncordoned"`
}

// HealthReport is the report of "udrain wait-healthy".
type HealthReport struct {
	TypeMeta `json:",inline"`
	// Domain is the domain waited for, "" for every domain.
	Domain  string `json:"domain"`
	Healthy bool   `json:"healthy"`
	// WaitedSeconds is how long the command waited.
	WaitedSeconds float64 `json:"waitedSeconds"`
	// Groups are the groups that count (see docs/CLI.md), PDBs the budgets
	// over their leaders.
	Groups []GroupInfo `json:"groups"`
	PDBs   []PDBHealth `json:"pdbs"`
	// Waiting says what is not healthy yet, one line each; empty when
	// Healthy.
	Waiting []string   `json:"waiting"`
	Error   *ErrorInfo `json:"error"`
}

// PDBHealth is a PodDisruptionBudget over leaders and whether it is in
// deficit.
type PDBHealth struct {
	Namespace          string `json:"namespace"`
	Name               string `json:"name"`
	DisruptionsAllowed int32  `json:"disruptionsAllowed"`
	CurrentHealthy     int32  `json:"currentHealthy"`
	DesiredHealthy     int32  `json:"desiredHealthy"`
	ExpectedPods       int32  `json:"expectedPods"`
	// Healthy is true when the status is current, not below its desired
	// healthy count, and not behind the Ready pods it selects.
	Healthy bool   `json:"healthy"`
	Reason  string `json:"reason"`
}

// GPUSummary is the report of "udrain gpu".
type GPUSummary struct {
	TypeMeta `json:",inline"`
	LabelKey string    `json:"labelKey"`
	Nodes    []GPUNode `json:"nodes"`
	// Pools are always dedicated-gpu, shared-gpu and cpu, in that order.
	Pools    []GPUPool    `json:"pools"`
	Products []GPUProduct `json:"products"`
	// Statuses counts nodes per status (Ready, Degraded, Pending,
	// ResourceMissing, NodeNotReady, Unlabeled, NotGPU).
	Statuses map[string]int `json:"statuses"`
	// Problems are every warning and error, node by node.
	Problems []GPUProblem `json:"problems"`
	// DevicePlugins are the device plugin DaemonSets checked against the
	// GPU nodes that do not advertise their resource.
	DevicePlugins []GPUDiagnosis `json:"devicePlugins"`
}

// GPUNode is the classification of one node.
type GPUNode struct {
	Node string `json:"node"`
	// Domain is the node's upgrade domain, "" if it has no label.
	Domain    string `json:"domain"`
	GPU       bool   `json:"gpu"`
	Vendor    string `json:"vendor"`
	Product   string `json:"product"`
	Count     int64  `json:"count"`
	MemoryMiB int64  `json:"memoryMiB"`
	// Resource is the extended resource; Capacity and Allocatable its
	// amounts.
	Resource    string `json:"resource"`
	Capacity    int64  `json:"capacity"`
	Allocatable int64  `json:"allocatable"`
	// Sharing is none, time-slicing or mps; Replicas pods per device.
	Sharing     string `json:"sharing"`
	Replicas    int64  `json:"replicas"`
	MIGStrategy string `json:"migStrategy"`
	// Dedicated is true when a taint reserves the node.
	Dedicated     bool   `json:"dedicated"`
	NodeReady     bool   `json:"nodeReady"`
	Unschedulable bool   `json:"unschedulable"`
	Status        string `json:"status"`
}

// GPUPool is a set of nodes of one kind.
type GPUPool struct {
	Kind           string `json:"kind"`
	Nodes          int    `json:"nodes"`
	GPUs           int64  `json:"gpus"`
	AdvertisedGPUs int64  `json:"advertisedGPUs"`
	ProblemNodes   int    `json:"problemNodes"`
}

// GPUProduct adds up the nodes of one product.
type GPUProduct struct {
	Vendor         string `json:"vendor"`
	Product        string `json:"product"`
	Nodes          int    `json:"nodes"`
	GPUs           int64  `json:"gpus"`
	AdvertisedGPUs int64  `json:"advertisedGPUs"`
	MemoryMiB      int64  `json:"memoryMiB"`
}

// GPUProblem is a finding that needs action.
type GPUProblem struct {
	Node string `json:"node"`
	// DaemonSet is "namespace/name" of the device plugin involved, "" for
	// findings about the node itself.
	DaemonSet string `json:"daemonSet"`
	// Code is package gpu's stable finding code (ResourceMissing,
	// UntoleratedTaint, ...).
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Key      string `json:"key"`
	Value    string `json:"value"`
	// Fix is a command or snippet that resolves it, "" if none is obvious.
	Fix string `json:"fix"`
}

// GPUDiagnosis says whether a device plugin DaemonSet can run on a node.
type GPUDiagnosis struct {
	DaemonSet   string `json:"daemonSet"`
	Node        string `json:"node"`
	Vendor      string `json:"vendor"`
	SelectsNode bool   `json:"selectsNode"`
	CanRun      bool   `json:"canRun"`
	// UntoleratedTaints are "key=value:Effect".
	UntoleratedTaints []string `json:"untoleratedTaints"`
	Fix               string   `json:"fix"`
}

// WaitServerResult is the report of "udrain wait-server".
type WaitServerResult struct {
	TypeMeta `json:",inline"`
	// Target is the URL with credentials redacted.
	Target         string  `json:"target"`
	Reachable      bool    `json:"reachable"`
	Attempts       int     `json:"attempts"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// StatusCode is the HTTP status of the last answer (0 for tcp:// or
	// none).
	StatusCode int    `json:"statusCode"`
	RemoteAddr string `json:"remoteAddr"`
	// FailureClass is the class of the last failure (DNSNotFound,
	// ConnectionRefused, HTTPStatus, ...), "" when reachable; Hint what it
	// usually means.
	FailureClass string     `json:"failureClass"`
	Hint         string     `json:"hint"`
	Error        *ErrorInfo `json:"error"`
}

// Version is the report of "udrain version".
type Version struct {
	TypeMeta  `json:",inline"`
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// orEmpty turns a nil slice into an empty one, so that JSON shows [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
