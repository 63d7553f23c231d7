// Package e2e holds udrain's end-to-end tests. They run against a real
// control plane that the [testbed] package brings up (a kwok cluster by
// default, see hack/cluster.sh) and build their workloads with the [fixture]
// package. This package proves the testbed itself (placement, the
// readiness-gate Stages, PDB status, the Eviction API's 429, StatefulSet
// replacement after the start-up delay, an apiserver restart) and udrain's
// guarantees on it: the scenarios on LeaderWorkerSet-shaped groups, on real
// LeaderWorkerSets of the LWS manager ([testbed.Testbed.LWS]: lws_test.go,
// lws_drills_test.go) and on RayClusters of the real KubeRay operator
// ([testbed.Testbed.KubeRay]), the
// fault tests, least privilege, the cache seam counted in the audit log
// (informers_test.go), and the two embedding examples run as users run them
// (platform_controller_test.go, controller_runtime_test.go). Native
// PodGroups need a cluster with the GenericWorkload gate: they are in the
// nativegroups package.
//
// Run: cd e2e && go test ./...   (see testbed.OptionsFromEnv for E2E_*).
//
// [testbed]: github.com/udrain/udrain/e2e/testbed
// [fixture]: github.com/udrain/udrain/e2e/fixture
package e2e
