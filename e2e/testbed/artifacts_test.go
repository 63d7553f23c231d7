package testbed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/e2e/fixture"
)

func TestDumpCluster(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)) }
	c := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{fixture.UpgradeDomainLabel: "ud0", fixture.PoolLabel: "p"}},
			Spec:   corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "llm-0-0", Namespace: "ns", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n0"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "ns"}, LastTimestamp: at(9), Reason: "Killing",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "llm-0-0"}, Message: "second"},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "early", Namespace: "ns"}, LastTimestamp: at(1), Reason: "Scheduled",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "llm-0-0"}, Message: "first"},
	)
	dir := t.TempDir()
	if err := dumpCluster(context.Background(), c, dir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	events := read("events.txt")
	if i, j := strings.Index(events, "first"), strings.Index(events, "second"); i < 0 || j < 0 || i > j {
		t.Errorf("events.txt not in time order:\n%s", events)
	}
	if nodes := read("nodes.txt"); !strings.Contains(nodes, "n0") || !strings.Contains(nodes, "ud0") || !strings.Contains(nodes, "false") {
		t.Errorf("nodes.txt lacks the node, its UD or that it is cordoned:\n%s", nodes)
	}
	if pods := read("pods.txt"); !strings.Contains(pods, "llm-0-0") || !strings.Contains(pods, "u1") {
		t.Errorf("pods.txt lacks the pod or its UID:\n%s", pods)
	}
	for _, f := range []string{"pods.yaml", "nodes.yaml", "pdbs.txt", "workloads.yaml"} {
		read(f)
	}
}
