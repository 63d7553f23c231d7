package eviction

import (
	"fmt"
	"strings"
	"time"
)

// EmptyDomainError reports a drain asked for without a domain name.
type EmptyDomainError struct{}

func (e *EmptyDomainError) Error() string {
	return "no upgrade domain named: give the value of the domain label of the nodes to drain"
}

// RefusedPodsError reports pods that kubectl drain would refuse to delete
// with the current options. Nothing was cordoned or evicted.
type RefusedPodsError struct {
	Domain string
	Pods   []RefusedPod
	// Messages are kubectl's error lines ("cannot delete Pods with local
	// storage (use --delete-emptydir-data to override): ns/a, ns/b").
	Messages []string
}

func (e *RefusedPodsError) Error() string {
	return fmt.Sprintf("domain %s cannot be drained with these options (nothing was cordoned or evicted): %s",
		e.Domain, strings.Join(e.Messages, "; "))
}

// MultiplePDBsError reports a pod selected by more than one
// PodDisruptionBudget: the Eviction API refuses it (HTTP 500), so the domain
// stops before phase 2.
type MultiplePDBsError struct {
	Namespace string
	Pod       string
	PDBs      []string
}

func (e *MultiplePDBsError) Error() string {
	pdbs := "more than one PodDisruptionBudget"
	if len(e.PDBs) > 0 {
		pdbs = strings.Join(e.PDBs, ", ")
	}
	return fmt.Sprintf("pod %s/%s is selected by several PodDisruptionBudgets (%s), which the Eviction API does not support; narrow the PDB selectors so that one selects it (no pod of phase 2 was touched)",
		e.Namespace, e.Pod, pdbs)
}

// BlockInfo describes a PodDisruptionBudget that refuses evictions.
type BlockInfo struct {
	Namespace          string    `json:"namespace"`
	PDB                string    `json:"pdb"`
	DisruptionsAllowed int32     `json:"disruptionsAllowed"`
	CurrentHealthy     int32     `json:"currentHealthy"`
	DesiredHealthy     int32     `json:"desiredHealthy"`
	ExpectedPods       int32     `json:"expectedPods"`
	Since              time.Time `json:"since"`
	// Pods are the pods waiting on it.
	Pods []string `json:"pods,omitempty"`
	// Message is the API server's explanation, if it gave one.
	Message string `json:"message,omitempty"`
}

func (b BlockInfo) String() string {
	return fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruption(s): %d healthy, %d needed, %d expected",
		b.Namespace, b.PDB, b.DisruptionsAllowed, b.CurrentHealthy, b.DesiredHealthy, b.ExpectedPods)
}

// BlockedError reports a drain that hit its timeout while a
// PodDisruptionBudget refused evictions.
type BlockedError struct {
	Domain string
	Block  BlockInfo
	For    time.Duration
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("draining domain %s timed out after being blocked for %s: %s (pods waiting: %s); the budget frees when the groups it counts are healthy again",
		e.Domain, e.For.Round(time.Second), e.Block, strings.Join(e.Block.Pods, ", "))
}

// TimeoutError reports a drain that hit its timeout for another reason
// than a blocking budget (pods slow to terminate).
type TimeoutError struct {
	Domain  string
	Timeout time.Duration
	// Waiting are the pods not gone yet.
	Waiting []string
	Phase   Phase
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("draining domain %s did not finish within %s (%s; %d pod(s) still there: %s)",
		e.Domain, e.Timeout, e.Phase, len(e.Waiting), strings.Join(abbreviate(e.Waiting, 10), ", "))
}

// EvictionError reports an eviction the API refused for a reason retrying
// cannot fix (e.g. Forbidden).
type EvictionError struct {
	Namespace string
	Pod       string
	Err       error
}

func (e *EvictionError) Error() string {
	return fmt.Sprintf("evicting pod %s/%s: %v", e.Namespace, e.Pod, e.Err)
}

func (e *EvictionError) Unwrap() error { return e.Err }

// NotRecoveredError reports groups that were not healthy again within the
// rollout's recovery timeout.
type NotRecoveredError struct {
	Domain  string
	Timeout time.Duration
	// Waiting says what is still missing, one line per group or PDB.
	Waiting []string
}

func (e *NotRecoveredError) Error() string {
	if e.Timeout <= 0 {
		return fmt.Sprintf("domain %s is not healthy yet: %s", e.Domain, strings.Join(abbreviate(e.Waiting, 10), "; "))
	}
	return fmt.Sprintf("domain %s did not recover within %s: %s", e.Domain, e.Timeout, strings.Join(abbreviate(e.Waiting, 10), "; "))
}

func abbreviate(s []string, max int) []string {
	if len(s) <= max {
		return s
	}
	return append(s[:max:max], fmt.Sprintf("and %d more", len(s)-max))
}

// InProgressError reports a domain that another rollout, or a drain, has
// cordoned and not finished. Nothing was changed.
type InProgressError struct {
	Domain, Node string
	// By is the other rollout's ID ("drain" for a drain); ID this one's.
	By, ID string
}

func (e *InProgressError) Error() string {
	if e.By == "drain" {
		return fmt.Sprintf("node %s of domain %s was cordoned by a udrain drain; uncordon the domain (udrain uncordon %s) or finish that work before rollout %s",
			e.Node, e.Domain, e.Domain, e.ID)
	}
	return fmt.Sprintf("node %s of domain %s is cordoned by rollout %q, which has not finished; resume it (run it again with the same ID) instead of starting rollout %q, or uncordon the domain first",
		e.Node, e.Domain, e.By, e.ID)
}

// PermissionError reports a request the API server refused for lack of
// permission (Forbidden, Unauthorized): a list or watch udrain needs to see
// the cluster, or, checked with dry-run requests before anything changes,
// a cordon or an eviction. Nothing was changed. deploy/rbac/drainer.yaml
// has the role udrain needs.
type PermissionError struct {
	Err error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("udrain is not allowed to do its work (nothing was changed): %v; bind the ClusterRole of deploy/rbac/drainer.yaml to the identity udrain runs as", e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }
