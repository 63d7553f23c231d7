package udrain

import (
	"fmt"
	"strings"
)

// HistoryChangedError reports that the cluster's state went back in time
// under a long-running call, as an etcd restore from a snapshot makes it:
// an object's resourceVersion went back below one the caller had seen (a
// restore without --bump-revision), or marks the caller wrote and had seen
// are gone. The caller stopped rather than act on a history that changed:
// what it did after the snapshot may be undone, and a cache's watch would
// miss every change until the server reaches the version it had seen.
// eviction's rollouts and the readiness-gate controller (readiness/gate)
// return it.
//
// What to do: look at the cluster as it is now, then start the call again.
// A rollout run again with the same ID drains again each domain that is
// no longer marked upgraded, and resumes in a domain still cordoned by it;
// the gate controller started again reads the cluster afresh.
type HistoryChangedError struct {
	// ID is the rollout's ID when a rollout stopped; empty when the
	// readiness-gate controller's pod cache saw the change.
	ID string
	// Object is the object whose resourceVersion went back ("node n1",
	// "PodDisruptionBudget ns/b"), from Seen (the newest the caller had
	// seen) to Server (the API server's, older); empty when marks showed
	// the change. The readiness-gate controller compares its pod cache's
	// version with the server's: Seen and Server without Object.
	Object       string
	Seen, Server string
	// Domain is a domain the rollout had finished (or found upgraded)
	// whose nodes no longer carry its UpgradedByAnnotation.
	Domain string
	// Nodes are nodes the rollout held cordoned that no longer carry its
	// CordonedByAnnotation.
	Nodes []string
}

func (e *HistoryChangedError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("the API server's resourceVersion %s is older than %s, which the pod cache has seen: the cluster's history went back (etcd restored from a snapshot?), and the cache would miss every change until the server reaches it; start the controller again for a fresh cache",
			e.Server, e.Seen)
	}
	var what string
	switch {
	case e.Object != "":
		what = fmt.Sprintf("the resourceVersion of %s went back from %s to %s", e.Object, e.Seen, e.Server)
	case e.Domain != "":
		what = fmt.Sprintf("domain %s, which it had upgraded, is no longer marked upgraded (%s=%s on none of its nodes)", e.Domain, UpgradedByAnnotation, e.ID)
	default:
		nodes := e.Nodes
		if len(nodes) > 10 {
			nodes = append(nodes[:10:10], fmt.Sprintf("and %d more", len(nodes)-10))
		}
		what = fmt.Sprintf("node(s) it held cordoned are no longer cordoned by it: %s", strings.Join(nodes, ", "))
	}
	return fmt.Sprintf("the cluster's state went back in time under rollout %s: %s; an etcd restore from a snapshot does this. "+
		"The rollout stopped rather than act on a history that changed: check the cluster, then run the rollout again with the same ID "+
		"(it drains again the domains no longer marked upgraded)", e.ID, what)
}
