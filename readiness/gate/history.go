package gate

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/internal/resourceversion"
)

// HistoryChangedError reports that the API server's resourceVersion went
// back below the newest the controller's pod cache had seen: the cluster's
// state was restored from an earlier point (etcd restored from a
// snapshot). The cache's watch would miss every change until the server
// reaches Seen again, so the controller stopped rather than leave leaders'
// conditions as they were; start it again for a fresh cache.
type HistoryChangedError struct {
	// Seen is the newest resourceVersion of the pod cache; Server the
	// API server's current one, older.
	Seen, Server string
}

func (e *HistoryChangedError) Error() string {
	return fmt.Sprintf("the API server's resourceVersion %s is older than %s, which the pod cache has seen: the cluster's history went back (etcd restored from a snapshot?), and the cache would miss every change until the server reaches it; start the controller again for a fresh cache",
		e.Server, e.Seen)
}

// guardHistory compares, every Options.HistoryCheck, the API server's
// resourceVersion with the pod cache's, and cancels ctx with a
// *HistoryChangedError once the server's is older. Both must be decimal
// (etcd's revisions) to be compared; a failed list is left to the next
// check (the health checks report a server that does not answer).
func (c *Controller) guardHistory(ctx context.Context, cancel context.CancelCauseFunc) {
	logger := klog.FromContext(ctx)
	tick := time.NewTicker(c.opts.HistoryCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// The cache's version first: the server's, read after it, is at
		// least as new while the history holds.
		seen := c.pods.LastSyncResourceVersion()
		list, err := c.client.CoreV1().Pods(c.opts.Namespace).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: c.selector.String()})
		if err != nil {
			logger.V(2).Info("Could not read the API server's resourceVersion; checking again later", "err", err)
			continue
		}
		if resourceversion.Older(list.ResourceVersion, seen) {
			err := &HistoryChangedError{Seen: seen, Server: list.ResourceVersion}
			logger.Error(err, "Stopping: the cluster's history went back")
			cancel(err)
			return
		}
	}
}
