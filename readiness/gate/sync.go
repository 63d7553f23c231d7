package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/topology"
)

// syncResult says what one reconcile of a group did.
type syncResult int

const (
	syncNoGroup     syncResult = iota // no pod of the group is left
	syncNoLeader                      // the group has no leader pod now
	syncNoGate                        // the leader does not declare the gate: left alone
	syncUnchanged                     // the leader's condition is already right
	syncWritten                       // the leader's condition was written
	syncLeaderGoing                   // the leader is terminating and already not ready: left alone
	syncDeferred                      // a new message of a False condition waits for FalseRewriteInterval
)

func (r syncResult) String() string {
	return [...]string{"no group", "no leader", "no gate", "unchanged", "written", "leader terminating", "deferred"}[r]
}

// sync makes the condition of group id's leader match the group's pods in
// the informer cache.
func (c *Controller) sync(ctx context.Context, id topology.GroupID) (syncResult, error) {
	logger := klog.FromContext(ctx)
	objs, err := c.pods.GetIndexer().ByIndex(c.index, groupKey(id))
	if err != nil {
		return syncNoGroup, err
	}
	// The cache's pods are shared: read them, never change them.
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	var group *topology.Group
	groups := topology.FindGroups(pods, c.opts.Groupers...)
	for i := range groups {
		if groups[i].ID == id {
			group = &groups[i]
		}
	}
	switch {
	case group == nil:
		return syncNoGroup, nil
	case group.Leader == nil:
		logger.V(4).Info("Group has no leader pod; nothing to write to")
		return syncNoLeader, nil
	case !DeclaresGate(group.Leader):
		logger.V(4).Info("Leader does not declare the readiness gate; leaving it alone", "leader", group.Leader.Name, "conditionType", ConditionType)
		return syncNoGate, nil
	}

	leader := group.Leader
	current := CurrentCondition(leader)
	if leader.DeletionTimestamp != nil && current != nil && current.Status == corev1.ConditionFalse {
		// A terminating leader counts for no budget and serves no more
		// traffic: once its condition says not ready, rewriting the
		// message as each member goes is a write per member for nothing.
		logger.V(4).Info("Leader is terminating and already not ready; leaving it alone", "leader", leader.Name)
		return syncLeaderGoing, nil
	}
	now := c.opts.Clock.Now()
	desired := ConditionFor(group, now)
	if current != nil && current.Status == desired.Status {
		if current.Reason == desired.Reason && current.Message == desired.Message {
			return syncUnchanged, nil
		}
		desired.LastTransitionTime = current.LastTransitionTime
		// A group that stays unready changes its message with every pod
		// event of its recovery (a member scheduled, running, ready):
		// write those at most every FalseRewriteInterval. Turning True or
		// False is written at once.
		if wait := c.rewriteWait(current, desired, now); wait > 0 {
			c.enqueueAfter(id, wait)
			return syncDeferred, nil
		}
	}
	desired.LastProbeTime = metav1.NewTime(now)
	if err := c.patchCondition(ctx, leader, desired); err != nil {
		if apierrors.IsNotFound(err) {
			// The leader is gone; its deletion event brings the group back.
			return syncNoLeader, nil
		}
		return syncUnchanged, err
	}
	var previous *corev1.PodCondition
	if current != nil {
		previous = current.DeepCopy()
	}
	logger.V(2).Info("Set the leader's condition", "leader", leader.Name, "status", desired.Status, "reason", desired.Reason, "message", desired.Message)
	if c.opts.OnChange != nil {
		c.changeMu.Lock()
		c.opts.OnChange(Change{Group: id, Leader: leader.Name, Previous: previous, Condition: desired})
		c.changeMu.Unlock()
	}
	return syncWritten, nil
}

// rewriteWait is how long a rewrite of a False condition with a new
// message waits: until FalseRewriteInterval after the last write
// (LastProbeTime, which every write sets); zero for any other change, a
// condition written without the time, or no interval.
func (c *Controller) rewriteWait(current *corev1.PodCondition, desired corev1.PodCondition, now time.Time) time.Duration {
	every := c.opts.FalseRewriteInterval
	if every <= 0 || current.Status != corev1.ConditionFalse || desired.Status != corev1.ConditionFalse || current.LastProbeTime.IsZero() {
		return 0
	}
	return current.LastProbeTime.Add(every).Sub(now)
}

// patchCondition writes cond to the leader's status with a strategic merge
// patch of that one condition (conditions merge by type, so the kubelet's
// own are untouched). A True condition carries the resourceVersion the
// decision was made on: if the pod changed since (another writer, a kubelet
// update, a new pod of the same name), the API server answers Conflict and
// the group is reconciled again from the newer state, so that a group is
// never declared whole on a stale view. A False one does not: the
// controller is the condition's only writer and reads its pods in order,
// so a False it writes is never older than what it wrote before, and a
// False that lands on a newer pod of the same name (a recreated leader)
// only holds it unready until the next reconcile, the safe side. On real
// LeaderWorkerSets the precondition made about a third of all patches
// fail with 409 (the kubelet, here kwok, updates a recreated leader's
// status while its group is down), each a retry with back-off.
func (c *Controller) patchCondition(ctx context.Context, leader *corev1.Pod, cond corev1.PodCondition) error {
	patch := conditionPatch{Status: conditionPatchStatus{Conditions: []corev1.PodCondition{cond}}}
	if leader.ResourceVersion != "" && cond.Status == corev1.ConditionTrue {
		patch.Metadata = &conditionPatchMetadata{ResourceVersion: leader.ResourceVersion}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode the condition patch of pod %s/%s: %w", leader.Namespace, leader.Name, err)
	}
	_, err = c.client.CoreV1().Pods(leader.Namespace).Patch(ctx, leader.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch the %s condition of pod %s/%s: %w", ConditionType, leader.Namespace, leader.Name, err)
	}
	return nil
}

type conditionPatch struct {
	Metadata *conditionPatchMetadata `json:"metadata,omitempty"`
	Status   conditionPatchStatus    `json:"status"`
}

type conditionPatchMetadata struct {
	ResourceVersion string `json:"resourceVersion"`
}

type conditionPatchStatus struct {
	Conditions []corev1.PodCondition `json:"conditions"`
}
