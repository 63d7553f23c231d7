package testbed_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
)

var bed *testbed.Testbed

// A test package's TestMain: bring the cluster up, run the tests, always
// tear it down. (Not run here: it needs the control plane.)
func Example_testMain() {
	var m *testing.M // TestMain's argument
	opts, err := testbed.OptionsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bed = testbed.New(opts)
	os.Exit(bed.Run(m))
}

// A scenario test: its own namespace and nodes, a workload, a fault.
func ExampleTestbed_ForTest() {
	var t *testing.T // the test's argument
	tt := bed.ForTest(t)
	ctx := t.Context()
	gpu := fixture.H100()
	nodes := fixture.Nodes{Pool: tt.Name, UDs: 4, PerUD: 2, GPU: &gpu}
	if _, err := nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	w := fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: 4, Size: 2, Pool: tt.Name, GPUsPerPod: 8, ReadyDelay: 5 * time.Second}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	rec, err := fixture.RecordPods(ctx, tt.Client, tt.Name, w.Selector())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	tt.OnFailure("pod-timeline.txt", rec.WriteTimeline)

	restart, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := tt.Testbed().RestartAPIServer(restart); err != nil {
		t.Fatal(err)
	}
}
