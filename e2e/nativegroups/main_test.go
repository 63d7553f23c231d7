package nativegroups

import (
	"fmt"
	"os"
	"testing"

	"github.com/udrain/udrain/e2e/testbed"
)

// bed is the cluster of this package's tests: GenericWorkload on in the
// kube-apiserver, kube-controller-manager and kube-scheduler, and
// scheduling.k8s.io/v1beta1 served.
var bed *testbed.Testbed

func TestMain(m *testing.M) {
	opts, err := testbed.OptionsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nativegroups:", err)
		os.Exit(2)
	}
	opts.FeatureGates = "GenericWorkload=true"
	opts.RuntimeConfig = "scheduling.k8s.io/v1beta1=true"
	if os.Getenv("E2E_CLUSTER") != "" && opts.Provider == testbed.Kwok {
		// One E2E_CLUSTER for `go test ./...`: this package's cluster, made
		// with other flags, must not be package e2e's.
		opts.ClusterName += "-gates"
	}
	bed = testbed.New(opts)
	os.Exit(bed.Run(m))
}
