package eviction

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
)

func TestRolloutIDs(t *testing.T) {
	node := func(upgradedBy string, taints ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{udrain.CordonedByAnnotation: "a-drain"}}}
		if upgradedBy != "" {
			n.Annotations[udrain.UpgradedByAnnotation] = upgradedBy
		}
		for _, v := range taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: udrain.PendingUpgradeTaint, Value: v, Effect: corev1.TaintEffectPreferNoSchedule})
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "nvidia.com/gpu", Value: "other", Effect: corev1.TaintEffectNoSchedule})
		return n
	}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  []string
	}{
		{"none: a cordon mark is a drain's too", []corev1.Node{node("")}, nil},
		{"upgraded marks and pending taints of one rollout", []corev1.Node{node("r1"), node("", "r1"), node("r1")}, []string{"r1"}},
		{"two rollouts, sorted", []corev1.Node{node("", "r2"), node("r1")}, []string{"r1", "r2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RolloutIDs(tc.nodes)); diff != "" {
				t.Errorf("RolloutIDs (-want +got):\n%s", diff)
			}
		})
	}
}

// WatchRolloutStatus passes the first status, then only changes (not the
// passing of time), and ends with the completed status or with ctx.
func TestWatchRolloutStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	clk := clocktesting.NewFakeClock(statusNow)
	fc := newFakeCluster(t, newStatusCluster().upgraded(1, 20*time.Minute).objs...)
	r, err := NewReader(fc.client, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan *RolloutStatus, 10)
	done := make(chan error, 1)
	go func() {
		done <- r.WatchRolloutStatus(ctx, RolloutOptions{ID: "r1", NoLock: true, StatusInterval: time.Minute}, func(st *RolloutStatus) error {
			seen <- st
			return nil
		})
	}()
	doneCount := func(st *RolloutStatus) int {
		n := 0
		for _, d := range st.Domains {
			if d.State == "Done" {
				n++
			}
		}
		return n
	}
	// waiting waits until the watch waits for its next look: it has read,
	// and passed or not, the status of the last.
	waiting := func() {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
	}
	step := func() {
		waiting()
		clk.Step(time.Minute)
	}
	if st := <-seen; doneCount(st) != 1 || st.Completed {
		t.Fatalf("first status: %d done, completed %v; want 1 and false", doneCount(st), st.Completed)
	}
	step() // a minute later, nothing changed but the time
	step()
	// The look of the second minute is over before the nodes change
	// below (else it could see ud-2 half upgraded, a change to pass).
	waiting()
	select {
	case st := <-seen:
		t.Fatalf("a status passed again with nothing changed: %d done", doneCount(st))
	default:
	}
	for d := 2; d <= 4; d++ {
		for n := 1; n <= 2; n++ {
			node, err := fc.client.CoreV1().Nodes().Get(ctx, fmt.Sprintf("node-%d-%d", d, n), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node.Annotations = map[string]string{udrain.UpgradedByAnnotation: "r1", udrain.UpgradedAtAnnotation: clk.Now().Format(time.RFC3339Nano)}
			if _, err := fc.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	step()
	if st := <-seen; doneCount(st) != 4 || !st.Completed {
		t.Fatalf("after the upgrade: %d done, completed %v; want 4 and true", doneCount(st), st.Completed)
	}
	if err := <-done; err != nil {
		t.Fatalf("WatchRolloutStatus: %v, want nil once completed", err)
	}

	// Cancelled: ctx's error. A failing onChange: its error.
	cctx, ccancel := context.WithCancel(ctx)
	errStop := errors.New("stop")
	go func() {
		done <- r.WatchRolloutStatus(cctx, RolloutOptions{ID: "r2", NoLock: true, StatusInterval: time.Minute}, func(*RolloutStatus) error { return nil })
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	ccancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if err := r.WatchRolloutStatus(ctx, RolloutOptions{ID: "r2", NoLock: true, StatusInterval: time.Minute}, func(*RolloutStatus) error { return errStop }); !errors.Is(err, errStop) {
		t.Errorf("onChange failed: %v, want its error", err)
	}
	var ce *udrain.ConfigError
	if err := r.WatchRolloutStatus(ctx, RolloutOptions{ID: "r2", StatusInterval: -time.Second}, nil); !errors.As(err, &ce) || ce.Field != "eviction.RolloutOptions.StatusInterval" {
		t.Errorf("negative interval: %v, want a *udrain.ConfigError on eviction.RolloutOptions.StatusInterval", err)
	}
}
