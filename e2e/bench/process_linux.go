package bench

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// setParentDeathSignal makes the kernel kill the child if the harness dies,
// so that no drainer outlives it.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processUsage returns a finished process's peak RSS (bytes) and CPU times.
func processUsage(ps *os.ProcessState) (maxRSS int64, user, system time.Duration) {
	if ps == nil {
		return 0, 0, 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return maxRSS, ps.UserTime(), ps.SystemTime()
}
