package udrain_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneNetworkClassifier: network failures (a refused connection, a name
// that does not resolve, a TLS verification error) are classified in one
// place, internal/netclass; bootstrap and readiness both use it, and
// readiness does not import the server-wait package to do so.
func TestOneNetworkClassifier(t *testing.T) {
	classifiers := []string{"syscall.ECONNREFUSED", "x509.UnknownAuthorityError", "x509.HostnameError", ".IsNotFound"}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch path {
			case "e2e", "hack", "examples", "cmd", ".git", filepath.Join("internal", "netclass"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range classifiers {
			if c == ".IsNotFound" {
				if strings.Contains(string(src), "DNSError") && strings.Contains(string(src), c) {
					t.Errorf("%s reads a DNS error's IsNotFound: classify with internal/netclass", path)
				}
				continue
			}
			if strings.Contains(string(src), c) {
				t.Errorf("%s uses %s: classify network failures with internal/netclass", path, c)
			}
		}
		f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if filepath.Dir(path) == "readiness" {
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/udrain/udrain/bootstrap" {
					t.Errorf("%s imports bootstrap: readiness classifies with internal/netclass", path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
