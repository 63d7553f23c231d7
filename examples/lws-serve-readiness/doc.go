// Package lwsservereadiness holds manifest.yaml, a LeaderWorkerSet of
// multi-node vLLM that keeps udrain's placement contract: leaders spread
// over upgrade domains with each group packed into its leader's domain, the
// leader's readiness delegated to "udrain serve-readiness" running as a
// native sidecar that checks every member of the group, and a
// PodDisruptionBudget over the leaders. Its test parses the manifest and
// checks that wiring against the udrain command line and package topology.
//
//	kubectl apply -f examples/lws-serve-readiness/manifest.yaml
//
// It needs LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) installed and nodes
// labelled topology.udrain.dev/upgrade-domain. For workloads whose pod spec
// cannot take a sidecar, see examples/lws-readiness-gate/manifest.yaml.
//
// Every pod passes Pod Security "restricted" (e2e/manifests checks every
// example). vLLM's image runs as root unless told otherwise, so its
// containers run as uid 1000 with USER and HOME set (see the manifest's
// comments). A cluster whose NCCL uses RDMA usually adds the IPC_LOCK
// capability, which only the "privileged" level admits. The vLLM image is
// pinned to a release (v0.11.0): move it to the one you run.
package lwsservereadiness
