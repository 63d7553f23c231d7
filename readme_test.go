package udrain_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/udrain/udrain/cmd/udrain/app"
)

func readme(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadmeSnippets: every Go snippet of the README is cut from a
// runnable example, which compiles and runs with the tests: each snippet
// follows a marker "<!-- from FILE FUNC -->", and its lines (but "// ..."
// elisions) appear in that function, in order.
func TestReadmeSnippets(t *testing.T) {
	block := regexp.MustCompile("(?s)(?:<!-- from (\\S+) (\\S+) -->\\n)?```go\\n(.*?)```")
	matches := block.FindAllStringSubmatch(readme(t), -1)
	if len(matches) == 0 {
		t.Fatal("no Go snippets found in README.md")
	}
	for _, m := range matches {
		file, fn, snippet := m[1], m[2], m[3]
		if file == "" {
			t.Errorf("a Go snippet has no <!-- from FILE FUNC --> marker:\n%s", snippet)
			continue
		}
		t.Run(file+"/"+fn, func(t *testing.T) {
			body := funcSource(t, file, fn)
			var lines []string
			for _, l := range strings.Split(body, "\n") {
				lines = append(lines, strings.TrimSpace(l))
			}
			i := 0
			for _, want := range strings.Split(snippet, "\n") {
				want = strings.TrimSpace(want)
				if want == "" || want == "// ..." {
					continue
				}
				for i < len(lines) && lines[i] != want {
					i++
				}
				if i == len(lines) {
					t.Errorf("README line %q is not in %s %s (or not in this order)", want, file, fn)
					return
				}
				i++
			}
		})
	}
}

// funcSource returns the source of function fn in file, comments included.
func funcSource(t *testing.T, file, fn string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn && fd.Recv == nil {
			return string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset])
		}
	}
	t.Fatalf("no function %s in %s", fn, file)
	return ""
}

// TestReadmeLinks: every relative link of the README leads to a file or
// folder of the repository.
func TestReadmeLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, m := range link.FindAllStringSubmatch(readme(t), -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		if _, err := os.Stat(filepath.FromSlash(target)); err != nil {
			t.Errorf("README links to %s: %v", target, err)
		}
	}
}

// TestReadmeCommands: every make target the README names exists, every
// udrain command it names is one of the CLI, and its exit codes are the
// CLI's.
func TestReadmeCommands(t *testing.T) {
	text := readme(t)
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("`make ([a-z-]+)`").FindAllStringSubmatch(text, -1) {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).Match(makefile) {
			t.Errorf("README names make %s, which the Makefile does not have", m[1])
		}
	}
	root := app.NewCommand(genericiooptions.NewTestIOStreamsDiscard(), app.Config{Name: "udrain"})
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile("`udrain ([a-z-]+)").FindAllStringSubmatch(text, -1) {
		seen[m[1]] = true
		cmd, _, err := root.Find([]string{m[1]})
		if err != nil || cmd == root {
			t.Errorf("README names udrain %s, which is not a command of the CLI", m[1])
		}
	}
	for _, c := range root.Commands() {
		if !seen[c.Name()] && !c.Hidden && c.Name() != "help" && c.Name() != "version" {
			t.Errorf("the CLI's command %s is missing from the README's command table", c.Name())
		}
	}
	for _, code := range []struct {
		n    int
		word string
	}{{app.ExitOK, "done"}, {app.ExitError, "error"}, {app.ExitUsage, "usage"}, {app.ExitBlocked, "a PDB"}, {app.ExitContract, "placement"}, {app.ExitInterrupted, "interrupted"}} {
		if want := fmt.Sprintf("**%d** %s", code.n, code.word); !strings.Contains(text, want) {
			t.Errorf("README's exit codes do not say %q", want)
		}
	}
}
