package gate

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/udrain/udrain/topology"
)

// syncProbe is the work-queue key of the probe that health checks send
// through the leader's queue; no grouper gives a pod's group an empty
// namespace, so it never names a group.
var syncProbe = topology.GroupID{Kind: "udrain.dev/sync-probe"}

// HealthProblem names why a health check of the controller fails.
type HealthProblem string

const (
	// NotRunning: [Controller.Run] has not been called, or has returned.
	NotRunning HealthProblem = "NotRunning"
	// NotSynced: the pod cache has not filled yet; the replica could not
	// take over (or, leading, write) from what it knows.
	NotSynced HealthProblem = "NotSynced"
	// QueueStalled: the leader's workers have not reached a sync probe
	// queued more than [Options.MaxSyncAge] ago: its work queue does not
	// move.
	QueueStalled HealthProblem = "QueueStalled"
	// ReconcileStalled: one reconcile of the leader has run for more than
	// [Options.MaxSyncAge]: a worker is stuck.
	ReconcileStalled HealthProblem = "ReconcileStalled"
	// SyncFailing: reconciles of the leader have kept failing for more
	// than [Options.MaxSyncAge]: some leaders' conditions are not what
	// their groups say (the API server refuses the writes, say).
	SyncFailing HealthProblem = "SyncFailing"
)

// HealthError is the error of a failed health check: [Health.Alive],
// [Health.Ready], [Controller.Healthz], [Controller.Readyz].
type HealthError struct {
	Problem HealthProblem
	// Detail says what was seen, with ages and the bound.
	Detail string
}

func (e *HealthError) Error() string { return string(e.Problem) + ": " + e.Detail }

// Health is what a [Controller] knows of its own progress at one moment;
// [Controller.Health] takes it. [Health.Alive] and [Health.Ready] judge it.
//
// How the leader's progress is measured: the controller reacts to pod
// events only, so an idle leader reconciles nothing, and the time of its
// last write says nothing about whether it is stuck. Instead, each call of
// [Controller.Healthz] or [Controller.Readyz] (a kubelet probe) sends a
// probe through the leader's work queue, unless one is already on its way.
// The queue is first in, first out: when a worker takes the probe, every
// group queued before it has been taken. The leader is in sync at that
// moment if no group's last reconcile failed ([Health.LastSync]). A probe
// left waiting, a reconcile that does not return, or failures that do not
// clear, each for longer than [Options.MaxSyncAge], are the problems.
type Health struct {
	// Time is when the snapshot was taken, by [Options.Clock].
	Time time.Time
	// Running: [Controller.Run] has been called and has not returned.
	Running bool
	// Synced: the pod cache has filled.
	Synced bool
	// Leading: this replica reconciles groups (it holds the Lease, or runs
	// without [Options.LeaderElection] and its cache has filled).
	Leading bool
	// LeadingSince is when the current term began; zero when not leading.
	LeadingSince time.Time
	// LastSync is when, in this term, a sync probe last went through the
	// work queue with no group failing; zero if none has yet.
	LastSync time.Time
	// ProbeQueued is when the sync probe now on its way was queued; zero
	// if none is.
	ProbeQueued time.Time
	// ReconcilingSince is when the longest-running reconcile under way
	// started; zero if none is.
	ReconcilingSince time.Time
	// Failing counts the groups whose last reconcile failed (they wait
	// for their retry), FailingSince is when the oldest of these failures
	// began (zero if none), and LastError is the latest failure.
	Failing      int
	FailingSince time.Time
	LastError    error
	// MaxSyncAge is the bound of [Options.MaxSyncAge].
	MaxSyncAge time.Duration
}

// Alive is the liveness check: nil while the controller's loops move. A
// standby, or a leader that keeps failing to write, is alive; a replica
// whose cache is still filling is alive too (a restart would not fill it
// faster). It fails with a *[HealthError] when Run is not running
// ([NotRunning]), or when the leader is stuck ([QueueStalled],
// [ReconcileStalled]): then restarting the process is the remedy, and it
// hands the Lease to the other replica.
func (h Health) Alive() error {
	if !h.Running {
		return &HealthError{NotRunning, "the controller is not running (Run was not called, or has returned)"}
	}
	if !h.Leading {
		return nil
	}
	if waited := h.since(h.ProbeQueued); waited > h.MaxSyncAge {
		return &HealthError{QueueStalled, fmt.Sprintf("the leader's workers have not reached a sync probe queued %s ago (bound %s)", roundAge(waited), h.MaxSyncAge)}
	}
	if ran := h.since(h.ReconcilingSince); ran > h.MaxSyncAge {
		return &HealthError{ReconcileStalled, fmt.Sprintf("a reconcile of the leader has run for %s (bound %s)", roundAge(ran), h.MaxSyncAge)}
	}
	return nil
}

// Ready is the readiness check: nil when the replica can do its part. A
// standby is ready once its cache has filled (it can take over at once);
// a leader while it is alive and its failures, if any, are younger than
// [Options.MaxSyncAge]. It fails with a *[HealthError]: what [Health.Alive]
// says, [NotSynced], or [SyncFailing].
func (h Health) Ready() error {
	if err := h.Alive(); err != nil {
		return err
	}
	if !h.Synced {
		return &HealthError{NotSynced, "the pod cache has not filled yet"}
	}
	if !h.Leading || h.Failing == 0 {
		return nil
	}
	if failing := h.since(h.FailingSince); failing > h.MaxSyncAge {
		return &HealthError{SyncFailing, fmt.Sprintf("%d group(s) failing to reconcile, for %s (bound %s); the log and Health.LastError say why", h.Failing, roundAge(failing), h.MaxSyncAge)}
	}
	return nil
}

// String describes the state for a health endpoint's answer, e.g.
// "leading for 5m2s; last successful sync 3.1s ago; pod cache synced".
func (h Health) String() string {
	var parts []string
	switch {
	case !h.Running:
		return "not running"
	case h.Leading:
		parts = append(parts, "leading for "+roundAge(h.since(h.LeadingSince)))
		if h.LastSync.IsZero() {
			parts = append(parts, "no sync probe through yet")
		} else {
			parts = append(parts, "last successful sync "+roundAge(h.since(h.LastSync))+" ago")
		}
		if h.Failing > 0 {
			parts = append(parts, fmt.Sprintf("%d group(s) failing for %s", h.Failing, roundAge(h.since(h.FailingSince))))
		}
	case h.Synced:
		parts = append(parts, "standby")
	}
	if h.Synced {
		parts = append(parts, "pod cache synced")
	} else {
		parts = append(parts, "pod cache filling")
	}
	return strings.Join(parts, "; ")
}

// Health returns the controller's state now. It changes nothing; the
// leader's progress is measured by the sync probes that
// [Controller.Healthz] and [Controller.Readyz] send (see [Health]).
func (c *Controller) Health() Health {
	return c.progress.snapshot(c.opts.Clock.Now(), c.opts.MaxSyncAge)
}

// Healthz is the liveness check ([Health.Alive]) for a livenessProbe or a
// controller-runtime healthz.Checker. Each call sends a sync probe through
// the leader's work queue unless one is on its way; call it (or
// [Controller.Readyz]) periodically, as a kubelet does, and within
// [Options.MaxSyncAge].
func (c *Controller) Healthz() error {
	c.progress.queueProbe(c.opts.Clock.Now())
	return c.Health().Alive()
}

// Readyz is the readiness check ([Health.Ready]), for a readinessProbe;
// it sends a sync probe as [Controller.Healthz] does.
func (c *Controller) Readyz() error {
	c.progress.queueProbe(c.opts.Clock.Now())
	return c.Health().Ready()
}

