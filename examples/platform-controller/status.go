package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
)

// nodeUpgrades is the resource crd.yaml defines: one cluster-scoped
// NodeUpgrade per rollout, named after the rollout's ID, whose status is
// the rollout's.
var nodeUpgrades = schema.GroupVersionResource{Group: "upgrade.example.com", Version: "v1alpha1", Resource: "nodeupgrades"}

// The states of a NodeUpgrade (.status.state).
const (
	// upgradePending: no domain started, and no process runs the rollout.
	upgradePending = "Pending"
	// upgradeRunning: a process holds the rollout's Lease.
	upgradeRunning = "Running"
	// upgradeStopped: the rollout started, is not completed, and no
	// process runs it; running the program again resumes it.
	upgradeStopped = "Stopped"
	// upgradeCompleted: every domain is done.
	upgradeCompleted = "Completed"
)

// nodeUpgradeStatus is the .status of a NodeUpgrade, as crd.yaml declares
// it (the API server drops a field the schema does not declare). The
// fields a status may lack are pointers without omitempty: written as
// null, a JSON merge patch removes what an earlier status had.
type nodeUpgradeStatus struct {
	// State is the rollout's: Pending, Running, Stopped or Completed.
	State     string `json:"state"`
	Running   bool   `json:"running"`
	Completed bool   `json:"completed"`
	// Done counts the domains done; Total the rollout's domains;
	// Progress is "Done/Total", for kubectl's DONE column.
	Done     int    `json:"done"`
	Total    int    `json:"total"`
	Progress string `json:"progress"`
	// Current is the domain the rollout is in (or stopped in), else the
	// next it takes; null when every domain is done.
	Current *currentDomain `json:"current"`
	// ETA is when the rollout should be done, from the domains already
	// upgraded (eviction.RolloutStatus.ETA); ETAPerDomain the time a domain
	// took. Null until two domains are upgraded, and once none is left.
	ETA          *metav1.Time     `json:"eta"`
	ETAPerDomain *metav1.Duration `json:"etaPerDomain"`
	// Summary is every domain with its state, one line, for kubectl's
	// wide output.
	Summary string `json:"summary"`
	// Updated is when the status was read.
	Updated metav1.Time    `json:"updated"`
	Domains []domainStatus `json:"domains"`
}

// currentDomain is where the rollout is. A merge patch merges it with the
// current domain written before, field by field: Stage is null, not
// omitted, when the domain has none, or it would keep the stage of the
// domain before.
type currentDomain struct {
	Domain string               `json:"domain"`
	State  eviction.DomainState `json:"state"`
	Stage  *eviction.Stage      `json:"stage"`
}

// domainStatus is one domain of a NodeUpgrade's status.
type domainStatus struct {
	Domain string               `json:"domain"`
	State  eviction.DomainState `json:"state"`
	Stage  eviction.Stage       `json:"stage,omitempty"`
	// Since is when the domain was marked upgraded.
	Since *metav1.Time `json:"since,omitempty"`
	// Pods counts the pods left to evict; GroupsDown the groups not
	// healthy.
	Pods       int `json:"pods,omitempty"`
	GroupsDown int `json:"groupsDown,omitempty"`
}

// statusOf turns a rollout's status, as package eviction reads it, into
// its NodeUpgrade's.
func statusOf(st *eviction.RolloutStatus) nodeUpgradeStatus {
	out := nodeUpgradeStatus{Running: st.Running, Completed: st.Completed, Done: st.Done, Total: len(st.Domains),
		Updated: metav1.NewTime(st.Time)}
	out.Progress = fmt.Sprintf("%d/%d", out.Done, out.Total)
	var summary []string
	var next *currentDomain // the first domain not done
	stopped := false
	for _, p := range st.Domains {
		d := domainStatus{Domain: p.Domain, State: p.State, Stage: p.Stage, Pods: p.Pods, GroupsDown: len(p.Down)}
		if p.Since != nil {
			d.Since = new(metav1.NewTime(*p.Since))
		}
		out.Domains = append(out.Domains, d)
		here := &currentDomain{Domain: p.Domain, State: p.State}
		if p.Stage != "" {
			here.Stage = new(p.Stage)
		}
		switch {
		case p.Stage != "" && out.Current == nil:
			out.Current = here
		case p.State != eviction.StateDone && next == nil:
			next = here
		}
		stopped = stopped || p.State == eviction.StateStopped
		s := p.Domain + " " + string(p.State)
		if p.Stage != "" {
			s += "/" + string(p.Stage)
		}
		summary = append(summary, s)
	}
	if out.Current == nil {
		out.Current = next
	}
	out.Summary = strings.Join(summary, ", ")
	switch {
	case st.Completed:
		out.State = upgradeCompleted
	case st.Running:
		out.State = upgradeRunning
	case stopped || st.Done > 0:
		out.State = upgradeStopped
	default:
		out.State = upgradePending
	}
	if eta := st.ETA; eta != nil {
		out.ETA = new(metav1.NewTime(*eta))
		out.ETAPerDomain = &metav1.Duration{Duration: st.ETAPerDomain.Duration().Round(time.Second)}
	}
	return out
}

// statusWriter keeps a NodeUpgrade's status. The rollout's OnEvent
// callback only hands it the latest status (observe); one goroutine
// writes it, so the callback, which holds up every drain of the Drainer
// while it runs, never waits for the API server. A status replaced before
// it was written is not written: the resource shows the latest.
type statusWriter struct {
	resource dynamic.ResourceInterface
	name     string
	// read reads the rollout's status afresh (Drainer.RolloutStatus over
	// the program's informers: no list or watch, one GET of its Lease).
	read   func(context.Context) (*eviction.RolloutStatus, error)
	logger klog.Logger

	mu sync.Mutex
	// latest is the status to write (nil: written); stale says a stage
	// began since, which no event's status shows: read it afresh.
	latest  *eviction.RolloutStatus
	stale   bool
	written *eviction.RolloutStatus
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
}

