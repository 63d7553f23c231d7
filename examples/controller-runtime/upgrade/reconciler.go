package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// DefaultRetryAfter is how long a failed rollout waits before it is tried
// again (and resumes), when Options.RetryAfter is zero.
const DefaultRetryAfter = time.Minute

// UpgradeFunc is the platform's own upgrade step for a drained domain,
// run after its nodes are labelled with the target version: wait for a
// node agent, call an upgrade service...
type UpgradeFunc func(ctx context.Context, dom topology.Domain, req Request) error

// Options configure a Reconciler.
type Options struct {
	// Drainer are the drain settings (Helper, DomainLabel, ...);
	// Informers and OnEvent are the reconciler's.
	Drainer eviction.Options
	// Upgrade, if set, runs after the domain's nodes are labelled.
	Upgrade UpgradeFunc
	// RecoveryTimeout bounds the wait for a domain's groups to be healthy
	// again; zero means no limit.
	RecoveryTimeout time.Duration
	// RetryAfter is how long a failed rollout waits before it is tried
	// again; zero means DefaultRetryAfter.
	RetryAfter time.Duration
}

// Reconciler reconciles upgrade requests (ConfigMaps labelled
// RequestLabel) into resumable rollouts of one Drainer.
type Reconciler struct {
	client   client.Client
	kube     kubernetes.Interface
	recorder events.EventRecorder
	drainer  *eviction.Drainer
	opts     Options

	mu     sync.Mutex
	active map[string]*run // by rollout ID
}

// NewReconciler returns a Reconciler that reads and annotates requests
// with c, evicts and patches nodes with kube, reads the cluster through
// informers (shared with the caller: see SetupWithManager) and records
// Kubernetes Events with recorder.
func NewReconciler(c client.Client, kube kubernetes.Interface, informers *clusterinformers.Set, recorder events.EventRecorder, opts Options) (*Reconciler, error) {
	if informers == nil {
		return nil, errors.New("upgrade: NewReconciler needs the informers udrain reads through (clusterinformers.FromCache or clusterinformers.FromFactory)")
	}
	r := &Reconciler{client: c, kube: kube, recorder: recorder, opts: opts, active: map[string]*run{}}
	if r.opts.RetryAfter == 0 {
		r.opts.RetryAfter = DefaultRetryAfter
	}
	dopts := opts.Drainer
	dopts.Informers = informers
	dopts.OnEvent = r.onEvent
	d, err := eviction.New(kube, dopts)
	if err != nil {
		return nil, err
	}
	r.drainer = d
	return r, nil
}

// run is a rollout in progress: its request, and the status that its
// events update and a writer writes.
type run struct {
	req     Request
	request *corev1.ConfigMap // for the Events' related object

	mu     sync.Mutex
	status Status
	wake   chan struct{} // a status to write
}

// update changes the run's status and wakes its writer.
func (rn *run) update(fn func(*Status)) {
	rn.mu.Lock()
	fn(&rn.status)
	rn.mu.Unlock()
	select {
	case rn.wake <- struct{}{}:
	default:
	}
}

func (rn *run) snapshot() Status {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	s := rn.status
	s.Domains = append([]DomainState(nil), s.Domains...)
	s.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	return s
}

// Reconcile runs the rollout a request asks for, unless its status says
// it succeeded: from the start, or from where a previous run (of this
// process or another) stopped. It blocks while the rollout runs (one
// request at a time), writing the request's status as it goes.
func (r *Reconciler) Reconcile(ctx context.Context, key ctrl.Request) (ctrl.Result, error) {
	logger := klog.FromContext(ctx)
	var cm corev1.ConfigMap
	if err := r.client.Get(ctx, key.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	prev, err := StatusOf(&cm)
	if err != nil {
		logger.Info("Ignoring an unreadable status", "err", err)
	}
	req, err := ParseRequest(&cm)
	if err != nil {
		st := Status{ID: req.ID, Phase: PhaseInvalid, Conditions: prev.Conditions}
		st.set(ConditionSucceeded, metav1.ConditionFalse, "InvalidRequest", err.Error())
		st.set(ConditionProgressing, metav1.ConditionFalse, "InvalidRequest", "the request waits until it is changed")
		r.recorder.Eventf(&cm, nil, corev1.EventTypeWarning, "InvalidRequest", "Validate", "%v", err)
		return ctrl.Result{}, r.writeStatus(ctx, key.NamespacedName, st)
	}
	if prev.ID == req.ID && prev.Phase == PhaseSucceeded {
		return ctrl.Result{}, nil
	}

	rn := &run{req: req, request: &cm, wake: make(chan struct{}, 1),
		status: Status{ID: req.ID, Phase: PhaseRunning, Conditions: prev.Conditions}}
	if prev.ID == req.ID {
		rn.status.Domains = prev.Domains
	}
	rn.status.set(ConditionSucceeded, metav1.ConditionUnknown, "Running", "rollout "+req.ID+" runs")
	rn.status.set(ConditionProgressing, metav1.ConditionTrue, "Started", "rollout "+req.ID+" started")
	r.mu.Lock()
	if _, busy := r.active[req.ID]; busy {
		r.mu.Unlock()
		return ctrl.Result{RequeueAfter: r.opts.RetryAfter}, nil // another request runs the same rollout
	}
	r.active[req.ID] = rn
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.active, req.ID)
		r.mu.Unlock()
	}()
	writerDone := r.startWriter(ctx, key.NamespacedName, rn)

	logger.Info("Rolling out", "request", key, "id", req.ID, "targetVersion", req.TargetVersion, "domains", req.Domains)
	res, err := r.drainer.Rollout(ctx, eviction.RolloutOptions{
		ID:              req.ID,
		Domains:         req.Domains,
		Upgrade:         r.upgrade(req),
		RecoveryTimeout: r.opts.RecoveryTimeout,
	})
	writerDone()
	rn.update(func(s *Status) { finish(s, res, err) })
	final := rn.snapshot()
	// The status is written even when ctx ended (the manager stops): the
	// next start resumes from the cluster, the status tells what was done.
	werr := r.writeStatus(context.WithoutCancel(ctx), key.NamespacedName, final)

	switch final.Phase {
	case PhaseSucceeded:
		r.recorder.Eventf(&cm, nil, corev1.EventTypeNormal, "RolloutDone", "Upgrade", "%s", final.Condition(ConditionSucceeded).Message)
		return ctrl.Result{}, werr
	case PhaseInterrupted:
		logger.Info("Rollout interrupted; it resumes when the controller starts again", "id", req.ID, "err", err)
		return ctrl.Result{}, nil
	default:
		c := final.Condition(ConditionSucceeded)
		r.recorder.Eventf(&cm, nil, corev1.EventTypeWarning, c.Reason, "Upgrade", "%s", c.Message)
		logger.Error(err, "Rollout stopped; it is tried again", "id", req.ID, "reason", c.Reason, "retryAfter", r.opts.RetryAfter)
		return ctrl.Result{RequeueAfter: r.opts.RetryAfter}, werr
	}
}

