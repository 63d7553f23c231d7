package udrain_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// libraryFiles calls fn with the parsed non-test Go files of the library:
// every package but the command line, the test harnesses, the scripts and
// the examples.
func libraryFiles(t *testing.T, mode parser.Mode, fn func(path string, src []byte, f *ast.File, fset *token.FileSet)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch path {
			case "e2e", "hack", "examples", "cmd", ".git":
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
		f, err := parser.ParseFile(fset, path, src, mode)
		if err != nil {
			return err
		}
		fn(path, src, f, fset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// kubectlTexts are the library's texts that are kubectl drain's own,
// word for word (its filters' messages): they name kubectl's flags, which
// udrain's drain shares.
var kubectlTexts = map[string]bool{
	"DaemonSet-managed Pods (use --ignore-daemonsets to ignore)":       true,
	"Pods with local storage (use --delete-emptydir-data to override)": true,
	"Pods that declare no controller (use --force to override)":        true,
	"DeletionTimestamp older than --skip-wait-for-delete-timeout":      true,
}

// TestLibraryTextsNameNoCommandLine: the library's messages name its own
// settings, as Go code does; the command line maps them to its flags and
// commands (cmd/udrain/app's flag tables). A library text that names a
// flag or a command of udrain's command line reads wrong to every other
// caller. Commands of kubectl that a finding gives as its fix are not
// udrain's, and kubectl drain's own messages are kept word for word.
func TestLibraryTextsNameNoCommandLine(t *testing.T) {
	cli := regexp.MustCompile(`(^|[^-\w])--[a-z][a-z-]+|\budrain (uncordon|rollout|drain|plan|audit|wait-healthy|domains|gpu|serve-readiness|wait-server|rollout-status)\b`)
	libraryFiles(t, 0, func(path string, _ []byte, f *ast.File, fset *token.FileSet) {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err != nil || !cli.MatchString(text) || kubectlTexts[text] || strings.HasPrefix(strings.TrimSpace(text), "kubectl ") || strings.Contains(text, "(kubectl ") {
				return true
			}
			t.Errorf("%s: %q names a flag or command of the command line; name the library's setting, and map it in cmd/udrain/app", fset.Position(lit.Pos()), text)
			return true
		})
	})
}

// TestOneNetworkClassifier: network failures (a refused connection, a name
// that does not resolve, a TLS verification error) are classified in one
// place, internal/netclass; bootstrap and readiness both use it, and
// readiness does not import the server-wait package to do so.
func TestOneNetworkClassifier(t *testing.T) {
	classifiers := []string{"syscall.ECONNREFUSED", "x509.UnknownAuthorityError", "x509.HostnameError", ".IsNotFound"}
	libraryFiles(t, parser.ImportsOnly, func(path string, src []byte, f *ast.File, _ *token.FileSet) {
		if filepath.Dir(path) == filepath.Join("internal", "netclass") {
			return
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
		if filepath.Dir(path) == "readiness" {
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/udrain/udrain/bootstrap" {
					t.Errorf("%s imports bootstrap: readiness classifies with internal/netclass", path)
				}
			}
		}
	})
}

// TestNothingImportsTheCommandLine: the command line (cmd/...) builds on
// the library, never the other way round.
func TestNothingImportsTheCommandLine(t *testing.T) {
	libraryFiles(t, parser.ImportsOnly, func(path string, _ []byte, f *ast.File, _ *token.FileSet) {
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "github.com/udrain/udrain/cmd/") {
				t.Errorf("%s imports %s: the library must not depend on the command line", path, p)
			}
		}
	})
}

// TestReportIsALibrary: package report, the documents the command line
// prints, imports the standard library, sigs.k8s.io/yaml, the clock
// interface its live progress view is timed by (k8s.io/utils/clock, which
// package eviction's results already bring), Kubernetes' Node type that
// NewDomainList reads (k8s.io/api/core/v1, which those results already
// bring too) and the result types of the module's packages, no client and
// no command line; it writes only to the
// writers it is given, never exits, and keeps no package-level variables.
func TestReportIsALibrary(t *testing.T) {
	allowed := map[string]bool{"sigs.k8s.io/yaml": true, "k8s.io/utils/clock": true, "k8s.io/api/core/v1": true}
	for _, p := range []string{"", "/eviction", "/health", "/topology", "/gpu", "/bootstrap"} {
		allowed["github.com/udrain/udrain"+p] = true
	}
	forbidden := regexp.MustCompile(`\bos\.(Stdout|Stderr|Exit)\b|\bfmt\.Print|\blog\.|\bpanic\(`)
	libraryFiles(t, 0, func(path string, src []byte, f *ast.File, _ *token.FileSet) {
		if filepath.Dir(path) != "report" {
			return
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if std := !strings.Contains(strings.SplitN(p, "/", 2)[0], "."); !std && !allowed[p] {
				t.Errorf("%s imports %s: report may import the standard library, sigs.k8s.io/yaml, k8s.io/utils/clock, k8s.io/api/core/v1 and the module's root package, eviction, health, topology, gpu and bootstrap", path, p)
			}
		}
		if m := forbidden.Find(src); m != nil {
			t.Errorf("%s uses %s: report writes only to the io.Writer it is given and returns its errors", path, m)
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				t.Errorf("%s declares package-level variables: report keeps no global state", path)
			}
		}
	})
}

// The house rules of the library's code: functions a reader takes in at
// once, files of one concern. Table data (a composite literal that is a
// function's or file's bulk) counts like code: split it by concern too.
const (
	maxFuncLines = 80
	maxFileLines = 500
)

// TestLibraryFunctionsAndFilesAreShort fails on a non-test function of
// the library longer than maxFuncLines, or a non-test file longer than
// maxFileLines. The command line, the harnesses and the scripts are not
// the library (their command builders are long for their help texts).
func TestLibraryFunctionsAndFilesAreShort(t *testing.T) {
	libraryFiles(t, 0, func(path string, src []byte, f *ast.File, fset *token.FileSet) {
		if n := fset.Position(f.End()).Line; n > maxFileLines {
			t.Errorf("%s has %d lines (at most %d): split it by concern", path, n, maxFileLines)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("%s: func %s has %d lines (at most %d)", path, fn.Name.Name, n, maxFuncLines)
			}
		}
	})
}

// TestClusterViewIsBelowEviction: internal/clusterview, the read-only
// view of the cluster that eviction's calls read, knows nothing of plans,
// drains or their results: it imports no package of the module but
// internal ones and topology, and eviction builds its results over it.
func TestClusterViewIsBelowEviction(t *testing.T) {
	libraryFiles(t, parser.ImportsOnly, func(path string, _ []byte, f *ast.File, _ *token.FileSet) {
		if filepath.Dir(path) != filepath.Join("internal", "clusterview") {
			return
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ours := strings.CutPrefix(p, "github.com/udrain/udrain/")
			if ours && !strings.HasPrefix(rest, "internal/") && rest != "topology" {
				t.Errorf("%s imports %s: internal/clusterview may import only the module's internal packages and topology", path, p)
			}
		}
	})
}
