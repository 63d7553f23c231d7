package testkit_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyTestsImportTheTestKit: the kit and its sub-packages serve tests
// only (kube's builders set the pod states that only package health may
// read; TestNoOtherPackageJudgesPodHealth passes over them for that), so
// no other file of the repository imports them; and package testkit
// itself imports nothing of the module, so that the tests inside every
// package can use it without an import cycle.
func TestOnlyTestsImportTheTestKit(t *testing.T) {
	const kit = "github.com/udrain/udrain/internal/testkit"
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		inKit := strings.HasPrefix(rel, filepath.Join("internal", "testkit")+string(filepath.Separator))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !inKit && (p == kit || strings.HasPrefix(p, kit+"/")) {
				t.Errorf("%s imports %s: only tests may", rel, p)
			}
			if filepath.Dir(rel) == filepath.Join("internal", "testkit") && (p == "github.com/udrain/udrain" || strings.HasPrefix(p, "github.com/udrain/udrain/")) {
				t.Errorf("%s imports %s: package testkit imports nothing of the module", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
