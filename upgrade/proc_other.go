//go:build !unix

package upgrade

import "os/exec"

func inProcessGroup(cmd *exec.Cmd) {}

// terminate stops cmd where there are no process groups to signal.
func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }
