package udrain_test

import (
	"flag"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/udrain/udrain/internal/apisurface"
)

// updateAPI rewrites api/*.txt from the packages (make api).
var updateAPI = flag.Bool("update", false, "rewrite api/*.txt, the record of the exported API (make api)")

// apiDir holds the record of the library's exported API: one file per
// package, api/<path in the module>.txt (api/udrain.txt for the root).
const apiDir = "api"

var (
	libraryOnce sync.Once
	libraryPkgs []*types.Package
	libraryErr  error
)

// libraryPackages are the module's library packages, type-checked once
// per test binary.
func libraryPackages(t *testing.T) []*types.Package {
	t.Helper()
	libraryOnce.Do(func() { libraryPkgs, libraryErr = apisurface.Load(".") })
	if libraryErr != nil {
		t.Fatal(libraryErr)
	}
	return libraryPkgs
}

// recordedAPI reads the files of api/, by package name.
func recordedAPI(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(apiDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(apiDir, path)
		files[strings.TrimSuffix(filepath.ToSlash(rel), ".txt")] = string(data)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

// TestAPIRecorded: api/*.txt is the library's exported API, so that every
// change to what an embedder can use shows as a diff of those files in
// review (with its CHANGELOG line). Run make api after changing the
// surface; it rewrites them.
func TestAPIRecorded(t *testing.T) {
	recorded := recordedAPI(t)
	if *updateAPI {
		if err := os.RemoveAll(apiDir); err != nil {
			t.Fatal(err)
		}
	}
	for _, pkg := range libraryPackages(t) {
		name := apisurface.Name(pkg.Path())
		text := apisurface.Text(pkg)
		if *updateAPI {
			file := filepath.Join(apiDir, filepath.FromSlash(name)+".txt")
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, ok := recorded[name]
		delete(recorded, name)
		if !ok {
			t.Errorf("package %s has no api/%s.txt: run make api, and add a CHANGELOG line", name, name)
			continue
		}
		if diff := lineDiff(old, text); diff != "" {
			t.Errorf("the exported API of %s is not api/%s.txt's (-recorded +now):\n%srun make api, and add a CHANGELOG line for the change", name, name, diff)
		}
	}
	if !*updateAPI {
		for _, name := range slices.Sorted(maps.Keys(recorded)) {
			t.Errorf("api/%s.txt records a package that is no longer a library package: run make api", name)
		}
	}
}

// lineDiff lists the lines only in old ("-") and then those only in now
// ("+"): the records are sets of lines.
func lineDiff(old, now string) string {
	var b strings.Builder
	for _, d := range []struct{ sign, from, in string }{{"- ", old, now}, {"+ ", now, old}} {
		in := map[string]bool{}
		for _, l := range strings.Split(d.in, "\n") {
			in[l] = true
		}
		for _, l := range strings.Split(d.from, "\n") {
			if !in[l] {
				b.WriteString(d.sign + l + "\n")
			}
		}
	}
	return b.String()
}
