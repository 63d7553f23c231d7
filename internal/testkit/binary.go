package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// UdrainBinary builds the udrain command into a temporary directory and
// returns its path; $UDRAIN_BINARY, if set, is returned instead (an older
// build, to measure what changed).
func UdrainBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("UDRAIN_BINARY"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "udrain")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/udrain/udrain/cmd/udrain").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