// finish sets the status of a rollout that returned res and err.
func finish(s *Status, res *eviction.RolloutResult, err error) {
	if res != nil {
		for _, d := range res.Domains {
			s.setDomain(d.Domain, d.State)
			if d.Health != nil {
				status, reason, msg := healthCondition(d.Health)
				s.set(ConditionGroupsHealthy, status, reason, msg)
			}
		}
	}
	var stop *eviction.DomainError
	if errors.As(err, &stop) && stop.Health != nil {
		status, reason, msg := healthCondition(stop.Health)
		s.set(ConditionGroupsHealthy, status, reason, msg)
	}
	switch {
	case err == nil:
		sum := report.SummarizeRollout(res)
		s.Phase = PhaseSucceeded
		s.set(ConditionSucceeded, metav1.ConditionTrue, "RolloutDone", fmt.Sprintf("%d domain(s) upgraded, %d skipped (done before), %d group(s) disrupted, in %s",
			sum.DomainsDone, sum.DomainsSkipped, sum.GroupsDisrupted, res.Duration.Duration().Round(time.Millisecond)))
		s.set(ConditionProgressing, metav1.ConditionFalse, "RolloutDone", "")
	case errors.Is(err, context.Canceled):
		s.Phase = PhaseInterrupted
		s.set(ConditionSucceeded, metav1.ConditionFalse, stopReason(err), err.Error())
		s.set(ConditionProgressing, metav1.ConditionFalse, "Interrupted", "the controller stopped; the rollout resumes when it starts again")
	default:
		s.Phase = PhaseFailed
		s.set(ConditionSucceeded, metav1.ConditionFalse, stopReason(err), err.Error())
		s.set(ConditionProgressing, metav1.ConditionFalse, stopReason(err), "the rollout is tried again later; it resumes where it stopped")
	}
}

// upgrade is the rollout's upgrade step: label the domain's nodes with
// the target version, then the platform's own step.
func (r *Reconciler) upgrade(req Request) eviction.UpgradeFunc {
	return func(ctx context.Context, dom topology.Domain) error {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{TargetVersionLabel: req.TargetVersion}}})
		if err != nil {
			return err
		}
		for _, n := range dom.Nodes {
			if _, err := r.kube.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("labelling node %s with %s=%s: %w", n, TargetVersionLabel, req.TargetVersion, err)
			}
		}
		if r.opts.Upgrade != nil {
			return r.opts.Upgrade(ctx, dom, req)
		}
		return nil
	}
}

// startWriter writes the run's status whenever it changes, until the
// returned function is called (which waits for the last write).
func (r *Reconciler) startWriter(ctx context.Context, key types.NamespacedName, rn *run) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-rn.wake:
				if err := r.writeStatus(ctx, key, rn.snapshot()); err != nil && ctx.Err() == nil {
					klog.FromContext(ctx).V(2).Info("Writing the request's status failed; the next change writes it again", "err", err)
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// writeStatus writes st on the request (a merge patch of its annotation:
// no conflict with the request's own updates).
func (r *Reconciler) writeStatus(ctx context.Context, key types.NamespacedName, st Status) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{StatusAnnotation: string(raw)}}})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	err = r.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return nil // the request was deleted
	}
	return err
}

// requestChanged tells a request's changes that ask for a reconcile (its
// data or labels) from the controller's own status writes.
func requestChanged(old, new *corev1.ConfigMap) bool {
	return !maps.Equal(old.Data, new.Data) || !maps.Equal(old.Labels, new.Labels)
}
