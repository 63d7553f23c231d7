package gate

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// runElected campaigns for the Lease and reconciles while holding it, until
// ctx is done. On shutdown the workers stop before the Lease is released,
// so that the next leader never overlaps a write of this one.
func (c *Controller) runElected(ctx context.Context) error {
	le := c.opts.LeaderElection
	logger := klog.FromContext(ctx).WithValues("lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
	ctx = klog.NewContext(ctx, logger)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     c.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	for ctx.Err() == nil {
		if err := c.campaign(ctx, lock); err != nil {
			return err
		}
	}
	return nil
}

// campaign runs one leader election: it waits for the Lease, reconciles
// while it holds it, and returns when it lost it or ctx is done.
func (c *Controller) campaign(ctx context.Context, lock resourcelock.Interface) error {
	le := c.opts.LeaderElection
	logger := klog.FromContext(ctx)

	// The election runs on a context of its own, canceled only after the
	// term's workers have stopped: canceling it releases the Lease.
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()

	t := &terms{}
	onNewLeader := func(identity string) {
		if identity != le.Identity {
			logger.Info("Another replica leads", "leader", identity)
		}
		if le.OnNewLeader != nil {
			le.OnNewLeader(identity)
		}
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.Name,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				t.lead(ctx, leadCtx, func(termCtx context.Context) {
					logger.Info("Leading: this replica writes the conditions")
					c.runTerm(termCtx)
				})
			},
			OnStoppedLeading: func() {},
			OnNewLeader:      onNewLeader,
		},
	})
	if err != nil {
		// Options were validated by New; this is a bug, not bad input.
		return fmt.Errorf("readiness gate: start leader election: %w", err)
	}

	stopWatching := context.AfterFunc(ctx, func() {
		t.stop()
		cancelElection()
	})
	defer stopWatching()
	elector.Run(electionCtx)
	// The Lease is lost (or released): make sure no worker writes any more
	// before campaigning again.
	t.stop()
	if ctx.Err() == nil {
		logger.Info("Lost the Lease; campaigning again")
	}
	return nil
}

// terms are the leadership terms of one campaign: a term runs its workers
// until the Lease is lost or the campaign's context is done; once stopped,
// no term starts.
type terms struct {
	mu       sync.Mutex
	stopping bool
	done     chan struct{} // closed when the term's workers have stopped; nil before a term
}

// lead runs a term's work on a context that ends with leadCtx (the Lease
// is lost) or ctx (the campaign ends), unless the terms are stopped.
func (t *terms) lead(ctx, leadCtx context.Context, work func(context.Context)) {
	t.mu.Lock()
	if t.stopping {
		t.mu.Unlock()
		return
	}
	done := make(chan struct{})
	t.done = done
	t.mu.Unlock()
	defer close(done)

	termCtx, cancelTerm := context.WithCancel(leadCtx)
	defer cancelTerm()
	stop := context.AfterFunc(ctx, cancelTerm)
	defer stop()
	work(termCtx)
}

// stop keeps any new term from starting and waits until the running one's
// workers have stopped.
func (t *terms) stop() {
	t.mu.Lock()
	t.stopping = true
	done := t.done
	t.mu.Unlock()
	if done != nil {
		<-done
	}
}
