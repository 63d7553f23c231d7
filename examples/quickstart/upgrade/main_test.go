package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/examples/internal/exampletest"
)

// TestRun lists the fake cluster's two domains, plans them, rolls them
// with the callback, and a second run with the same ID skips both. The
// end-to-end test (e2e's TestQuickstartUpgrade) runs the program against
// the testbed.
func TestRun(t *testing.T) {
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1})
	var out bytes.Buffer
	if err := run(t.Context(), client, "qs-1", nil, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"domain ud-1: 2 nodes, healthy true",
		"domain ud-2: 2 nodes, healthy true",
		"plan qs-1: [ud-1 ud-2], upgraded already: []",
		"upgrading ud-1: [node-a1 node-a2]",
		"upgrading ud-2: [node-b1 node-b2]",
		"DomainDone domain=ud-2",
		"rolled 2 domains (0 skipped), 2 groups disrupted",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output has no %q:\n%s", want, out.String())
		}
	}
	for _, n := range []string{"node-a1", "node-a2", "node-b1", "node-b2"} {
		node, err := client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Annotations[udrain.UpgradedByAnnotation] != "qs-1" || node.Spec.Unschedulable {
			t.Errorf("node %s: annotations %v, unschedulable %v; want marked upgraded by qs-1, schedulable", n, node.Annotations, node.Spec.Unschedulable)
		}
	}

	out.Reset()
	if err := run(t.Context(), client, "qs-1", nil, &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"upgraded already: [ud-1 ud-2]", "rolled 0 domains (2 skipped), 0 groups disrupted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the second run's output has no %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "upgrading") {
		t.Errorf("the second run upgraded a domain again:\n%s", out.String())
	}
}
