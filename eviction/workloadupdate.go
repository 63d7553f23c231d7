package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/udrain/udrain/topology"
)

// LeaderWorkerSetResource is the LeaderWorkerSet resource a rollout reads
// (get; see RolloutOptions.IgnoreWorkloadUpdates): a LeaderWorkerSet
// rolls its groups to a new template by deleting their pods itself,
// without the Eviction API, so no budget stops it.
var LeaderWorkerSetResource = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// DefaultWorkloadUpdateInterval is how often a domain that waits for
// workloads' updates reads them again (RolloutOptions.WorkloadUpdateInterval).
const DefaultWorkloadUpdateInterval = 2 * time.Second

// WorkloadUpdate is a workload with a group on a domain that rolls out an
// update of its own, as its status says.
type WorkloadUpdate struct {
	// Kind is the workload's kind ("LeaderWorkerSet").
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Replicas is the groups it wants (spec.replicas); Updated and Ready
	// those its status counts updated and ready.
	Replicas int `json:"replicas"`
	Updated  int `json:"updated"`
	Ready    int `json:"ready"`
	// Partition is its rolling update's partition: groups below it are
	// not updated.
	Partition int `json:"partition,omitempty"`
	// Unobserved is true when its controller has not yet looked at its
	// latest spec (observedGeneration behind generation): an update may be
	// about to start. Is the controller running?
	Unobserved bool `json:"unobserved,omitempty"`
	// Since is when its UpdateInProgress condition turned True.
	Since *time.Time `json:"since,omitempty"`
}

// String describes the update, e.g. "LeaderWorkerSet ns/llm rolls out an
// update: 1 of 3 groups updated, 2 ready".
func (u WorkloadUpdate) String() string {
	if u.Unobserved {
		return fmt.Sprintf("%s %s/%s has a spec its controller has not looked at yet (is the LeaderWorkerSet controller running?)", u.Kind, u.Namespace, u.Name)
	}
	s := fmt.Sprintf("%s %s/%s rolls out an update: %d of %d groups updated, %d ready", u.Kind, u.Namespace, u.Name, u.Updated, u.Replicas, u.Ready)
	if u.Partition > 0 {
		s += fmt.Sprintf(" (partition %d)", u.Partition)
	}
	return s
}

// waitForWorkloadUpdates is what rollout opts.ID calls before it cordons
// domain: it returns once no workload with a group on the domain rolls out
// an update of its own (see RolloutOptions.IgnoreWorkloadUpdates), at once
// when none does or the rollout upgraded the domain already (it skips it).
// A dry run reports the updates and does not wait.
func (d *Drainer) waitForWorkloadUpdates(ctx context.Context, v *view, domain string, opts RolloutOptions, emit func(Event)) error {
	if opts.IgnoreWorkloadUpdates {
		return nil
	}
	id := opts.ID
	if layout, err := topology.BuildLayout(v.NodeList(), d.s.layoutOptions()); err == nil {
		if dom, err := layout.Domain(domain); err == nil && upgradedBy(v.NodeList(), dom, id) {
			return nil
		}
	}
	logger := klog.FromContext(ctx)
	clk := d.s.Clock
	start := clk.Now()
	var shown string
	waited := false
	for {
		updates, problems := d.workloadUpdates(ctx, workloadsOn(v, d.s, domain))
		msg := updatesMessage(updates, problems)
		if len(updates) == 0 {
			if waited {
				logger.Info("Workload updates done; starting the domain", "domain", domain, "waited", clk.Since(start).Round(time.Millisecond))
				emit(Event{Type: EventWorkloadUpdated, Message: fmt.Sprintf("no workload on the domain rolls out an update any more; waited %s", clk.Since(start).Round(time.Millisecond))})
			} else if len(problems) > 0 && msg != shown {
				emit(Event{Type: EventWorkloadUpdating, Message: msg})
			}
			return nil
		}
		if msg != shown {
			shown = msg
			logger.Info("Waiting for workloads to finish their own update before cordoning the domain", "domain", domain, "updates", msg)
			emit(Event{Type: EventWorkloadUpdating, Updates: updates, Message: msg})
		}
		if d.s.dryRun != cmdutil.DryRunNone {
			return nil
		}
		waited = true
		if opts.WorkloadUpdateTimeout > 0 && clk.Since(start) >= opts.WorkloadUpdateTimeout {
			return &RetryError{Reason: ReasonWorkloadUpdating, Domain: domain, Updates: updates, Waited: clk.Since(start)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(opts.WorkloadUpdateInterval):
		}
	}
}

// updatesMessage is the message of an EventWorkloadUpdating.
func updatesMessage(updates []WorkloadUpdate, problems []string) string {
	var parts []string
	for _, u := range updates {
		parts = append(parts, u.String())
	}
	msg := ""
	if len(parts) > 0 {
		msg = "not cordoning the domain while a workload on it rolls out its own update (it deletes groups through no budget): " + strings.Join(parts, "; ")
	}
	if len(problems) > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += "not waited for, unread: " + strings.Join(problems, "; ")
	}
	return msg
}

