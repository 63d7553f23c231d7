package eviction

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/kubeclient"
	"github.com/udrain/udrain/topology"
)

// errorGroup says which group an error of the package belongs to.
type errorGroup string

const (
	cluster    errorGroup = "ClusterError"
	permission errorGroup = "PermissionError"
	retry      errorGroup = "RetryError"
)

// groupTarget is an errors.Is target of group g with reason r.
func groupTarget(g errorGroup, r ErrorReason) error {
	switch g {
	case cluster:
		return &ClusterError{Reason: r}
	case permission:
		return &PermissionError{Reason: r}
	}
	return &RetryError{Reason: r}
}

// Each error of the package is one of three groups, with a Reason: inside
// a DomainError (and wrapped once more), errors.As finds its group,
// errors.Is its group and reason (and neither another reason nor another
// group), and its message is the text the type it replaced wrote (the
// texts are those of 1d2dd32's BlockedError, RefusedPodsError, ...).
func TestErrorGroups(t *testing.T) {
	pod := topology.PodRef{Namespace: "ns", Name: "llm-0"}
	renewed := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	block := &BlockInfo{BudgetRef: health.BudgetRef{Namespace: "ns", PDB: "llm-leaders"},
		BudgetCounts: health.BudgetCounts{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}}
	group := topology.GroupID{Namespace: "ns", Name: "llm-0"}
	tests := []struct {
		name   string
		err    error
		group  errorGroup
		reason ErrorReason
		want   string
	}{
		{"refused pods", &ClusterError{Reason: ReasonRefusedPods, Messages: []string{"cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/a, ns/b"}},
			cluster, ReasonRefusedPods,
			"pods cannot be drained with these options (nothing was cordoned or evicted): cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/a, ns/b"},
		{"multiple PDBs", &ClusterError{Reason: ReasonMultiplePDBs, Pod: pod, PDBs: []string{"a", "b"}}, cluster, ReasonMultiplePDBs,
			"pod ns/llm-0 is selected by several PodDisruptionBudgets (a, b), which the Eviction API does not support; narrow the PDB selectors so that one selects it (no pod of phase 2 was touched)"},
		{"multiple PDBs, unnamed", &ClusterError{Reason: ReasonMultiplePDBs, Pod: pod}, cluster, ReasonMultiplePDBs,
			"pod ns/llm-0 is selected by several PodDisruptionBudgets (more than one PodDisruptionBudget), which the Eviction API does not support; narrow the PDB selectors so that one selects it (no pod of phase 2 was touched)"},
		{"GPUs lost", &ClusterError{Reason: ReasonGPUsLost, Domain: "ud-1", Waited: 5 * time.Minute, Losses: []gpu.Loss{{Node: "n1", Resource: "nvidia.com/gpu", Before: 8}}},
			cluster, ReasonGPUsLost,
			"1 GPU node(s) came back from the upgrade without their GPUs after 5m0s: node n1 advertises 0 nvidia.com/gpu, had 8; fix the driver or the device plugin, then run the rollout again"},
		{"stuck", &ClusterError{Reason: ReasonStuck, Domain: "ud-1", Waited: 2 * time.Minute, Groups: []health.GroupStatus{
			{ID: group, Problems: []health.MemberStatus{
				{Name: "llm-0", Reason: health.ReasonMemberNotRunning, Detail: "container vllm waiting: ImagePullBackOff", Waiting: "ImagePullBackOff"},
				{Name: "llm-0-1", Reason: health.ReasonMemberNotRunning, Detail: "container vllm waiting: ImagePullBackOff", Waiting: "ImagePullBackOff"},
				{Name: "llm-0-2", Reason: health.ReasonMemberNotRunning, Detail: "MountVolume.SetUp failed", Waiting: "FailedMount"}}},
			{ID: topology.GroupID{Namespace: "ns", Name: "llm-1"}, Problems: []health.MemberStatus{
				{Name: "llm-1-1", Reason: health.ReasonMemberNotRunning, Detail: "container vllm waiting: ErrImagePull", Waiting: "ErrImagePull"}}}}},
			cluster, ReasonStuck,
			"2 pod(s) of group ns/llm-0 cannot start: ImagePullBackOff (llm-0, llm-0-1); 1 pod(s) of group ns/llm-0 cannot start: FailedMount (llm-0-2): MountVolume.SetUp failed; " +
				"1 pod(s) of group ns/llm-1 cannot start: ErrImagePull (llm-1-1) (the first for 2m0s or longer)"},
		{"no lock namespace", &ClusterError{Reason: ReasonNoLockNamespace, Namespace: "udrain-system", Lease: "udrain-rollout-r", Err: errors.New(`namespaces "udrain-system" not found`)},
			cluster, ReasonNoLockNamespace,
			`taking the rollout's Lease udrain-system/udrain-rollout-r: the namespace does not exist: namespaces "udrain-system" not found`},
		{"forbidden", &PermissionError{Reason: ReasonForbidden, Err: errors.New(`nodes is forbidden`)}, permission, ReasonForbidden,
			"udrain is not allowed to do its work (nothing was changed): nodes is forbidden; bind the ClusterRole udrain-drainer of deploy/rbac/drainer.yaml to the identity udrain runs as"},
		{"forbidden, with the role", &PermissionError{Reason: ReasonForbidden, Err: errors.New(`leases is forbidden`), Role: "the Role udrain-rollout-lock (namespace udrain-system)"},
			permission, ReasonForbidden,
			"udrain is not allowed to do its work (nothing was changed): leases is forbidden; bind the Role udrain-rollout-lock (namespace udrain-system) of deploy/rbac/drainer.yaml to the identity udrain runs as"},
		{"forbidden eviction", &PermissionError{Reason: ReasonForbidden, Pod: pod, Err: errors.New("RBAC: not allowed")}, permission, ReasonForbidden,
			"evicting pod ns/llm-0: RBAC: not allowed"},
		{"denied", &PermissionError{Reason: ReasonDenied, Pod: pod, Webhook: "evictions.example.com", Message: "busy", Attempts: 3}, permission, ReasonDenied,
			`the eviction of pod ns/llm-0 was denied by admission webhook "evictions.example.com" on 3 attempt(s): busy; fix what it objects to (or the webhook), then run it again`},
		{"denied, dry run", &PermissionError{Reason: ReasonDenied, Pod: pod, Webhook: "evictions.example.com", Message: "busy", Attempts: 1, DryRun: true}, permission, ReasonDenied,
			`the dry run of the eviction of pod ns/llm-0 was denied by admission webhook "evictions.example.com" (nothing was changed): busy; fix what it objects to (or the webhook), then run it again`},
		{"webhook failed", &PermissionError{Reason: ReasonWebhookFailed, Pod: pod, Message: "context deadline exceeded", Attempts: 3}, permission, ReasonWebhookFailed,
			"the eviction of pod ns/llm-0 could not be checked by an admission webhook on 3 attempt(s): context deadline exceeded; fix what it objects to (or the webhook), then run it again"},
		{"blocked", &RetryError{Reason: ReasonBlocked, Block: block}, retry, ReasonBlocked,
			"PodDisruptionBudget ns/llm-leaders allows 0 disruption(s): 1 healthy, 1 needed, 2 expected; the budget frees when the groups it counts are healthy again"},
		{"unreachable", &RetryError{Reason: ReasonUnreachable, Server: "https://127.0.0.1:1", Problem: kubeclient.ServerRefused, Waited: 500 * time.Millisecond, Err: errors.New("dial tcp: connection refused")},
			retry, ReasonUnreachable,
			"cannot reach https://127.0.0.1:1: connection refused (nothing was changed; gave up after 500ms): dial tcp: connection refused"},
		{"unreachable, throttled", &RetryError{Reason: ReasonUnreachable, Server: "https://10.0.0.1:6443", Problem: kubeclient.ServerThrottled, Status: 429, Waited: time.Second, Err: errors.New("too many requests")},
			retry, ReasonUnreachable,
			"the API server https://10.0.0.1:6443 throttles every request (429 Too Many Requests) (nothing was changed; gave up after 1s): too many requests"},
		{"unreachable, a write unanswered", &RetryError{Reason: ReasonUnreachable, Server: "https://10.0.0.1:6443", Problem: kubeclient.ServerNoAnswer, Write: "the eviction of ns/llm-0", Waited: 30 * time.Second, Err: context.DeadlineExceeded},
			retry, ReasonUnreachable,
			"the API server https://10.0.0.1:6443 did not answer the eviction of ns/llm-0 (gave up after 30s): context deadline exceeded"},
		{"not synced", &RetryError{Reason: ReasonNotSynced, Waited: 15 * time.Second}, retry, ReasonNotSynced,
			"the informers of Options.Informers did not sync within 15s: start them (factory.Start, or the manager's cache) before calling, and check that they may list and watch nodes, pods, PodDisruptionBudgets and DaemonSets"},
		{"not healthy", &RetryError{Reason: ReasonNotHealthy, Domains: []string{"ud-1", "ud-2"}, Waited: 300 * time.Millisecond, Report: &health.Report{Unscheduled: []health.GroupStatus{{ID: group, Message: "0/2 members scheduled"}}}, Err: context.DeadlineExceeded},
			retry, ReasonNotHealthy,
			"domains ud-1, ud-2 not healthy after 300ms (context deadline exceeded): unscheduled: group ns/llm-0: 0/2 members scheduled"},
		{"locked", &RetryError{Reason: ReasonLocked, ID: "r", Namespace: "udrain-system", Lease: "udrain-rollout-r", Holder: "other", RenewedAt: renewed, LockDuration: 30 * time.Second, RetryAfter: 20 * time.Second},
			retry, ReasonLocked,
			`rollout r is running elsewhere: Lease udrain-system/udrain-rollout-r is held by "other", renewed at 2026-12-01T08:00:00Z (it expires 30s after its last renewal); wait for that rollout to end, or stop it; nothing was changed`},
		{"lock lost", &RetryError{Reason: ReasonLockLost, ID: "r", Namespace: "udrain-system", Lease: "udrain-rollout-r", Err: errors.New(`another holder took it over (held by "b")`)},
			retry, ReasonLockLost,
			`rollout r lost its Lease udrain-system/udrain-rollout-r and stopped: another holder took it over (held by "b")`},
		{"in progress", &RetryError{Reason: ReasonInProgress, Domain: "ud-1", Node: "n1", By: "maint-42", ID: "r"}, retry, ReasonInProgress,
			`node n1 of domain ud-1 is cordoned by "maint-42", which has not finished (this is "r")`},
		{"workload updating", &RetryError{Reason: ReasonWorkloadUpdating, Domain: "ud-1", Waited: 1500 * time.Millisecond,
			Updates: []WorkloadUpdate{{Kind: "LeaderWorkerSet", Namespace: "ns", Name: "llm", Replicas: 3, Updated: 1, Ready: 2}}},
			retry, ReasonWorkloadUpdating,
			"domain ud-1 not started after waiting 1.5s for workloads with a group on it to finish their own update (it deletes groups through no budget): LeaderWorkerSet ns/llm rolls out an update: 1 of 3 groups updated, 2 ready"},
	}
	type found struct {
		Message              string
		Group                errorGroup
		Reason               ErrorReason
		IsReason, IsAnyOfIts bool
		IsOtherReason        bool
		IsOtherGroup         bool
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := fmt.Errorf("rollout: %w", &DomainError{ID: "r", Domain: "ud-1", Stage: StagePhase1, Err: fmt.Errorf("step: %w", tc.err)})
			got := found{Message: tc.err.Error(), IsReason: errors.Is(err, groupTarget(tc.group, tc.reason)),
				IsAnyOfIts: errors.Is(err, groupTarget(tc.group, "")), IsOtherReason: errors.Is(err, groupTarget(tc.group, "Other"))}
			var (
				c *ClusterError
				p *PermissionError
				r *RetryError
			)
			switch {
			case errors.As(err, &c):
				got.Group, got.Reason = cluster, c.Reason
			case errors.As(err, &p):
				got.Group, got.Reason = permission, p.Reason
			case errors.As(err, &r):
				got.Group, got.Reason = retry, r.Reason
			}
			for _, g := range []errorGroup{cluster, permission, retry} {
				if g != tc.group && errors.Is(err, groupTarget(g, tc.reason)) {
					got.IsOtherGroup = true
				}
			}
			want := found{Message: tc.want, Group: tc.group, Reason: tc.reason, IsReason: true, IsAnyOfIts: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A DomainError that stopped while a budget blocked holds a Blocked
// RetryError beside its cause: errors.As finds the cause first when it is
// a RetryError too, errors.Is finds the block anywhere, and so does
// asReason (errtree.Find).
func TestBlockedBesideAnotherRetryError(t *testing.T) {
	block := &BlockInfo{BudgetRef: health.BudgetRef{Namespace: "ns", PDB: "llm-leaders"}}
	unreachable := &RetryError{Reason: ReasonUnreachable, Problem: kubeclient.ServerNoAnswer, Err: context.DeadlineExceeded}
	err := error(&DomainError{ID: "r", Domain: "ud-1", Stage: StagePhase1, Block: block, Err: unreachable})
	var first, blocked *RetryError
	type got struct {
		First, Blocked ErrorReason
		Block          *BlockInfo
		IsBlocked      bool
	}
	g := got{IsBlocked: errors.Is(err, &RetryError{Reason: ReasonBlocked})}
	if errors.As(err, &first) {
		g.First = first.Reason
	}
	if asReason(err, &blocked, ReasonBlocked) {
		g.Blocked, g.Block = blocked.Reason, blocked.Block
	}
	if diff := cmp.Diff(got{First: ReasonUnreachable, Blocked: ReasonBlocked, Block: block, IsBlocked: true}, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
