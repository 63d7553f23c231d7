package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/internal/testkit"
)

// withRolloutMarks leaves on the nodes what rollout r1 writes: ud-1
// upgraded 10 minutes ago, ud-2 cordoned (its drain under way) and
// tainted.
func withRolloutMarks() clusterOption {
	return func(o *clusterObjects) {
		for _, n := range o.nodes {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			switch n.Labels["topology.udrain.dev/upgrade-domain"] {
			case "ud-1":
				n.Annotations[udrain.UpgradedByAnnotation] = "r1"
				n.Annotations[udrain.UpgradedAtAnnotation] = testNow.Add(-10 * time.Minute).Format(time.RFC3339Nano)
				n.Annotations[udrain.RecoveredByAnnotation] = "r1"
			case "ud-2":
				n.Annotations[udrain.CordonedByAnnotation] = "r1"
				n.Spec.Unschedulable = true
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: udrain.PendingUpgradeTaint, Value: "r1", Effect: corev1.TaintEffectPreferNoSchedule})
			}
		}
	}
}

// addLease adds r1's Lease, held by holder (empty: released), renewed ago.
func addLease(t *testing.T, c *cluster, holder string, ago time.Duration) {
	t.Helper()
	renewed := metav1.NewMicroTime(testNow.Add(-ago))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: eviction.DefaultLockNamespace, Name: "udrain-rollout-r1"},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: new(int32(30)), RenewTime: &renewed, AcquireTime: &renewed}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if _, err := c.client.CoordinationV1().Leases(l.Namespace).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenRolloutStatus checks the RolloutStatus kind: running, and
// stopped, found without an ID from the nodes' marks.
func TestGoldenRolloutStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder string
		args   []string
	}{
		{"rollout-status.table", "host-a", []string{"rollout", "status", "r1"}},
		{"rollout-status.json", "host-a", []string{"rollout", "status", "r1", "-o", "json"}},
		{"rollout-status-stopped.table", "", []string{"rollout", "status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, withRolloutMarks())
			addLease(t, c, tc.holder, 3*time.Second)
			r := runOn(t, c, tc.args...)
			if r.code != ExitOK {
				t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
			}
			golden(t, tc.name, r.stdout)
		})
	}
}

// TestRolloutStatusLockLineNamesFlags: the table's line about the Lease
// names the flags that change it, as package report's tables name the
// library's settings through the command line's flag table.
func TestRolloutStatusLockLineNamesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "status", "r1", "--no-lock"}, "Rollout r1: whether it runs is unknown (--no-lock: its Lease is not read)\n"},
		{[]string{"rollout", "status", "r1"}, "Rollout r1: no Lease found (the rollout is not running, or runs without a lock or with another --lock-namespace)\n"},
	} {
		r := runOn(t, newCluster(t, withRolloutMarks()), tc.args...)
		if r.code != ExitOK || !strings.HasPrefix(r.stdout, tc.want) {
			t.Errorf("%s: exit code %d, stdout:\n%s\nwant it to start %q; stderr:\n%s", strings.Join(tc.args, " "), r.code, r.stdout, tc.want, r.stderr)
		}
	}
}

func TestRolloutStatusWithoutID(t *testing.T) {
	c := newCluster(t)
	r := runOn(t, c, "rollout", "status")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "no node carries a rollout's marks") {
		t.Errorf("exit code %d, stderr %q; want a usage error: no rollout found", r.code, r.stderr)
	}
	c = newCluster(t, withRolloutMarks())
	n := c.node(t, "cpu-1")
	n.Annotations[udrain.UpgradedByAnnotation] = "r0"
	if _, err := c.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = runOn(t, c, "rollout", "status")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "2 rollouts (r0, r1)") {
		t.Errorf("exit code %d, stderr %q; want a usage error naming r0 and r1", r.code, r.stderr)
	}
}

// --watch prints the status, again when it changes, and ends when every
// domain is Done.
func TestRolloutStatusWatch(t *testing.T) {
	c := newCluster(t, withRolloutMarks())
	addLease(t, c, "", time.Minute)
	cfg, clk := testConfig(c.client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut testkit.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"rollout", "status", "r1", "--watch", "--interval", "1s"},
			genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, cfg)
	}()
	for !strings.Contains(out.String(), "Rollout r1:") {
		select {
		case <-ctx.Done():
			t.Fatalf("no status printed; stderr:\n%s", errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// ud-2 finishes: upgraded and uncordoned.
	for _, name := range []string{"gpu-3", "gpu-4"} {
		n := c.node(t, name)
		delete(n.Annotations, udrain.CordonedByAnnotation)
		n.Annotations[udrain.UpgradedByAnnotation] = "r1"
		n.Annotations[udrain.UpgradedAtAnnotation] = testNow.Format(time.RFC3339Nano)
		n.Annotations[udrain.RecoveredByAnnotation] = "r1"
		n.Spec.Unschedulable, n.Spec.Taints = false, n.Spec.Taints[:1]
		if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("the watch did not end; stdout:\n%s", out.String())
		case code := <-done:
			if code != ExitOK {
				t.Fatalf("exit code %d: %s", code, errOut.String())
			}
			if got := strings.Count(out.String(), "Rollout r1:"); got != 2 {
				t.Errorf("%d statuses printed, want 2 (before and after the change):\n%s", got, out.String())
			}
			if !strings.Contains(out.String(), "2 of 2 domains done") {
				t.Errorf("the last status is not complete:\n%s", out.String())
			}
			return
		case <-time.After(10 * time.Millisecond):
			clk.Step(time.Second)
		}
	}
}

// rollout's --order and --steering reach the rollout (a bad value is a
// usage error naming the flag, before any request), as do status's
// --order and --interval.
func TestRolloutOrderAndSteeringFlags(t *testing.T) {
	for _, args := range [][]string{
		{"rollout", "--upgrade-command", "true", "--order", "Random"},
		{"rollout", "--upgrade-command", "true", "--steering", "Sideways"},
		{"rollout", "status", "r1", "--order", "Random"},
		{"rollout", "status", "r1", "--watch", "--interval", "-1s"},
	} {
		flag := args[len(args)-2]
		r := runOn(t, newCluster(t), args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, flag) {
			t.Errorf("%v: exit code %d, stderr %q; want a usage error naming %s", args, r.code, r.stderr, flag)
		}
	}
}
