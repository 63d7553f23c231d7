//go:build unix

package upgrade

import (
	"os/exec"
	"syscall"
)

// inProcessGroup runs cmd in a process group of its own, so that
// terminate reaches what the shell started too (a script's children would
// otherwise outlive it and hold its output open).
func inProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate sends SIGTERM to cmd's process group.
func terminate(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}
