// Package manifests holds the tests of the YAML a user applies, examples/
// and deploy/, that need no cluster:
//
//   - every pod template of every example passes Pod Security "restricted"
//     (k8s.io/pod-security-admission's own checks), and every pod template
//     of deploy/ passes the level its namespace enforces;
//   - every image they name is pinned: a tag other than latest, or a digest;
//   - the namespace udrain-system is a base of its own (deploy/namespace):
//     no other base renders it, so "kubectl delete -k deploy/rollout"
//     leaves it, and the Leases of every rollout, in place;
//   - kustomize's images: field retargets every base at another registry,
//     tag and digest, as deploy/README.md shows;
//   - the readiness-gate Deployment probes the controller's /healthz and
//     /readyz, requires its replicas on different nodes and runs at a
//     PriorityClass of the base's own.
//
// It lives in the e2e module so that k8s.io/pod-security-admission and
// kustomize never enter the root go.mod, and in a package of its own so that
// it needs no cluster (the e2e package's TestMain brings one up).
//
//	cd e2e && go test ./manifests/
package manifests
