package udrain_test

import (
	"fmt"
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

// imageDigest is a content digest: sha256: and 64 lower-case hex digits.
var imageDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// checkImageReference checks what follows ghcr.io/udrain/udrain in a
// reference (ref: ":v0.1.0", ":v0.1.0@sha256:...") against the release
// version: the release's tag, alone or with a digest (which pins the bytes
// while the tag still says which release they are). A digest alone cannot
// be told from another release's, and is refused as a wrong tag is.
func checkImageReference(ref, version string) error {
	tag, digest, hasDigest := strings.Cut(ref, "@")
	if tag != ":"+version {
		return fmt.Errorf("want ghcr.io/udrain/udrain:%s (VERSION), or that tag with a digest", version)
	}
	if hasDigest && !imageDigest.MatchString(digest) {
		return fmt.Errorf("digest %q after the tag: want sha256: and 64 lower-case hex digits", digest)
	}
	return nil
}

// TestCheckImageReference: the tag of VERSION, with or without a digest;
// nothing else.
func TestCheckImageReference(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		ref string
		ok  bool
	}{
		{":v0.1.0", true},
		{":v0.1.0" + digest, true},
		{":v0.2.0" + digest, false}, // a digest does not excuse another release's tag
		{":v0.2.0", false},
		{":latest", false},
		{digest, false},               // no tag: which release is it?
		{":v0.1.0@sha256:abc", false}, // not a digest
		{":v0.1.0" + strings.ToUpper(digest), false},
		{":v0.1.0" + digest + "0", false},
	} {
		if err := checkImageReference(c.ref, "v0.1.0"); (err == nil) != c.ok {
			t.Errorf("ghcr.io/udrain/udrain%s: %v, want accepted %v", c.ref, err, c.ok)
		}
	}
}

// TestImageReferencesFollowVersion: every manifest, Dockerfile and
// document that names udrain's image names the version the build stamps
// (VERSION), by tag or by tag and digest, never latest or another release,
// so that what a user applies runs the binary the repository describes.
func TestImageReferencesFollowVersion(t *testing.T) {
	version := releaseVersion(t)
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
				if err := checkImageReference(m[1], version); err != nil {
					t.Errorf("%s:%d names %s: %v", path, i+1, m[0], err)
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
