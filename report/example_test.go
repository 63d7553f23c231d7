package report_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// A Go program reads what "udrain rollout -o json" printed into a
// RolloutReport: its result is package eviction's RolloutResult.
func ExampleRolloutReport() {
	out := []byte(`{
  "apiVersion": "udrain.dev/v1alpha3",
  "kind": "RolloutResult",
  "upgradeCommand": "./upgrade.sh",
  "labelKey": "topology.udrain.dev/upgrade-domain",
  "result": {"id": "kubelet-1.37", "completed": false, "started": "2026-07-01T10:00:00Z",
    "domains": [{"domain": "ud-1", "state": "Done"}, {"domain": "ud-2", "state": "Failed"}]},
  "summary": {"domainsTotal": 2, "domainsDone": 1, "durationSeconds": 754},
  "error": {"reason": "Error", "exitCode": 1, "message": "the upgrade command for domain ud-2 exited with status 3"}
}`)
	var r report.RolloutReport
	if err := json.Unmarshal(out, &r); err != nil {
		fmt.Println(err)
		return
	}
	if r.Kind != report.KindRolloutResult {
		fmt.Println("not a rollout:", r.Kind)
		return
	}
	for _, d := range r.Result.Domains {
		fmt.Println(d.Domain, d.State)
	}
	if r.Error != nil && r.Error.Reason != report.ReasonInterrupted {
		fmt.Printf("rollout %s stopped after %s (exit code %d)\n", r.Result.ID, report.FormatDuration(r.Summary.Duration.Duration()), r.Error.ExitCode)
	}
	// Output:
	// ud-1 Done
	// ud-2 Failed
	// rollout kubelet-1.37 stopped after 12m34s (exit code 1)
}

// A program prints a document as udrain does, in the format a user asks
// for.
func ExamplePrint() {
	doc := report.UncordonResult{TypeMeta: report.NewTypeMeta(report.KindUncordonResult), Domain: "ud-2", Uncordoned: []string{"gpu-3", "gpu-4"}}
	for _, name := range []string{"table", "yaml"} {
		format, err := report.ParseFormat(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := report.Print(os.Stdout, format, doc); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// Domain ud-2: uncordoned 2 nodes: gpu-3, gpu-4
	// apiVersion: udrain.dev/v1alpha3
	// domain: ud-2
	// kind: UncordonResult
	// uncordoned:
	// - gpu-3
	// - gpu-4
}

// A controller logs a drain's events in the lines udrain prints without a
// terminal.
func ExampleFormatEvent() {
	e := eviction.Event{Time: time.Date(2026, 7, 1, 10, 0, 3, 0, time.UTC), Type: eviction.EventEvicted, Domain: "ud-1", Stage: eviction.StagePhase1,
		Pod: &topology.PodRef{Namespace: "inference", Name: "llama-0"}, Node: "gpu-1"}
	fmt.Println(report.FormatEvent(e, time.RFC3339))
	// Output:
	// 2026-07-01T10:00:03Z Evicted domain=ud-1 phase=1 pod=inference/llama-0 node=gpu-1
}
