package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// BudgetStatus is a PDB's status as a watch delivered it, with the time it
// arrived.
type BudgetStatus struct {
	At                 time.Time `json:"at"`
	DisruptionsAllowed int32     `json:"disruptionsAllowed"`
	CurrentHealthy     int32     `json:"currentHealthy"`
}

// BudgetWatch records a PDB's status over time, as a drainer watching it
// sees it: the moment its budget frees is when DisruptionsAllowed turns
// positive on the watch.
type BudgetWatch struct {
	mu       sync.Mutex
	statuses []BudgetStatus
	stop     func()
	done     chan struct{}
}

// WatchBudget starts recording PDB namespace/name until Stop.
func WatchBudget(ctx context.Context, c kubernetes.Interface, namespace, name string) (*BudgetWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := c.PolicyV1().PodDisruptionBudgets(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch PDB %s/%s: %w", namespace, name, err)
	}
	b := &BudgetWatch{stop: func() { cancel(); w.Stop() }, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for ev := range w.ResultChan() {
			pdb, ok := ev.Object.(*policyv1.PodDisruptionBudget)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			b.add(BudgetStatus{At: time.Now(), DisruptionsAllowed: pdb.Status.DisruptionsAllowed, CurrentHealthy: pdb.Status.CurrentHealthy})
		}
	}()
	return b, nil
}

func (b *BudgetWatch) add(s BudgetStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statuses = append(b.statuses, s)
}

// Stop ends the recording.
func (b *BudgetWatch) Stop() {
	if b.stop != nil {
		b.stop()
		<-b.done
	}
}

// Statuses returns the statuses recorded so far.
func (b *BudgetWatch) Statuses() []BudgetStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BudgetStatus(nil), b.statuses...)
}

// AllowedAfter returns the first time at or after t that the budget was
// seen allowing a disruption after not allowing one (or allowing one at
// its first status seen at or after t).
func (b *BudgetWatch) AllowedAfter(t time.Time) (time.Time, bool) {
	return firstAllowed(b.Statuses(), t)
}

func firstAllowed(statuses []BudgetStatus, t time.Time) (time.Time, bool) {
	for _, s := range statuses {
		if !s.At.Before(t) && s.DisruptionsAllowed > 0 {
			return s.At, true
		}
	}
	return time.Time{}, false
}
