package apisurface

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// check type-checks src as the package github.com/udrain/udrain/p.
func check(t *testing.T, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check(Module+"/p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

// TestLines: one line per exported name, field, interface method and
// method of T or *T (promoted ones too), sorted; parameter names left out,
// also in function types; other packages by path; unexported names and
// the fields of unexported types left out.
func TestLines(t *testing.T) {
	pkg := check(t, `package p

import (
	"context"
	"time"
)

const Untyped = "u"
const Typed time.Duration = 2 * time.Second
const hidden = 1

type Kind string

const KindA Kind = "A"

var ErrX error

func F(ctx context.Context, names ...string) (n int, err error) { return 0, nil }
func G(hook func(setting string) string) func(body []byte) error { return nil }

type inner struct{ Promoted int }

func (inner) Hello() string { return "" }

type S struct {
	inner
	Public   map[string][]*time.Time
	private  int
	Callback func(ctx context.Context, e Kind)
}

func (s *S) Ptr(d time.Duration) error { return nil }
func (s S) Value() Kind                { return "" }
func (s S) unexported()                {}

type I interface {
	M(x int) (string, error)
	error
}

type List[T any] struct{ Items []T }

func (l *List[T]) Add(item T) {}

type Alias = S

type hiddenType struct{ Field int }
`)
	want := []string{
		"pkg p, const KindA Kind = \"A\"",
		"pkg p, const Typed time.Duration = 2000000000",
		"pkg p, const Untyped untyped string = \"u\"",
		"pkg p, func F(context.Context, ...string) (int, error)",
		"pkg p, func G(func(string) string) func([]byte) error",
		"pkg p, method (*List[...]) Add(T)",
		"pkg p, method (*S) Ptr(time.Duration) error",
		"pkg p, method (S) Hello() string",
		"pkg p, method (S) Value() Kind",
		"pkg p, type Alias = S",
		"pkg p, type I interface { Error, M }",
		"pkg p, type I interface, Error() string",
		"pkg p, type I interface, M(int) (string, error)",
		"pkg p, type Kind string",
		"pkg p, type List[T any] struct",
		"pkg p, type List[T any] struct, Items []T",
		"pkg p, type S struct",
		"pkg p, type S struct, Callback func(context.Context, Kind)",
		"pkg p, type S struct, Public map[string][]*time.Time",
		"pkg p, type S struct, embedded inner",
		"pkg p, var ErrX error",
	}
	if diff := cmp.Diff(want, Lines(pkg)); diff != "" {
		t.Errorf("Lines (-want +got):\n%s", diff)
	}
}

// TestIsLibrary: the packages an embedder imports, not the command line,
// the examples, the scripts, the tests' harness or internal packages, nor
// another module's.
func TestIsLibrary(t *testing.T) {
	for path, want := range map[string]bool{
		Module:                                  true,
		Module + "/eviction":                    true,
		Module + "/readiness/gate":              true,
		Module + "/redact/redacttest":           true,
		Module + "/internal/lease":              false,
		Module + "/cmd/udrain/app":              false,
		Module + "/examples/upgrade-script":     false,
		Module + "/hack/bench/bootstrap-outage": false,
		Module + "/e2e/fixture":                 false,
		Module + "x/eviction":                   false,
		"k8s.io/kubectl/pkg/drain":              false,
	} {
		if got := IsLibrary(path); got != want {
			t.Errorf("IsLibrary(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestName: a package's name in the record is its path in the module.
func TestName(t *testing.T) {
	for path, want := range map[string]string{Module: "udrain", Module + "/readiness/gate": "readiness/gate"} {
		if got := Name(path); got != want {
			t.Errorf("Name(%q) = %q, want %q", path, got, want)
		}
	}
}
