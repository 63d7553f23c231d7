package udrain_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// imageRef is a reference to udrain's published image, with its tag or
// digest if any.
var imageRef = regexp.MustCompile(`ghcr\.io/udrain/udrain([:@][^\s"'` + "`" + `)\]]*)?`)

// releaseVersion reads VERSION, the release the build stamps
// (hack/release) and the manifests name.
func releaseVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("VERSION")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(data))
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(v) {
		t.Fatalf("VERSION holds %q, want a release version such as v0.1.0", v)
	}
	return v
}

// TestImageReferencesFollowVersion: every manifest, Dockerfile and
// document that names udrain's image names the version the build stamps
// (VERSION), never latest or another release, so that what a user applies
// runs the binary the repository describes.
func TestImageReferencesFollowVersion(t *testing.T) {
	want := ":" + releaseVersion(t)
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch path {
			case ".git", "_output", "bin", filepath.Join("e2e", "_artifacts"):
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".md":
		default:
			if filepath.Base(path) != "Dockerfile" {
				return nil
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range imageRef.FindAllStringSubmatch(line, -1) {
				found++
				// Prose may name the repository; a manifest without a tag
				// would run latest.
				if m[1] == "" && filepath.Ext(path) == ".md" {
					continue
				}
				if m[1] != want {
					t.Errorf("%s:%d names %s, want ghcr.io/udrain/udrain%s (VERSION)", path, i+1, m[0], want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no reference to ghcr.io/udrain/udrain found: the examples and deploy/ should name the image")
	}
}

// TestChangelogHasVersion: CHANGELOG.md has a section for the release
// VERSION names.
func TestChangelogHasVersion(t *testing.T) {
	v := releaseVersion(t)
	data, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^## \[?` + regexp.QuoteMeta(v) + `\]?`).Match(data) {
		t.Errorf("CHANGELOG.md has no section \"## %s\"", v)
	}
}

// TestDockerfileStampsVersion: the Dockerfile's default VERSION (what a
// "docker build" without --build-arg stamps into udrain version and the
// image's labels) is VERSION, in each of its stages.
func TestDockerfileStampsVersion(t *testing.T) {
	want := releaseVersion(t)
	data, err := os.ReadFile(filepath.Join("hack", "release", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	args := regexp.MustCompile(`(?m)^ARG VERSION=(\S+)`).FindAllStringSubmatch(string(data), -1)
	if len(args) == 0 {
		t.Fatal("hack/release/Dockerfile has no ARG VERSION=...: the build would stamp no version")
	}
	for _, a := range args {
		if a[1] != want {
			t.Errorf("hack/release/Dockerfile: ARG VERSION=%s, want %s (VERSION)", a[1], want)
		}
	}
}
