package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The tests check the image `make image` writes: they build it (a no-op
// when _output/image is up to date) into the checkout's _output, as make
// does, and read it back the way a registry client or container runtime
// would.

var (
	buildOnce sync.Once
	built     *ImageBuild
	buildErr  error
)

const checkout = "../.."

func outputDir(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join(checkout, "_output"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// theImage builds the image once for every test of the package.
func theImage(t *testing.T) (*ImageBuild, string) {
	t.Helper()
	out := outputDir(t)
	buildOnce.Do(func() {
		root, _ := filepath.Abs(checkout)
		s, err := readStamps(context.Background(), root)
		if err != nil {
			buildErr = err
			return
		}
		built, buildErr = buildImage(context.Background(), root, filepath.Join(out, "bin"), filepath.Join(out, "image"), s, t.Logf)
	})
	if buildErr != nil {
		t.Fatalf("build the image: %v", buildErr)
	}
	return built, filepath.Join(out, "image")
}

// platformImages reads the OCI layout as a registry client would: the
// layout's one entry is the index tagged with the version; the index
// holds one image per platform.
func platformImages(t *testing.T, b *ImageBuild, dir string) (v1.ImageIndex, map[string]v1.Image) {
	t.Helper()
	top, err := layout.ImageIndexFromPath(filepath.Join(dir, b.Layout))
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json of the layout holds %+v, want one image index", m.Manifests)
	}
	if got := m.Manifests[0].Annotations[labelRefName]; got != b.Stamps.Version {
		t.Errorf("the layout names the index %q (%s), want the version %q", got, labelRefName, b.Stamps.Version)
	}
	if got := m.Manifests[0].Annotations[containerdImageName]; got != b.Reference {
		t.Errorf("the layout names the index %q for containerd, want %q", got, b.Reference)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		imgs[d.Platform.OS+"/"+d.Platform.Architecture] = img
	}
	return idx, imgs
}

// TestImageIndex: both architectures, under the digests build.json
// records, with OCI media types and the labels as annotations.
func TestImageIndex(t *testing.T) {
	b, dir := theImage(t)
	idx, imgs := platformImages(t, b, dir)
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if digest.String() != b.IndexDigest {
		t.Errorf("index digest %s, build.json says %s", digest, b.IndexDigest)
	}
	var want, got []string
	for _, p := range imagePlatforms {
		want = append(want, p.String())
	}
	for p := range imgs {
		got = append(got, p)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("platforms of the index (-want +got):\n%s", diff)
	}
	for _, p := range b.Platforms {
		img := imgs[p.Platform]
		d, _ := img.Digest()
		mt, _ := img.MediaType()
		if d.String() != p.Digest || mt != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest %s (%s), want %s (%s)", p.Platform, d, mt, p.Digest, types.OCIManifestSchema1)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(imageLabels(b.Stamps), m.Annotations); diff != "" {
			t.Errorf("%s: manifest annotations (-want +got):\n%s", p.Platform, diff)
		}
	}
}

// TestImageRootFS: for each platform, the configuration (non-root user,
// the binary as entrypoint, labels), and the files: the binary for that
// architecture, static, and no shell or any other program.
func TestImageRootFS(t *testing.T) {
	b, dir := theImage(t)
	_, imgs := platformImages(t, b, dir)
	for _, p := range imagePlatforms {
		t.Run(p.String(), func(t *testing.T) {
			img := imgs[p.String()]
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			checkConfig(t, cfg, p, b.Stamps)
			rootfs, headers := extract(t, img)
			checkFiles(t, rootfs, p)
			// The binary belongs to root: the image's user cannot change it.
			for _, h := range headers {
				if filepath.Clean(h.Name) == "usr/local/bin/udrain" && (h.Uid != 0 || h.Mode != 0o755) {
					t.Errorf("udrain is owned by %d with mode %o, want root and 0755", h.Uid, h.Mode)
				}
			}
		})
	}
}

func checkConfig(t *testing.T, cfg *v1.ConfigFile, p Platform, s Stamps) {
	t.Helper()
	if cfg.OS != p.OS || cfg.Architecture != p.Arch {
		t.Errorf("config platform %s/%s, want %s", cfg.OS, cfg.Architecture, p)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root, numeric so that runAsNonRoot can verify it)", cfg.Config.User)
	}
	if diff := cmp.Diff([]string{"/usr/local/bin/udrain"}, cfg.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if len(cfg.Config.Cmd) != 0 {
		t.Errorf("cmd %q, want none (the arguments are udrain's)", cfg.Config.Cmd)
	}
	if diff := cmp.Diff(imageLabels(s), cfg.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if !cfg.Created.Time.Equal(s.Time()) {
		t.Errorf("created %s, want the commit's time %s", cfg.Created.Time, s.BuildDate)
	}
}

// extract writes the image's file system into a new folder and returns
// it, with the headers of its entries.
func extract(t *testing.T, img v1.Image) (string, []*tar.Header) {
	t.Helper()
	dir := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	return dir, untar(t, rc, dir)
}

// untar writes the folders and regular files of a tar stream into dir and
// returns their headers; any other entry (a link, a device) or a path
// outside dir fails the test.
func untar(t *testing.T, r io.Reader, dir string) []*tar.Header {
	t.Helper()
	var headers []*tar.Header
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("the archive holds %q, outside its root", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("the archive holds %s of tar type %q: want only folders and regular files", h.Name, h.Typeflag)
		}
		if err := os.Chmod(path, fs.FileMode(h.Mode)&fs.ModePerm); err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
	}
}

// checkFiles: exactly the binary and the user files; the only executable
// file is udrain, built for p and statically linked.
func checkFiles(t *testing.T, rootfs string, p Platform) {
	t.Helper()
	var files, executables []string
	err := filepath.WalkDir(rootfs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == rootfs {
			return err
		}
		rel, _ := filepath.Rel(rootfs, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		files = append(files, rel)
		if info.Mode()&0o111 != 0 {
			executables = append(executables, rel)
		}
		switch filepath.Base(rel) {
		case "sh", "bash", "ash", "dash", "zsh", "busybox", "toybox":
			t.Errorf("the image holds a shell: %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"etc/group", "etc/passwd", "usr/local/bin/udrain"}, files); diff != "" {
		t.Errorf("files of the image (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"usr/local/bin/udrain"}, executables); diff != "" {
		t.Errorf("executable files (-want +got):\n%s", diff)
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(passwd), "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin") {
		t.Errorf("/etc/passwd names no user 65532:\n%s", passwd)
	}
	f, err := elf.Open(filepath.Join(rootfs, "usr/local/bin/udrain"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch]
	if f.Machine != want {
		t.Errorf("udrain is built for %s, want %s (%s)", f.Machine, want, p)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("udrain is dynamically linked (program header %s); the image has no libc", prog.Type)
		}
	}
}

// TestImageRuns runs the entrypoint of this machine's platform from the
// unpacked file system, as a runtime would: chrooted into it, as the image's
// user (when the test runs as root; else as the test's user, outside a
// chroot). "udrain version" must print the stamps the labels carry, and a
// shell must not be found.
func TestImageRuns(t *testing.T) {
	b, dir := theImage(t)
	_, imgs := platformImages(t, b, dir)
	here := runtime.GOOS + "/" + runtime.GOARCH
	img, ok := imgs[here]
	if !ok {
		t.Skipf("the image has no %s variant to run here", here)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rootfs, _ := extract(t, img)
	run := func(argv ...string) ([]byte, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = cfg.Config.Env
		if os.Geteuid() == 0 {
			cmd.Path = argv[0]
			cmd.Dir = "/"
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: imageUID, Gid: imageUID}}
		} else {
			cmd.Path = filepath.Join(rootfs, argv[0])
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, errors.Join(err, errors.New(stderr.String()))
		}
		return out, nil
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the entrypoint runs as this user, outside a chroot")
	}
	out, err := run(append(slices.Clone(cfg.Config.Entrypoint), "version", "-o", "json")...)
	if err != nil {
		t.Fatalf("%s version -o json: %v", cfg.Config.Entrypoint[0], err)
	}
	var v struct{ Kind, Version, Commit, BuildDate, Platform string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("udrain version -o json printed %q: %v", out, err)
	}
	labels := cfg.Config.Labels
	want := [4]string{labels[labelVersion], labels[labelRevision], labels[labelCreated], here}
	if diff := cmp.Diff(want, [4]string{v.Version, v.Commit, v.BuildDate, v.Platform}); diff != "" {
		t.Errorf("udrain version (version, commit, buildDate, platform) disagrees with the image's labels (-labels +version):\n%s", diff)
	}
	if v.Version != b.Stamps.Version || v.Commit == "" || v.BuildDate == "" {
		t.Errorf("udrain version %+v, want version %s and a commit and date", v, b.Stamps.Version)
	}
	if os.Geteuid() == 0 {
		for _, sh := range []string{"/bin/sh", "/usr/bin/sh", "/bin/bash"} {
			if _, err := run(sh, "-c", "true"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("running %s in the image: %v, want not found", sh, err)
			}
		}
	}
}

// TestImageTarballs: each Docker archive is the platform's image of the
// layout (same config, so the same image ID after docker load), tagged
// with the release reference.
func TestImageTarballs(t *testing.T) {
	b, dir := theImage(t)
	_, imgs := platformImages(t, b, dir)
	for _, p := range b.Platforms {
		path := filepath.Join(dir, p.Tarball)
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
		if err != nil {
			t.Fatalf("%s: %v", p.Tarball, err)
		}
		if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{b.Reference}) {
			t.Errorf("%s: manifest.json %+v, want one image tagged %s", p.Tarball, m, b.Reference)
		}
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := img.ConfigName()
		want, _ := imgs[p.Platform].ConfigName()
		if cfg.String() != p.ConfigDigest || cfg != want {
			t.Errorf("%s: config %s, want %s (the layout's %s)", p.Tarball, cfg, p.ConfigDigest, want)
		}
		got, _ := img.Layers()
		wantLayers, _ := imgs[p.Platform].Layers()
		if len(got) != len(wantLayers) {
			t.Fatalf("%s: %d layers, the layout's image has %d", p.Tarball, len(got), len(wantLayers))
		}
		for i := range got {
			g, _ := got[i].DiffID()
			w, _ := wantLayers[i].DiffID()
			if g != w {
				t.Errorf("%s: layer %d is %s, the layout's is %s", p.Tarball, i, g, w)
			}
		}
	}
}

// TestImageReproducible builds the image a second time, from binaries
// linked again into another folder, and expects the same bytes: the same
// index digest, the same image digests and the same tarballs.
func TestImageReproducible(t *testing.T) {
	b, dir := theImage(t)
	root, _ := filepath.Abs(checkout)
	tmp := t.TempDir()
	again, err := buildImage(t.Context(), root, filepath.Join(tmp, "bin"), filepath.Join(tmp, "image"), b.Stamps, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if again.IndexDigest != b.IndexDigest {
		t.Errorf("second build: index %s, first %s", again.IndexDigest, b.IndexDigest)
	}
	if diff := cmp.Diff(b.Platforms, again.Platforms); diff != "" {
		t.Errorf("second build's images differ (-first +second):\n%s", diff)
	}
	for _, p := range b.Platforms {
		if a, c := fileSum(t, filepath.Join(dir, p.Tarball)), fileSum(t, filepath.Join(tmp, "image", p.Tarball)); a != c {
			t.Errorf("%s: sha256 %s, then %s", p.Tarball, a, c)
		}
	}
	t.Logf("two builds: index %s", again.IndexDigest)
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	h := sha256.New()
	if err := hashFile(h, path); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
