package lease

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStateOf: what a Lease says of its holder, and whether it holds at a
// time, as both taking the rollout's Lease and reading a rollout's status
// judge it.
func TestStateOf(t *testing.T) {
	created := metav1.NewTime(t0.Add(-time.Hour))
	acquired := metav1.NewMicroTime(t0.Add(-time.Minute))
	renewed := metav1.NewMicroTime(t0.Add(-10 * time.Second))
	lease := func(holder string, acquire, renew *metav1.MicroTime) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](30), AcquireTime: acquire, RenewTime: renew}}
		if holder != "" {
			l.Spec.HolderIdentity = &holder
		}
		return l
	}
	acquiredAt := acquired.Time
	tests := []struct {
		name     string
		lease    *coordinationv1.Lease
		now      time.Time
		want     State
		wantHeld bool
	}{
		{"renewed 10 s ago", lease("host-a", &acquired, &renewed), t0,
			State{Holder: "host-a", AcquiredAt: &acquiredAt, RenewedAt: renewed.Time, Duration: 30 * time.Second}, true},
		{"29.9 s after the renewal", lease("host-a", &acquired, &renewed), renewed.Add(29900 * time.Millisecond),
			State{Holder: "host-a", AcquiredAt: &acquiredAt, RenewedAt: renewed.Time, Duration: 30 * time.Second}, true},
		{"expired at 30 s", lease("host-a", &acquired, &renewed), renewed.Add(30 * time.Second),
			State{Holder: "host-a", AcquiredAt: &acquiredAt, RenewedAt: renewed.Time, Duration: 30 * time.Second}, false},
		{"never renewed: its creation counts", lease("host-a", nil, nil), t0,
			State{Holder: "host-a", RenewedAt: created.Time, Duration: 30 * time.Second}, false},
		{"released: no holder", lease("", &acquired, &renewed), t0,
			State{AcquiredAt: &acquiredAt, RenewedAt: renewed.Time, Duration: 30 * time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StateOf(tt.lease)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("StateOf (-want +got):\n%s", diff)
			}
			if held := got.HeldAt(tt.now); held != tt.wantHeld {
				t.Errorf("HeldAt(%s) = %v, want %v", tt.now, held, tt.wantHeld)
			}
		})
	}
}
