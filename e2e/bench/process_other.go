//go:build !linux

package bench

import (
	"os"
	"os/exec"
	"time"
)

func setParentDeathSignal(*exec.Cmd) {}

// processUsage returns a finished process's CPU times; the peak RSS is
// known on Linux only.
func processUsage(ps *os.ProcessState) (maxRSS int64, user, system time.Duration) {
	if ps == nil {
		return 0, 0, 0
	}
	return 0, ps.UserTime(), ps.SystemTime()
}
