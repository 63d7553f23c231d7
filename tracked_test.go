package udrain_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoBuiltBinaryTracked fails when a file git tracks is a compiled
// program (an ELF or Mach-O executable, a Windows PE): a go build run in
// the tree and committed by accident (e2e/udrain-demo was, once). Built
// binaries go to bin/, _output/ or a cache, which .gitignore keeps out.
func TestNoBuiltBinaryTracked(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	out, err := exec.Command(git, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	magics := map[string][]byte{
		"ELF":    []byte("\x7fELF"),
		"Mach-O": {0xcf, 0xfa, 0xed, 0xfe},
		"PE":     []byte("MZ"),
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 10 {
		t.Fatalf("git ls-files lists %d files; want the repository's", len(files))
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue // deleted in the worktree, not committed yet
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		f.Close()
		for kind, magic := range magics {
			if bytes.HasPrefix(head[:n], magic) {
				t.Errorf("%s is a built %s binary tracked by git: git rm --cached it and build into bin/ or _output/", name, kind)
			}
		}
	}
}
