package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Platform is an operating system and architecture Go builds for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// exe is the file name of udrain on p.
func (p Platform) exe(name string) string {
	if p.OS == "windows" {
		return name + ".exe"
	}
	return name
}

// The platforms of the image, and of the kubectl plugin.
var (
	imagePlatforms  = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	pluginPlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}
)

// buildBinary builds cmd/udrain of the repository at root for p into
// dir/<os>_<arch>/udrain and returns the path: static (CGO_ENABLED=0), no
// file system paths (-trimpath), stamped with s. go build leaves an output
// that is up to date alone (it compares the build ID inside it), so a warm
// build costs a fraction of a second.
func buildBinary(ctx context.Context, root, dir string, p Platform, s Stamps) (string, error) {
	out := filepath.Join(dir, p.OS+"_"+p.Arch, p.exe("udrain"))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", s.ldflags(), "-o", out, "./cmd/udrain")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOFLAGS=", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build udrain for %s: %w\n%s", p, err, strings.TrimSpace(string(b)))
	}
	return out, nil
}
