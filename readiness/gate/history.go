package gate

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/resourceversion"
)

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
			err := &udrain.HistoryChangedError{Seen: seen, Server: list.ResourceVersion}
			logger.Error(err, "Stopping: the cluster's history went back")
			cancel(err)
			return
		}
	}
}
