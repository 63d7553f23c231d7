// Package e2e holds udrain's end-to-end tests. They run against a real
// control plane that the [testbed] package brings up (a kwok cluster by
// default, see hack/cluster.sh) and build their workloads with the [fixture]
// package. This package proves the testbed itself: placement, the
// readiness-gate Stages, PDB status, the Eviction API's 429, StatefulSet
// replacement after the start-up delay, and an apiserver restart.
//
// Run: cd e2e && go test ./...   (see testbed.OptionsFromEnv for E2E_*).
//
// [testbed]: github.com/udrain/udrain/e2e/testbed
// [fixture]: github.com/udrain/udrain/e2e/fixture
package e2e
