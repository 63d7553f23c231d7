package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Stamps are what a release build writes into the binary (udrain version)
// and the image's labels: they must agree.
type Stamps struct {
	// Version is the release, from the VERSION file at the repository root.
	Version string `json:"version"`
	// Commit is the git commit of the tree ("-dirty" appended when tracked
	// files differ from it).
	Commit string `json:"commit"`
	// BuildDate is the commit's time in UTC, RFC 3339: a build of the same
	// commit is dated the same, whenever it runs.
	BuildDate string `json:"buildDate"`
}

// appPackage is where the stamps go (-ldflags -X).
const appPackage = "github.com/udrain/udrain/cmd/udrain/app"

// releaseVersion is a release version: v, semver major.minor.patch, an
// optional pre-release.
var releaseVersion = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// readVersion reads and checks the VERSION file of the repository root.
func readVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("read the release version: %w", err)
	}
	v := strings.TrimSpace(string(data))
	if !releaseVersion.MatchString(v) {
		return "", fmt.Errorf("VERSION holds %q: write one release version such as v0.1.0 (v, then major.minor.patch)", v)
	}
	return v, nil
}

// readStamps reads the stamps of the repository at root from VERSION and git.
func readStamps(ctx context.Context, root string) (Stamps, error) {
	v, err := readVersion(root)
	if err != nil {
		return Stamps{}, err
	}
	out, err := git(ctx, root, "log", "-1", "--format=%H %ct")
	if err != nil {
		return Stamps{}, err
	}
	sha, secs, ok := strings.Cut(strings.TrimSpace(out), " ")
	unix, perr := strconv.ParseInt(secs, 10, 64)
	if !ok || perr != nil {
		return Stamps{}, fmt.Errorf("git log printed %q, want a commit and its time", out)
	}
	status, err := git(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return Stamps{}, err
	}
	if strings.TrimSpace(status) != "" {
		sha += "-dirty"
	}
	return Stamps{Version: v, Commit: sha, BuildDate: time.Unix(unix, 0).UTC().Format(time.RFC3339)}, nil
}

// Time is the build date as a time.
func (s Stamps) Time() time.Time {
	t, err := time.Parse(time.RFC3339, s.BuildDate)
	if err != nil {
		return time.Unix(0, 0).UTC()
	}
	return t
}

// ldflags are the linker flags of a release binary: no symbol table or
// DWARF (a smaller binary; panics still print their stack), and the stamps.
func (s Stamps) ldflags() string {
	return fmt.Sprintf("-s -w -X %[1]s.version=%[2]s -X %[1]s.commit=%[3]s -X %[1]s.buildDate=%[4]s", appPackage, s.Version, s.Commit, s.BuildDate)
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("git %s in %s: %w %s (the release build needs the git checkout of udrain)", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out), nil
}
