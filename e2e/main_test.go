package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/udrain/udrain/e2e/testbed"
)

// bed is the cluster of this package's tests.
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
