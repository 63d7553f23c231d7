// Package upgradescript holds upgrade.sh, a shell wrapper around
// "udrain rollout --upgrade-command ..." for CI and cron jobs, and its
// tests. It is not a Go library: the Go files are the tests, which check
// the script's syntax with bash -n and run it against a stub udrain built
// from testdata/stub-udrain, one case per exit code:
//
//	./examples/upgrade-script/upgrade.sh './upgrade-nodes.sh 1.37.2' --ignore-daemonsets --timeout 30m
//
// Exit code 3 (a PodDisruptionBudget blocked a drain past --timeout) waits
// with "udrain wait-healthy" and runs the same rollout again, which resumes
// it; exit code 4 (placement contract violated) prints "udrain audit".
package upgradescript
