package eviction

import (
	"context"
	"math"
	"time"

	"k8s.io/client-go/kubernetes"
)

// queueBudget is how much of the client's rate limit udrain's own writes
// may hold queued at once: a request of udrain's made now (a domain's
// cordon or uncordon, a preflight dry run) or a renewal of the rollout's
// Lease waits about that long at most in the client's rate limiter behind
// the writes already in flight.
//
// The client's limiter serves its waiters in turn: without a bound, a
// rollout's evictions (Options.Concurrency per domain, several domains in
// flight) queue there far ahead of everything else. A rollout at
// --kube-api-qps 2 lost its Lease 20 s into its first domain: each renewal
// would have waited 16 s behind 32 evictions, more than the third of the
// Lease's duration it may take. Bounding what is queued costs no
// throughput: the limiter serves as many requests a second either way.
const queueBudget = 2 * time.Second

// pacer bounds udrain's writes in flight at once to what the client's
// rate limiter serves in queueBudget: at least one, and no bound for a
// client without a limiter (QPS unknown or unlimited).
type pacer struct {
	slots chan struct{}
}

// newPacer paces writes for client's rate limiter, read from its core
// REST client (the one limiter a clientset's groups share); nil when the
// client has none that says its rate.
func newPacer(client kubernetes.Interface) *pacer {
	rc := client.CoreV1().RESTClient()
	if rc == nil {
		return nil
	}
	lim := rc.GetRateLimiter()
	if lim == nil {
		return nil
	}
	return pacerFor(lim.QPS())
}

// pacerFor paces writes for a limiter of qps requests a second; nil for a
// rate that is not positive (no limit).
func pacerFor(qps float32) *pacer {
	if !(qps > 0) || math.IsInf(float64(qps), 0) {
		return nil
	}
	n := int(math.Ceil(float64(qps) * queueBudget.Seconds()))
	return &pacer{slots: make(chan struct{}, max(n, 1))}
}

// size is the writes in flight the pacer allows, 0 for no bound.
func (p *pacer) size() int {
	if p == nil {
		return 0
	}
	return cap(p.slots)
}

// acquire waits for a slot, or for ctx to end (false).
func (p *pacer) acquire(ctx context.Context) bool {
	if p == nil {
		return true
	}
	select {
	case p.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// release gives back a slot acquire took.
func (p *pacer) release() {
	if p != nil {
		<-p.slots
	}
}
