package manifests

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// digestRef is a content digest as an image reference carries it.
var digestRef = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// pinned reports whether an image reference names one build of the image:
// a digest (name@sha256:...), or a tag other than latest. An untagged
// reference means latest. A registry's port is not a tag
// (registry.example.com:5000/app is untagged).
func pinned(ref string) error {
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if !digestRef.MatchString(digest) {
			return fmt.Errorf("digest %q is not sha256: and 64 lower-case hex digits", digest)
		}
		return nil
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag = name[i+1:]
	}
	switch {
	case tag == "":
		return fmt.Errorf("no tag: it runs whatever latest is when the node pulls it")
	case strings.EqualFold(tag, "latest"):
		return fmt.Errorf("latest runs whatever it is when the node pulls it")
	}
	return nil
}

// TestPinned: what counts as pinned.
func TestPinned(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		ref string
		ok  bool
	}{
		{"vllm/vllm-openai:v0.11.0", true},
		{"ghcr.io/udrain/udrain:v0.1.0", true},
		{"registry.example.com:5000/team/app:1.2", true},
		{"vllm/vllm-openai@" + digest, true},
		{"ghcr.io/udrain/udrain:v0.1.0@" + digest, true},
		{"vllm/vllm-openai:latest", false},
		{"vllm/vllm-openai:Latest", false},
		{"vllm/vllm-openai", false},
		{"registry.example.com:5000/team/app", false},
		{"vllm/vllm-openai@sha256:abc", false},
		{"vllm/vllm-openai@" + strings.ToUpper(digest), false},
	} {
		if err := pinned(c.ref); (err == nil) != c.ok {
			t.Errorf("pinned(%q) = %v, want pinned %v", c.ref, err, c.ok)
		}
	}
}

// TestImagesArePinned: every container of every pod template under
// examples/ and deploy/ names its image by a tag other than latest, or by a
// digest: applying a manifest twice runs the same software, and a new
// release of a third-party image (vLLM, GPUStack) reaches a cluster only
// when someone moves the tag. udrain's own image is also held to VERSION by
// the root module's TestImageReferencesFollowVersion.
func TestImagesArePinned(t *testing.T) {
	seen := 0
	for _, dir := range []string{"examples", "deploy"} {
		for _, o := range readTree(t, dir) {
			pts, err := podTemplates(o.u)
			if err != nil {
				t.Errorf("%s: %s: %v", o.file, o, err)
				continue
			}
			for _, pt := range pts {
				for _, c := range containers(&pt.spec) {
					seen++
					if err := pinned(c.image); err != nil {
						t.Errorf("%s: %s, %s.%s %q: image %q is not pinned: %v", o.file, o, pt.path, c.field, c.name, c.image, err)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no container found under examples/ or deploy/")
	}
}
