// Command lws-readiness-gate runs the udrain readiness-gate controller
// (package github.com/udrain/udrain/readiness/gate) against a cluster: it
// sets the condition udrain.dev/group-ready on the leader of every
// LeaderWorkerSet group (or Ray cluster) from the status of the group's
// pods, so that a PodDisruptionBudget over the leaders counts healthy
// groups. It is the program a platform team would build around the package;
// "udrain readiness-gate-controller" is the same thing in the udrain CLI.
//
//	go run ./examples/lws-readiness-gate --kubeconfig ~/.kube/config --namespace inference --selector leaderworkerset.sigs.k8s.io/name=vllm
//
// Without --kubeconfig it uses $KUBECONFIG or ~/.kube/config, and inside a
// pod its service account. With --lease-namespace, replicas elect one writer
// through a Lease (run it that way whenever more than one replica may run).
// Each condition it writes is printed on a line of its own; logs go to
// stderr. It stops on SIGINT or SIGTERM, after its last write.
//
// The leader pod template must declare the gate:
//
//	spec:
//	  readinessGates:
//	  - conditionType: udrain.dev/group-ready
//
// and the controller needs the permissions of readiness/gate/rbac.yaml.
//
// manifest.yaml (the controller's Deployment and a multi-node vLLM
// LeaderWorkerSet gated on it) passes Pod Security "restricted", as every
// example does (e2e/manifests checks them): vLLM runs as uid 1000 with USER
// and HOME set, as in examples/lws-serve-readiness; RDMA's IPC_LOCK
// capability, where a cluster needs it, is admitted only at "privileged".
// The vLLM image is pinned to a release (v0.11.0).
package main
