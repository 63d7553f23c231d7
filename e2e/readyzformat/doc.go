// Package readyzformat holds one test: that the readiness package's /readyz
// handler answers byte for byte as the kube-apiserver's healthz handler
// (k8s.io/apiserver/pkg/server/healthz) does for the same checks, with
// readiness.Options.ExposeMemberErrors (without it, a failing member's own
// path shows only the class of the failure). It lives
// in the e2e module so that k8s.io/apiserver never enters the root go.mod,
// and in a package of its own so that it needs no cluster (the e2e package's
// TestMain brings one up).
//
//	cd e2e && go test ./readyzformat/
package readyzformat
