package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// Kubeconfig writes a kubeconfig that reaches the API server at server (a
// URL) with a bearer token, not verifying its certificate, and returns the
// file's path. Its one cluster, user and context are all named "test", and
// the context is the current one.
func Kubeconfig(t testing.TB, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "` + server + `", insecure-skip-tls-verify: true}}]
users: [{name: test, user: {token: t}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
