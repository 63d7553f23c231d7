package bench

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
)

// DomainsReached maps each domain of a rollout's events to the moment the
// rollout started it (its first DomainStarted): from then on it is
// cordoned until upgraded, so a pod that starts there later starts on an
// upgraded domain.
func DomainsReached(events []eviction.Event) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range events {
		if e.Type != eviction.EventDomainStarted || e.Domain == "" {
			continue
		}
		if _, ok := out[e.Domain]; !ok {
			out[e.Domain] = e.Time.Round(0)
		}
	}
	return out
}

// PendingPlacement is a pod seen bound to a node of a domain that the
// rollout had not reached yet: it will be evicted again in that domain's
// turn.
type PendingPlacement struct {
	Pod    string    `json:"pod"`
	Node   string    `json:"node"`
	Domain string    `json:"domain"`
	At     time.Time `json:"at"`
}

func (p PendingPlacement) String() string {
	return fmt.Sprintf("%s on %s (%s) at %s", p.Pod, p.Node, p.Domain, p.At.UTC().Format("15:04:05.000"))
}

// PlacedOnPending replays recorded pod events (in arrival order) and lists
// the pods first seen bound to a node at or after from whose domain
// (udOf) the rollout had not reached then (reached, see [DomainsReached]);
// pods bound before from are where the workloads were placed, not where
// the rollout moved them. It is the harness's own evidence, independent of
// udrain's report, of work steered (or not) away from pending domains.
func PlacedOnPending(events []fixture.PodEvent, udOf map[string]string, reached map[string]time.Time, from time.Time) []PendingPlacement {
	from = from.Round(0)
	bound := map[types.UID]bool{}
	var out []PendingPlacement
	for _, e := range events {
		pod := e.Pod
		if pod == nil || bound[pod.UID] || pod.Spec.NodeName == "" {
			continue
		}
		bound[pod.UID] = true
		at := e.At.Round(0)
		if at.Before(from) {
			continue
		}
		d := udOf[pod.Spec.NodeName]
		if r, ok := reached[d]; ok && !at.Before(r) {
			continue
		}
		out = append(out, PendingPlacement{Pod: pod.Namespace + "/" + pod.Name, Node: pod.Spec.NodeName, Domain: d, At: at})
	}
	return out
}
