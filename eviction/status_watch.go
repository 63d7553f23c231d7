package eviction

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/udrain/udrain"
	corev1 "k8s.io/api/core/v1"
)

// RolloutIDs returns, sorted, the IDs of the rollouts whose marks nodes
// carry: the upgraded mark (udrain.UpgradedByAnnotation) and the taint of the
// domains not upgraded yet (udrain.PendingUpgradeTaint). The cordon mark is not
// read: a drain leaves it too. A caller that wants "the rollout" of a
// cluster takes the one ID, and asks which one when there are several.
func RolloutIDs(nodes []corev1.Node) []string {
	var ids []string
	add := func(id string) {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, n := range nodes {
		add(n.Annotations[udrain.UpgradedByAnnotation])
		for _, t := range n.Spec.Taints {
			if t.Key == udrain.PendingUpgradeTaint {
				add(t.Value)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// WatchRolloutStatus reads where rollout opts.ID stands, as RolloutStatus
// does, every opts.StatusInterval (on Options.Clock), and calls onChange with the
// status when it differs from the last one passed, the times that move by
// themselves aside (the status's Time, the Lease's renewal); the first
// status is always passed. It returns nil once a status is Completed
// (after passing it), ctx's error when ctx ends, and the error of a read
// or of onChange otherwise. Give the Drainer Options.Informers so that
// the whole wait reads through one watch; without them each look lists
// the cluster again. Options that RolloutStatus refuses are a
// *udrain.ConfigError, before any request.
func (d *Drainer) WatchRolloutStatus(ctx context.Context, opts RolloutOptions, onChange func(*RolloutStatus) error) error {
	if _, err := opts.forStatus(); err != nil {
		return err
	}
	interval := cmp.Or(opts.StatusInterval, DefaultWatchInterval)
	clk := d.s.Clock
	var last string
	for {
		st, err := d.RolloutStatus(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if key := statusKey(st); key != last {
			last = key
			if err := onChange(st); err != nil {
				return err
			}
		}
		if st.Completed {
			return nil
		}
		t := clk.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// statusKey is what WatchRolloutStatus compares to decide whether the
// status changed: all of it but the times that move on their own.
func statusKey(st *RolloutStatus) string {
	c := *st
	c.Time = time.Time{}
	c.LockRenewedAt = nil
	b, _ := json.Marshal(c)
	return string(b)
}