// HealthHandler serves the health checks for probes: GET /healthz
// ([Controller.Healthz]) and /readyz ([Controller.Readyz]) answer 200 "ok"
// or 503 with the [HealthError], then a line on the state: the role, the
// age of the last successful sync, the cache (as [Health.String]). Any
// other path is 404. It names no pod or group (the log does); serve it on
// a listener of its own, apart from anything clients use.
func (c *Controller) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	for path, check := range map[string]func() error{"/healthz": c.Healthz, "/readyz": c.Readyz} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "no-store")
			status, verdict := http.StatusOK, "ok"
			if err := check(); err != nil {
				status, verdict = http.StatusServiceUnavailable, err.Error()
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, "%s\n%s\n", verdict, c.Health())
		})
	}
	return mux
}

// since is the time from t to the snapshot; 0 for a zero t.
func (h Health) since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return h.Time.Sub(t)
}

// roundAge rounds a duration for people: to 0.1s below a minute, to the
// second above.
func roundAge(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// progress is what the controller records for its health checks.
type progress struct {
	mu      sync.Mutex
	running bool
	synced  bool
	// queue is the current term's work queue; nil while not leading.
	queue        workqueue.TypedRateLimitingInterface[topology.GroupID]
	leadingSince time.Time
	lastSync     time.Time
	probeQueued  time.Time
	reconciling  map[topology.GroupID]time.Time // start of each reconcile under way
	failing      map[topology.GroupID]time.Time // since when each failing group fails
	lastError    error
}

func (p *progress) setRunning(running bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = running
}

func (p *progress) setSynced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.synced = true
}

// startTerm and endTerm bracket a term: its state starts afresh.
func (p *progress) startTerm(queue workqueue.TypedRateLimitingInterface[topology.GroupID], now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue, p.leadingSince = queue, now
	p.lastSync, p.probeQueued, p.lastError = time.Time{}, time.Time{}, nil
	p.reconciling = map[topology.GroupID]time.Time{}
	p.failing = map[topology.GroupID]time.Time{}
}

func (p *progress) endTerm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue, p.leadingSince = nil, time.Time{}
	p.lastSync, p.probeQueued, p.lastError = time.Time{}, time.Time{}, nil
	p.reconciling, p.failing = nil, nil
}

// queueProbe sends a sync probe through the leader's queue unless one is
// on its way; nothing when not leading.
func (p *progress) queueProbe(now time.Time) {
	p.mu.Lock()
	q := p.queue
	if q == nil || !p.probeQueued.IsZero() {
		p.mu.Unlock()
		return
	}
	p.probeQueued = now
	p.mu.Unlock()
	// After a term's end this Add is a no-op on a shut-down queue, and the
	// next term starts with no probe queued.
	q.Add(syncProbe)
}

func (p *progress) probeReached(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probeQueued = time.Time{}
	if len(p.failing) == 0 {
		p.lastSync = now
	}
}

func (p *progress) reconcileStarted(id topology.GroupID, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reconciling != nil {
		p.reconciling[id] = now
	}
}

func (p *progress) reconcileDone(id topology.GroupID, now time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reconciling == nil {
		return // the term has ended
	}
	delete(p.reconciling, id)
	if err == nil {
		delete(p.failing, id)
		return
	}
	if _, ok := p.failing[id]; !ok {
		p.failing[id] = now
	}
	p.lastError = err
}

func (p *progress) snapshot(now time.Time, maxSyncAge time.Duration) Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := Health{
		Time: now, Running: p.running, Synced: p.synced, Leading: p.queue != nil,
		LeadingSince: p.leadingSince, LastSync: p.lastSync, ProbeQueued: p.probeQueued,
		Failing: len(p.failing), LastError: p.lastError, MaxSyncAge: maxSyncAge,
	}
	for _, t := range p.reconciling {
		if h.ReconcilingSince.IsZero() || t.Before(h.ReconcilingSince) {
			h.ReconcilingSince = t
		}
	}
	for _, t := range p.failing {
		if h.FailingSince.IsZero() || t.Before(h.FailingSince) {
			h.FailingSince = t
		}
	}
	return h
}
