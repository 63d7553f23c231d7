// Package bench is udrain's performance harness (issue 8): it measures
// udrain side by side with kubectl drain, in one run, on identical and fresh
// workloads of the end-to-end testbed, and reports ratios.
//
// The scenarios ([Env.RunAPICost], [Env.RunRollout], [Env.RunScale]) bring
// up LeaderWorkerSet-like workloads on kwok node pools ([Pool], built from
// package fixture), run udrain in a child process ([DrainerProcess],
// [RunDrainerJob]: its memory and CPU are its own) and kubectl drain through
// k8s.io/kubectl/pkg/drain ([KubectlDrainer]), count every API request of
// each drainer's client ([RequestCounter], installed with rest.Config.Wrap),
// and observe the groups from a pod recording ([Observe]: disruptions per
// group, the fewest healthy groups against the PDB's minAvailable, kwok's
// glitches apart). [Analyze] splits a udrain rollout's time per domain and
// compares it with its lower bound. [Results] is the JSON document the
// command udrain-bench writes, and [WriteMarkdown] renders it;
// [ParseGoBench] reads the Go benchmarks that hack/bench.sh runs first.
//
// The pure parts (request classification, observation, the bound, parsing,
// rendering) are plain functions tested with tables; the scenarios need a
// cluster and run from cmd/udrain-bench (make bench, hack/bench.sh). See
// docs/PERFORMANCE.md for what each figure means and the figures measured.
//
// What it is not for: it is not a load test of the API server, it asserts
// no goals (it reports them; a run fails only when a scenario cannot run),
// and it is not a library for users of udrain: it lives in the e2e module
// so that the root module never depends on kwok or a test harness.
package bench
