// Command controller-runtime is a controller-runtime manager that embeds
// udrain: it reconciles upgrade requests, declared in ConfigMaps, into
// resumable rollouts over the upgrade domains, reading the cluster through
// the manager's cache. Package upgrade is its reconciler and says what a
// request looks like and what the controller writes back.
//
//	go run . --kubeconfig ~/.kube/config
//	kubectl create configmap kubelet-1-37 --from-literal=targetVersion=1.37.2 \
//	    --from-literal=domains=ud-0,ud-1,ud-2
//	kubectl label configmap kubelet-1-37 udrain.dev/upgrade-request=
//	kubectl get configmap kubelet-1-37 -o jsonpath='{.metadata.annotations.udrain\.dev/upgrade-status}'
//	kubectl get events --field-selector reportingComponent=udrain-upgrade
//
// It lives in a Go module of its own, so that udrain's module never
// requires controller-runtime; its tests run without a cluster (go test
// ./...), and e2e/controller_runtime_test.go runs it against the project's
// control plane.
//
// Flags: --kubeconfig, --domain-label, --recovery-timeout, --retry-after,
// --leader-elect and --leader-election-namespace, --metrics-bind-address,
// --health-probe-bind-address, and klog's (-v). It exits 0 when stopped
// by SIGINT or SIGTERM, 1 on an error, 2 on bad arguments.
package main
