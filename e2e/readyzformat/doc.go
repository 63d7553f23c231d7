// Package readyzformat holds one test: that the readiness package's /readyz
// handler answers byte for byte as the kube-apiserver's healthz handler
// (k8s.io/apiserver/pkg/server/healthz) does for the same checks. It is a
// module of its own so that k8s.io/apiserver never enters the root go.mod.
//
//	cd e2e/readyzformat && go test ./...
package readyzformat
