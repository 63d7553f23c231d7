package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Repository is where releases are published; the image's reference is
// Repository:Version.
const Repository = "ghcr.io/udrain/udrain"

// The OCI annotation (and label) keys of the image.
const (
	labelTitle       = "org.opencontainers.image.title"
	labelDescription = "org.opencontainers.image.description"
	labelVersion     = "org.opencontainers.image.version"
	labelRevision    = "org.opencontainers.image.revision"
	labelCreated     = "org.opencontainers.image.created"
	labelSource      = "org.opencontainers.image.source"
	labelURL         = "org.opencontainers.image.url"
	labelRefName     = "org.opencontainers.image.ref.name"
	// containerdImageName makes `ctr import` (kind load image-archive)
	// name the image of a layout.
	containerdImageName = "io.containerd.image.name"
)

// ImageBuild is what `release image` writes under <out>/image and records
// in build.json.
type ImageBuild struct {
	// Key is the hash of everything the image is made of (the binaries,
	// the stamps, this tool): an unchanged key means nothing to redo.
	Key    string `json:"key"`
	Stamps Stamps `json:"stamps"`
	// Reference is Repository:Version.
	Reference string `json:"reference"`
	// IndexDigest is the digest of the image index (what a registry
	// shows for the multi-platform tag).
	IndexDigest string `json:"indexDigest"`
	// Layout is the OCI layout folder, relative to the output folder.
	Layout    string          `json:"layout"`
	Platforms []PlatformImage `json:"platforms"`
}

// PlatformImage is one platform's image.
type PlatformImage struct {
	Platform string `json:"platform"`
	// Digest of the image manifest; ConfigDigest is the image ID Docker
	// shows after docker load.
	Digest       string `json:"digest"`
	ConfigDigest string `json:"configDigest"`
	// LayerBytes is the compressed size of its one layer.
	LayerBytes int64 `json:"layerBytes"`
	// Tarball is the Docker archive (docker load, podman load, kind load
	// image-archive), relative to the output folder.
	Tarball string `json:"tarball"`
}

// imageConfig is the image configuration of udrain on p.
func imageConfig(p Platform, s Stamps) *v1.ConfigFile {
	created := v1.Time{Time: s.Time()}
	return &v1.ConfigFile{
		Architecture: p.Arch,
		OS:           p.OS,
		Created:      created,
		Config: v1.Config{
			User:       imageUser,
			Entrypoint: []string{binaryPath},
			Env:        []string{"PATH=/usr/local/bin"},
			WorkingDir: "/home/nonroot",
			Labels:     imageLabels(s),
		},
		History: []v1.History{{Created: created, CreatedBy: "hack/release image", Comment: "udrain " + s.Version + " (static binary, /etc/passwd of the nonroot user)"}},
		RootFS:  v1.RootFS{Type: "layers"},
	}
}

// imageLabels are the OCI labels of the image (and annotations of its
// manifests and index); udrain version prints the same version, commit
// and date.
func imageLabels(s Stamps) map[string]string {
	return map[string]string{
		labelTitle:       "udrain",
		labelDescription: "Drain Kubernetes upgrade domains without breaking gang-scheduled groups",
		labelVersion:     s.Version,
		labelRevision:    s.Commit,
		labelCreated:     s.BuildDate,
		labelSource:      "https://github.com/udrain/udrain",
		labelURL:         "https://github.com/udrain/udrain",
	}
}

// platformImage assembles the image of one platform from its binary.
func platformImage(p Platform, binary string, s Stamps) (v1.Image, error) {
	gz, err := rootFS(binary, s.Time())
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(gz)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, imageConfig(p, s))
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: imageConfig(p, s).History[0]})
	if err != nil {
		return nil, err
	}
	// Append records a history entry of its own: set the one history
	// entry again, with the commit time.
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.History = imageConfig(p, s).History
	cfg.Created = v1.Time{Time: s.Time()}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, imageLabels(s)).(v1.Image), nil
}

