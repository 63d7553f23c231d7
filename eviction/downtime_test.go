package eviction

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// TestMayBeHealthy: mayBeHealthy is false only where health.Evaluate
// finds the group unhealthy, and true for a healthy group.
func TestMayBeHealthy(t *testing.T) {
	group := func(change func(ms []*corev1.Pod) []*corev1.Pod) *topology.Group {
		var ms []*corev1.Pod
		for w := range 3 {
			ms = append(ms, lwsPod(0, w, 3, fmt.Sprintf("node-1-%d", w+1), ""))
		}
		if change != nil {
			ms = change(ms)
		}
		g := &topology.Group{ID: topology.GroupID{Namespace: testNS, Name: "llm-0"}, Size: 3, Members: ms}
		for _, m := range ms {
			if m.Labels[topology.LWSWorkerIndexLabel] == "0" {
				g.Leader = m
			}
		}
		return g
	}
	for _, tc := range []struct {
		name string
		g    *topology.Group
		size int
		want bool
	}{
		{name: "whole and Ready", g: group(nil), want: true},
		{name: "a member missing", g: group(func(ms []*corev1.Pod) []*corev1.Pod { return ms[:2] })},
		{name: "no member", g: group(func([]*corev1.Pod) []*corev1.Pod { return nil })},
		{name: "bigger than it says", g: group(nil), size: 4},
		{name: "a member Pending", g: group(func(ms []*corev1.Pod) []*corev1.Pod {
			ms[1].Status.Phase, ms[1].Spec.NodeName = corev1.PodPending, ""
			return ms
		})},
		{name: "a member terminating", g: group(func(ms []*corev1.Pod) []*corev1.Pod {
			ms[2].DeletionTimestamp = &metav1.Time{}
			return ms
		})},
		{name: "the leader not Ready", g: group(func(ms []*corev1.Pod) []*corev1.Pod {
			for i := range ms[0].Status.Conditions {
				if ms[0].Status.Conditions[i].Type == corev1.PodReady {
					ms[0].Status.Conditions[i].Status = corev1.ConditionFalse
				}
			}
			return ms
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mayBeHealthy(tc.g, tc.size)
			if got != tc.want {
				t.Errorf("mayBeHealthy = %v, want %v", got, tc.want)
			}
			if h := health.Evaluate(tc.g, health.Options{MinSize: tc.size}).Healthy; h != tc.want {
				t.Errorf("health.Evaluate says healthy %v: the case does not test what it says", h)
			}
		})
	}
}
