// Package apisurface lists the exported API of the module's library
// packages, one line per exported name, field and method, in the form of
// Go's own api/go1.*.txt: the record that api/*.txt keeps, so that every
// change to what an embedder can use is a reviewed diff.
//
// The lines are written from the packages' export data (go list -export,
// read by the standard library's gc importer), so that neither the module
// nor its tests need a loader of their own. Parameter names are left out:
// renaming one changes no caller.
//
// What it is not for: deciding whether a change breaks callers (a diff of
// two records says what changed; golang.org/x/exp/apidiff judges it).
package apisurface

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
)

// Module is the module whose packages are listed.
const Module = "github.com/udrain/udrain"

// IsLibrary reports whether path, a package of the module, is one of its
// library packages: those an embedder imports, not the command line, the
// examples, the scripts or the internal packages.
func IsLibrary(path string) bool {
	rest, ok := strings.CutPrefix(path, Module)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return false
	}
	for _, elem := range strings.Split(strings.TrimPrefix(rest, "/"), "/") {
		switch elem {
		case "internal", "cmd", "examples", "hack", "e2e":
			return false
		}
	}
	return true
}

// Name is a package's name in the record: its path inside the module
// ("eviction", "readiness/gate"), or "udrain" for the module's root.
func Name(path string) string {
	if path == Module {
		return "udrain"
	}
	return strings.TrimPrefix(path, Module+"/")
}

// listed is what go list says of a package.
type listed struct {
	ImportPath string
	Export     string
	Error      *struct{ Err string }
}

// goList runs go list in dir with args and returns its output.
func goList(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// Load type-checks the module's library packages found under dir (a
// directory of the module) from their export data, which go list builds
// (or finds in the build cache): the packages, sorted by path.
func Load(dir string) ([]*types.Package, error) {
	out, err := goList(dir, "./...")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Fields(string(out)) {
		if IsLibrary(p) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		return nil, fmt.Errorf("no library package of %s under %s", Module, dir)
	}
	out, err = goList(dir, append([]string{"-export", "-deps", "-json=ImportPath,Export,Error"}, paths...)...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -export: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list -export: %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	pkgs := make([]*types.Package, len(paths))
	for i, path := range paths {
		if pkgs[i], err = imp.Import(path); err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
	}
	return pkgs, nil
}

// Lines is pkg's exported API, sorted, one line each: a line per
// exported constant, variable, function and type, per exported field of
// an exported struct, per method of an exported interface, and per
// exported method in the method sets of an exported type T and *T.
func Lines(pkg *types.Package) []string {
	w := &writer{pkg: pkg, prefix: "pkg " + Name(pkg.Path()) + ", "}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			w.emit("const %s %s = %s", name, w.typ(obj.Type()), obj.Val().ExactString())
		case *types.Var:
			w.emit("var %s %s", name, w.typ(obj.Type()))
		case *types.Func:
			w.emit("func %s%s", name, w.signature(obj.Type().(*types.Signature)))
		case *types.TypeName:
			w.typeName(obj)
		}
	}
	slices.Sort(w.lines)
	return slices.Compact(w.lines)
}

// Text is pkg's record as api/*.txt holds it: a header, then Lines.
func Text(pkg *types.Package) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The exported API of %s, one line per name (make api writes it).\n", pkg.Path())
	for _, l := range Lines(pkg) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// writer gathers one package's lines.
type writer struct {
	pkg    *types.Package
	prefix string
	lines  []string
}

func (w *writer) emit(format string, args ...any) {
	w.lines = append(w.lines, w.prefix+fmt.Sprintf(format, args...))
}

// qualify writes the package's own names bare and others by path.
func (w *writer) qualify(p *types.Package) string {
	if p == w.pkg {
		return ""
	}
	return p.Path()
}

// typ writes t as Go does, but for the parameter names of function
// types, which are left out as in signatures.
func (w *writer) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Signature:
		return "func" + w.signature(t)
	case *types.Pointer:
		return "*" + w.typ(t.Elem())
	case *types.Slice:
		return "[]" + w.typ(t.Elem())
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), w.typ(t.Elem()))
	case *types.Map:
		return "map[" + w.typ(t.Key()) + "]" + w.typ(t.Elem())
	case *types.Chan:
		prefix := map[types.ChanDir]string{types.SendRecv: "chan ", types.SendOnly: "chan<- ", types.RecvOnly: "<-chan "}[t.Dir()]
		return prefix + w.typ(t.Elem())
	case *types.Named:
		return w.name(t.Obj(), t.TypeArgs())
	case *types.Alias:
		return w.name(t.Obj(), t.TypeArgs())
	case *types.Struct:
		fields := make([]string, t.NumFields())
		for i := range fields {
			f := t.Field(i)
			if fields[i] = w.typ(f.Type()); !f.Embedded() {
				fields[i] = f.Name() + " " + fields[i]
			}
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	}
	return types.TypeString(t, w.qualify)
}