// workloadRef names a workload by namespace and name.
type workloadRef struct{ namespace, name string }

// workloadsOn returns the LeaderWorkerSets with a pod on the nodes of
// domain, sorted.
func workloadsOn(v *view, s *settings, domain string) []workloadRef {
	layout, err := topology.BuildLayout(v.NodeList(), s.layoutOptions())
	if err != nil {
		return nil // the plan says what is wrong
	}
	dom, err := layout.Domain(domain)
	if err != nil {
		return nil
	}
	pods, ok := v.PlanPods(dom.Nodes, nil)
	if !ok {
		pods = v.AllPods()
	}
	return lwsOf(pods, dom.Nodes)
}

// lwsOf returns the LeaderWorkerSets (by their name label) of the pods
// bound to nodes, sorted.
func lwsOf(pods []*corev1.Pod, nodes []string) []workloadRef {
	on := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		on[n] = true
	}
	seen := map[workloadRef]bool{}
	var out []workloadRef
	for _, p := range pods {
		name := p.Labels[topology.LWSNameLabel]
		if name == "" || !on[p.Spec.NodeName] {
			continue
		}
		ref := workloadRef{p.Namespace, name}
		if !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	slices.SortFunc(out, func(a, b workloadRef) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// workloadUpdates reads the workloads and returns those that roll out an
// update, and what could not be read (not waited for).
func (d *Drainer) workloadUpdates(ctx context.Context, refs []workloadRef) (updates []WorkloadUpdate, problems []string) {
	for _, ref := range refs {
		obj, err := d.readLeaderWorkerSet(ctx, ref)
		switch {
		case apierrors.IsNotFound(err):
			continue // LWS's labels without a LeaderWorkerSet
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			problems = append(problems, fmt.Sprintf("LeaderWorkerSet %s/%s: forbidden; grant get on %s to wait for its updates", ref.namespace, ref.name, LeaderWorkerSetResource.GroupResource()))
			continue
		case errors.Is(err, errNoRESTClient):
			klog.FromContext(ctx).V(1).Info("Cannot read LeaderWorkerSets: the clientset has no REST client (a fake?); not waiting for their updates", "leaderWorkerSet", ref.namespace+"/"+ref.name)
			continue
		case err != nil:
			problems = append(problems, fmt.Sprintf("LeaderWorkerSet %s/%s: %v", ref.namespace, ref.name, err))
			continue
		}
		if u, ok := obj.update(); ok {
			updates = append(updates, u)
		}
	}
	return updates, problems
}

// lwsUpdateInProgress is LeaderWorkerSet's condition of a rolling update.
const lwsUpdateInProgress = "UpdateInProgress"

// update says whether the LeaderWorkerSet rolls out an update: its
// UpdateInProgress condition is True, or its controller has not observed
// its latest generation.
func (o *lwsObject) update() (WorkloadUpdate, bool) {
	u := WorkloadUpdate{Kind: "LeaderWorkerSet", Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, Replicas: 1,
		Updated: int(o.Status.UpdatedReplicas), Ready: int(o.Status.ReadyReplicas)}
	if o.Spec.Replicas != nil {
		u.Replicas = int(*o.Spec.Replicas)
	}
	if ru := o.Spec.RolloutStrategy.RollingUpdateConfiguration; ru != nil && ru.Partition != nil {
		u.Partition = int(*ru.Partition)
	}
	u.Unobserved = o.Status.ObservedGeneration < o.Metadata.Generation
	updating := false
	for _, c := range o.Status.Conditions {
		if c.Type == lwsUpdateInProgress && c.Status == metav1.ConditionTrue {
			updating = true
			since := c.LastTransitionTime.Time
			u.Since = &since
		}
	}
	return u, updating || u.Unobserved
}

// updating (of a rollout status) returns the workloads with a pod among
// pods on dom that roll out an update of their own, reading each once per
// status.
func (s *statusReader) updating(pods []*corev1.Pod, dom topology.Domain) []WorkloadUpdate {
	if s.ignoreUpdates {
		return nil
	}
	if s.updates == nil {
		s.updates = map[workloadRef]*WorkloadUpdate{}
	}
	var out []WorkloadUpdate
	for _, ref := range lwsOf(pods, dom.Nodes) {
		u, seen := s.updates[ref]
		if !seen {
			updates, _ := s.d.workloadUpdates(s.ctx, []workloadRef{ref})
			if len(updates) == 1 {
				u = &updates[0]
			}
			s.updates[ref] = u
		}
		if u != nil {
			out = append(out, *u)
		}
	}
	return out
}
