package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/udrain/udrain/e2e/testbed"
)

// bed is the cluster of this package's tests.
//
// Each test has a namespace and a node pool of its own (bed.ForTest), its
// rollouts name their domains and an ID of their own, and its readiness-gate
// controller watches its namespace only: so most tests call t.Parallel and
// share the cluster at once (make e2e runs them with -parallel 4; most of
// their time is waiting for pods to start, stop and recover). Those that
// act on the whole cluster run first, alone, before any parallel test
// starts: the control-plane restarts (TestRolloutSurvivesAPIServerRestart,
// TestRecoverySurvivesAPIServerRestart, TestAPIServerRestart, and
// TestResumeWaitsForUnscheduledGroups, which stops the scheduler) and
// TestDeployBundles, which applies and deletes the bases of deploy/ (the
// udrain-system namespace, where every rollout keeps its Lease, stays),
// and TestGPUDiagnosisMatchesDaemonSetController, whose nodes have no
// upgrade-domain label (a plan of any other test would refuse the layout
// while they exist).
var bed *testbed.Testbed

func TestMain(m *testing.M) {
	opts, err := testbed.OptionsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	bed = testbed.New(opts)
	os.Exit(bed.Run(m))
}