// name writes a named type, qualified by its package's path unless it is
// the package's own, with its type arguments.
func (w *writer) name(obj *types.TypeName, args *types.TypeList) string {
	s := obj.Name()
	if obj.Pkg() != nil {
		if q := w.qualify(obj.Pkg()); q != "" {
			s = q + "." + s
		}
	}
	if args.Len() > 0 {
		parts := make([]string, args.Len())
		for i := range parts {
			parts[i] = w.typ(args.At(i))
		}
		s += "[" + strings.Join(parts, ", ") + "]"
	}
	return s
}

// signature is sig without parameter names: "(int, ...string) error".
func (w *writer) signature(sig *types.Signature) string {
	var b strings.Builder
	if tp := sig.TypeParams(); tp != nil {
		b.WriteString(w.typeParams(tp))
	}
	b.WriteString(w.tuple(sig.Params(), sig.Variadic()))
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + w.typ(res.At(0).Type()))
	default:
		b.WriteString(" " + w.tuple(res, false))
	}
	return b.String()
}

func (w *writer) tuple(t *types.Tuple, variadic bool) string {
	parts := make([]string, t.Len())
	for i := range parts {
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			parts[i] = "..." + w.typ(typ.(*types.Slice).Elem())
			continue
		}
		parts[i] = w.typ(typ)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (w *writer) typeParams(tp *types.TypeParamList) string {
	parts := make([]string, tp.Len())
	for i := range parts {
		p := tp.At(i)
		parts[i] = p.Obj().Name() + " " + w.typ(p.Constraint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// typeName writes an exported type: its kind, its exported fields or
// interface methods, and the exported methods of T and *T.
func (w *writer) typeName(obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		w.emit("type %s = %s", name, w.typ(types.Unalias(obj.Type())))
		return
	}
	named := obj.Type().(*types.Named)
	decl := name
	if tp := named.TypeParams(); tp != nil {
		decl += w.typeParams(tp)
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit("type %s struct", decl)
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded():
				w.emit("type %s struct, embedded %s", decl, w.typ(f.Type()))
			case f.Exported():
				w.emit("type %s struct, %s %s", decl, f.Name(), w.typ(f.Type()))
			}
		}
	case *types.Interface:
		var names []string
		for i := range u.NumMethods() {
			m := u.Method(i)
			names = append(names, m.Name())
			w.emit("type %s interface, %s%s", decl, m.Name(), w.signature(m.Type().(*types.Signature)))
		}
		for i := range u.NumEmbeddeds() {
			// An embedded interface's methods are listed above; a
			// constraint's type terms are not methods.
			if e := u.EmbeddedType(i); !types.IsInterface(e) {
				w.emit("type %s interface, embedded %s", decl, w.typ(e))
			}
		}
		w.emit("type %s interface { %s }", decl, strings.Join(names, ", "))
		return
	default:
		w.emit("type %s %s", decl, w.typ(u))
	}
	w.methods(named, decl)
}

// methods writes the exported methods in the method sets of T and *T,
// promoted ones included, each once, with the receiver it needs.
func (w *writer) methods(named *types.Named, decl string) {
	recv := decl
	if named.TypeParams() != nil {
		recv = named.Obj().Name() + "[...]"
	}
	value := types.NewMethodSet(named)
	for i := range value.Len() {
		if m := value.At(i).Obj(); m.Exported() {
			w.emit("method (%s) %s%s", recv, m.Name(), w.signature(m.Type().(*types.Signature)))
		}
	}
	ptr := types.NewMethodSet(types.NewPointer(named))
	for i := range ptr.Len() {
		m := ptr.At(i).Obj()
		if m.Exported() && value.Lookup(m.Pkg(), m.Name()) == nil {
			w.emit("method (*%s) %s%s", recv, m.Name(), w.signature(m.Type().(*types.Signature)))
		}
	}
}