func newStatusWriter(client dynamic.Interface, id string, read func(context.Context) (*eviction.RolloutStatus, error), logger klog.Logger) *statusWriter {
	return &statusWriter{resource: client.Resource(nodeUpgrades), name: id, read: read, logger: logger.WithValues("nodeUpgrade", id),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
}

// create makes the NodeUpgrade unless it exists, with the target version
// and the domains the program was given (all when empty) as its spec.
func (w *statusWriter) create(ctx context.Context, version string, domains []string) error {
	if _, err := w.resource.Get(ctx, w.name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	spec := map[string]any{"targetVersion": version}
	if len(domains) > 0 {
		list := make([]any, len(domains))
		for i, d := range domains {
			list[i] = d
		}
		spec["domains"] = list
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetAPIVersion(nodeUpgrades.GroupVersion().String())
	obj.SetKind("NodeUpgrade")
	obj.SetName(w.name)
	_, err := w.resource.Create(ctx, obj, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("create NodeUpgrade %s: %w (is the resource defined? kubectl apply -f examples/platform-controller/crd.yaml)", w.name, err)
	case err != nil:
		return fmt.Errorf("create NodeUpgrade %s: %w", w.name, err)
	}
	w.logger.Info("NodeUpgrade created")
	return nil
}

// write writes st into the NodeUpgrade's status, whole (a merge patch of
// the status subresource).
func (w *statusWriter) write(ctx context.Context, st *eviction.RolloutStatus) error {
	patch, err := json.Marshal(map[string]any{"status": statusOf(st)})
	if err != nil {
		return err
	}
	if _, err := w.resource.Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("write the status of NodeUpgrade %s: %w", w.name, err)
	}
	w.logger.V(3).Info("Status written", "running", st.Running, "done", st.Done, "domains", len(st.Domains))
	return nil
}

// stageEvents begin a stage that none of the events carrying a status
// (RolloutStarted, DomainDone, RolloutStopped, RolloutDone) shows: on
// them, the writer reads the status afresh, so that the resource says a
// domain drains, upgrades or recovers.
var stageEvents = map[eviction.EventType]bool{
	eviction.EventPhaseStarted:    true,
	eviction.EventUpgradeStarted:  true,
	eviction.EventRecoveryStarted: true,
}

// observe is called from the rollout's OnEvent callback; it never blocks.
func (w *statusWriter) observe(e eviction.Event) {
	switch {
	case e.Status != nil:
		w.set(e.Status)
	case stageEvents[e.Type]:
		w.mu.Lock()
		w.stale = true
		w.mu.Unlock()
		w.signal()
	}
}

// set makes st the status to write.
func (w *statusWriter) set(st *eviction.RolloutStatus) {
	w.mu.Lock()
	w.latest, w.stale = st, false
	w.mu.Unlock()
	w.signal()
}

func (w *statusWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a write is due already
	}
}

// start writes what observe and set are given, from a goroutine, until
// stop; its writes outlive ctx's cancel (the status a stopped rollout
// returns matters most), not stop's timeout.
func (w *statusWriter) start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.quit:
				w.writePending(ctx)
				return
			case <-w.wake:
				w.writePending(ctx)
			}
		}
	}()
}

// stop writes the status set last, if it was not written, and stops the
// writer; it gives up writing after timeout.
func (w *statusWriter) stop(timeout time.Duration) {
	close(w.quit)
	t := time.AfterFunc(timeout, w.cancel)
	defer t.Stop()
	<-w.done
	w.cancel()
}

// writePending writes the latest status, or reads it afresh when a stage
// began since; a failure is logged (the status is information, not a
// reason to stop the rollout) and the next status tried again.
func (w *statusWriter) writePending(ctx context.Context) {
	w.mu.Lock()
	st, stale := w.latest, w.stale
	w.latest, w.stale = nil, false
	w.mu.Unlock()
	if stale {
		fresh, err := w.read(ctx)
		if err != nil {
			w.logger.Info("Could not read the rollout's status", "err", err)
		} else {
			st = fresh
		}
	}
	if st == nil || st == w.written {
		return
	}
	if err := w.write(ctx, st); err != nil {
		w.logger.Error(err, "Could not write the rollout's status")
		return
	}
	w.written = st
}

// begin creates the NodeUpgrade if it is missing and writes the status
// the cluster shows before the rollout starts (where a previous run
// stopped, if one did), then starts the writer. An error creating or
// writing the resource is returned (the program was asked to keep it); one
// reading the status is logged.
func (w *statusWriter) begin(ctx context.Context, version string, domains []string) error {
	if err := w.create(ctx, version, domains); err != nil {
		return err
	}
	st, err := w.read(ctx)
	if err != nil {
		w.logger.Info("Could not read the rollout's status", "err", err)
	} else {
		if err := w.write(ctx, st); err != nil {
			return err
		}
		w.written = st
		s := statusOf(st)
		kv := []any{"state", s.State, "done", s.Progress}
		if s.Current != nil {
			kv = append(kv, "current", s.Current.Domain, "currentState", s.Current.State)
		}
		w.logger.Info("Rollout status before the run", kv...)
	}
	w.start(ctx)
	return nil
}