// buildImage builds the binaries of imagePlatforms into binDir, and the
// image into outDir (layout and tarballs), unless build.json there has the
// same key already.
func buildImage(ctx context.Context, root, binDir, outDir string, s Stamps, logf func(string, ...any)) (*ImageBuild, error) {
	binaries := make([]string, len(imagePlatforms))
	for i, p := range imagePlatforms {
		b, err := buildBinary(ctx, root, binDir, p, s)
		if err != nil {
			return nil, err
		}
		binaries[i] = b
	}
	key, err := imageKey(root, s, binaries)
	if err != nil {
		return nil, err
	}
	if prev, err := readImageBuild(outDir); err == nil && prev.Key == key && prev.complete(outDir) {
		logf("image %s is up to date (index %s)", prev.Reference, prev.IndexDigest)
		return prev, nil
	}
	ref, err := name.NewTag(Repository + ":" + s.Version)
	if err != nil {
		return nil, err
	}
	b := &ImageBuild{Key: key, Stamps: s, Reference: ref.String(), Layout: "oci"}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(outDir)), ".image-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	for i, p := range imagePlatforms {
		img, err := platformImage(p, binaries[i], s)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigName()
		if err != nil {
			return nil, err
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, err
		}
		size, err := layers[0].Size()
		if err != nil {
			return nil, err
		}
		tarName := fmt.Sprintf("udrain-%s-%s-%s.tar", s.Version, p.OS, p.Arch)
		if err := tarball.WriteToFile(filepath.Join(tmp, tarName), ref, img); err != nil {
			return nil, fmt.Errorf("write %s: %w", tarName, err)
		}
		b.Platforms = append(b.Platforms, PlatformImage{Platform: p.String(), Digest: digest.String(), ConfigDigest: cfg.String(), LayerBytes: size, Tarball: tarName})
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch},
		}})
	}
	idx = mutate.Annotations(idx, imageLabels(s)).(v1.ImageIndex)
	digest, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	b.IndexDigest = digest.String()
	lp, err := layout.Write(filepath.Join(tmp, b.Layout), empty.Index)
	if err != nil {
		return nil, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		labelRefName:        s.Version,
		containerdImageName: ref.String(),
	})); err != nil {
		return nil, fmt.Errorf("write the OCI layout: %w", err)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	// Replace the output folder whole, so that it never mixes two builds.
	if err := os.RemoveAll(outDir); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, outDir); err != nil {
		return nil, err
	}
	logf("image %s: index %s", b.Reference, b.IndexDigest)
	return b, nil
}

// imageKey hashes what the image is made of: this tool's source (its code
// decides the image's shape), the stamps and the binaries.
func imageKey(root string, s Stamps, binaries []string) (string, error) {
	h := sha256.New()
	sources, err := filepath.Glob(filepath.Join(root, "hack", "release", "*.go"))
	if err != nil {
		return "", err
	}
	sources = slices.DeleteFunc(sources, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	if len(sources) == 0 {
		return "", fmt.Errorf("no source of hack/release in %s", root)
	}
	files := append(sources, filepath.Join(root, "hack", "release", "go.sum"))
	for _, f := range append(files, binaries...) {
		fmt.Fprintf(h, "%s\x00", filepath.Base(f))
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", s.Version, s.Commit, s.BuildDate)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func readImageBuild(outDir string) (*ImageBuild, error) {
	data, err := os.ReadFile(filepath.Join(outDir, "build.json"))
	if err != nil {
		return nil, err
	}
	var b ImageBuild
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// complete reports whether every file the build names is there.
func (b *ImageBuild) complete(outDir string) bool {
	paths := []string{filepath.Join(outDir, b.Layout, "index.json")}
	for _, p := range b.Platforms {
		paths = append(paths, filepath.Join(outDir, p.Tarball))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return len(b.Platforms) > 0
}

// errUsage is a mistake on the command line.
var errUsage = errors.New("usage")
