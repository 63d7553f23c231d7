package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// The checks below are krew's rules for a plugin manifest, written from
// krew v0.4.3's validation (internal/index/validation), its index's
// validator (cmd/validate-krew-manifest) and its installer
// (internal/installation): what `kubectl krew install --manifest` and the
// krew-index CI refuse.

var (
	krewSafeName = regexp.MustCompile(`^[\w-]+$`)
	krewSHA256   = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// krew parses versions with a leading v as semantic versions.
	krewSemver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	// Windows device names krew refuses as plugin names.
	krewWindowsForbidden = []string{"CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
		"LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"}
	// The platforms krew's index validator knows.
	krewPlatforms = []Platform{{"windows", "386"}, {"windows", "amd64"}, {"windows", "arm64"}, {"linux", "386"}, {"linux", "amd64"},
		{"linux", "arm"}, {"linux", "arm64"}, {"darwin", "386"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
)

// validateKrewManifest returns every rule of krew's that the manifest in
// file breaks.
func validateKrewManifest(file string, data []byte) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var m KrewPlugin
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return []error{fmt.Errorf("not a krew Plugin: %w", err)}
	}
	name := strings.TrimSuffix(filepath.Base(file), ".yaml")
	if filepath.Ext(file) != ".yaml" {
		bad("manifest file %s: the extension must be .yaml", file)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" {
		bad("apiVersion %q: krew supports krew.googlecontainertools.github.com/v1alpha2", m.APIVersion)
	}
	if m.Kind != "Plugin" {
		bad("kind %q, want Plugin", m.Kind)
	}
	if !krewSafeName.MatchString(name) || slices.ContainsFunc(krewWindowsForbidden, func(f string) bool { return strings.EqualFold(f, name) }) {
		bad("plugin name %q is not allowed", name)
	}
	if m.Metadata.Name != name {
		bad("metadata.name %q, want %q (the file's name)", m.Metadata.Name, name)
	}
	if m.Spec.ShortDescription == "" || strings.ContainsAny(m.Spec.ShortDescription, "\r\n") {
		bad("shortDescription %q: it must be one line, not empty", m.Spec.ShortDescription)
	}
	if !krewSemver.MatchString(m.Spec.Version) {
		bad("version %q is not a semantic version with a leading v", m.Spec.Version)
	}
	if len(m.Spec.Platforms) == 0 {
		bad("no platforms")
	}
	for i, p := range m.Spec.Platforms {
		if p.URI == "" {
			bad("platforms[%d]: uri is empty", i)
		}
		if !krewSHA256.MatchString(p.Sha256) {
			bad("platforms[%d]: sha256 %q is not 64 lower-case hex digits", i, p.Sha256)
		}
		if p.Bin == "" {
			bad("platforms[%d]: bin is empty", i)
		}
		if p.Files != nil && len(p.Files) == 0 {
			bad("platforms[%d]: files must be unset or not empty", i)
		}
		for _, f := range p.Files {
			if f.From == "" || f.To == "" {
				bad("platforms[%d]: a file operation without from or to: %+v", i, f)
			}
			if f.To != filepath.Clean(f.To) {
				bad("platforms[%d]: to %q is not a clean path", i, f.To)
			}
		}
		if len(p.Selector.MatchLabels) == 0 {
			bad("platforms[%d]: empty selector", i)
		}
		for k := range p.Selector.MatchLabels {
			if k != "os" && k != "arch" {
				bad("platforms[%d]: selector key %q (krew selects on os and arch only)", i, k)
			}
		}
		if !slices.ContainsFunc(krewPlatforms, func(q Platform) bool { return selects(p.Selector, q) }) {
			bad("platforms[%d]: selector %v matches no platform krew supports", i, p.Selector.MatchLabels)
		}
	}
	for _, q := range krewPlatforms {
		var matched []int
		for i, p := range m.Spec.Platforms {
			if selects(p.Selector, q) {
				matched = append(matched, i)
			}
		}
		if len(matched) > 1 {
			bad("platforms %v all select %s", matched, q)
		}
	}
	return errs
}

func selects(s KrewSelector, p Platform) bool {
	for k, v := range s.MatchLabels {
		if (k == "os" && v != p.OS) || (k == "arch" && v != p.Arch) || (k != "os" && k != "arch") {
			return false
		}
	}
	return true
}

// krewInstall does what krew's installer does with one platform of the
// manifest and a local archive (krew install --manifest --archive): check
// the archive's SHA-256, extract it, copy the files operations name into
// the installation folder, and return the path of bin there.
func krewInstall(t *testing.T, p KrewPlatform, archive string) string {
	t.Helper()
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != p.Sha256 {
		t.Fatalf("%s: sha256 %x, the manifest says %s", archive, sum, p.Sha256)
	}
	staging, install := t.TempDir(), t.TempDir()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range untar(t, zr, staging) {
		if h.Typeflag != tar.TypeReg {
			t.Errorf("%s holds %q (type %q): want regular files only", archive, h.Name, h.Typeflag)
		}
	}
	files := p.Files
	if files == nil {
		files = []KrewFile{{From: "*", To: "."}}
	}
	for _, f := range files {
		matches, err := filepath.Glob(filepath.Join(staging, f.From))
		if err != nil || len(matches) == 0 {
			t.Fatalf("files: from %q matches nothing in %s (%v)", f.From, archive, err)
		}
		for _, m := range matches {
			to := filepath.Join(install, f.To, filepath.Base(m))
			if !strings.HasPrefix(to, install+string(filepath.Separator)) {
				t.Fatalf("files: %q would go outside the installation folder", f.To)
			}
			if err := os.Rename(m, to); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := filepath.Join(install, p.Bin)
	if !strings.HasPrefix(bin, install+string(filepath.Separator)) {
		t.Fatalf("bin %q is outside the installation folder", p.Bin)
	}
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("bin %q is not installed: %v", p.Bin, err)
	}
	if !strings.HasSuffix(p.Bin, ".exe") && info.Mode()&0o111 == 0 {
		t.Errorf("bin %q is not executable (%v)", p.Bin, info.Mode())
	}
	return bin
}

// TestPluginManifest builds the plugin for the image's platforms (their
// binaries are built already), checks the manifest against krew's rules,
// installs each platform as krew would, and runs this machine's: as
// kubectl-udrain it reports the manifest's version.
func TestPluginManifest(t *testing.T) {
	b, _ := theImage(t)
	out := outputDir(t)
	root, _ := filepath.Abs(checkout)
	dir := t.TempDir()
	file, err := writePlugin(t.Context(), root, filepath.Join(out, "bin"), dir, b.Stamps, imagePlatforms)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range validateKrewManifest(file, data) {
		t.Errorf("%s: %v", filepath.Base(file), err)
	}
	var m KrewPlugin
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.Version != b.Stamps.Version {
		t.Errorf("the plugin's version is %s, the build's %s", m.Spec.Version, b.Stamps.Version)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, hasLicense := hasLicenseFile(root)
	here := runtime.GOOS + "/" + runtime.GOARCH
	ran := false
	for _, p := range m.Spec.Platforms {
		name := path(p.URI)
		if want := fmt.Sprintf("%s  %s", p.Sha256, name); !slices.Contains(strings.Split(string(sums), "\n"), want) {
			t.Errorf("checksums.txt lacks %q", want)
		}
		if !strings.HasPrefix(p.URI, releaseURL+"/"+m.Spec.Version+"/") {
			t.Errorf("uri %s is not in the release %s", p.URI, m.Spec.Version)
		}
		bin := krewInstall(t, p, filepath.Join(dir, name))
		_, installed := hasLicenseFile(filepath.Dir(bin))
		if hasLicense && !installed {
			t.Errorf("%s: the license is not installed (krew's index requires a LICENSE file)", name)
		}
		if p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"] != here {
			continue
		}
		ran = true
		outp, err := exec.Command(bin, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl-udrain version: %v", err)
		}
		var v struct{ Version, Commit string }
		if err := json.Unmarshal(outp, &v); err != nil {
			t.Fatal(err)
		}
		if v.Version != m.Spec.Version || v.Commit != b.Stamps.Commit {
			t.Errorf("the installed plugin reports %+v, want version %s, commit %s", v, m.Spec.Version, b.Stamps.Commit)
		}
		help, err := exec.Command(bin, "--help").Output()
		if err != nil || !strings.Contains(string(help), "kubectl udrain") {
			t.Errorf("kubectl-udrain --help does not call itself kubectl udrain (%v)", err)
		}
	}
	if !ran {
		t.Errorf("no platform of the manifest selects %s", here)
	}
	if !hasLicense {
		t.Log("the repository has no LICENSE file: krew's index refuses a plugin whose archive has none")
	}
}

func path(uri string) string { return uri[strings.LastIndex(uri, "/")+1:] }

func hasLicenseFile(dir string) (string, bool) {
	for _, name := range licenseFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return name, true
		}
	}
	return "", false
}

// TestKrewManifestShape: every plugin platform gets one platform entry,
// selecting it alone, with the archive and binary names krew and Windows
// expect; the rules above accept it, and reject what krew rejects.
func TestKrewManifestShape(t *testing.T) {
	s := Stamps{Version: "v0.1.0", Commit: "abc", BuildDate: "2026-11-30T10:00:00Z"}
	var archives []pluginArchive
	for i, p := range pluginPlatforms {
		archives = append(archives, pluginArchive{Platform: p, Name: archiveName(s.Version, p), Sha256: strings.Repeat(fmt.Sprint(i), 64), Bin: p.exe("kubectl-udrain")})
	}
	m := krewManifest(s, archives)
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if errs := validateKrewManifest("plugins/udrain.yaml", data); len(errs) > 0 {
		t.Errorf("the manifest breaks krew's rules: %v", errs)
	}
	var bins []string
	for _, p := range m.Spec.Platforms {
		bins = append(bins, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"]+" "+p.Bin+" "+path(p.URI))
	}
	want := []string{
		"linux/amd64 kubectl-udrain kubectl-udrain_v0.1.0_linux_amd64.tar.gz",
		"linux/arm64 kubectl-udrain kubectl-udrain_v0.1.0_linux_arm64.tar.gz",
		"darwin/amd64 kubectl-udrain kubectl-udrain_v0.1.0_darwin_amd64.tar.gz",
		"darwin/arm64 kubectl-udrain kubectl-udrain_v0.1.0_darwin_arm64.tar.gz",
		"windows/amd64 kubectl-udrain.exe kubectl-udrain_v0.1.0_windows_amd64.tar.gz",
	}
	if diff := cmp.Diff(want, bins); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}

	// Each rule rejects what krew rejects.
	for _, tc := range []struct {
		name   string
		file   string
		change func(*KrewPlugin)
	}{
		{"file name differs from the plugin's", "plugins/kubectl-udrain.yaml", func(*KrewPlugin) {}},
		{"old apiVersion", "udrain.yaml", func(p *KrewPlugin) { p.APIVersion = "krew.googlecontainertools.github.com/v1alpha1" }},
		{"version without v", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Version = "0.1.0" }},
		{"two-line short description", "udrain.yaml", func(p *KrewPlugin) { p.Spec.ShortDescription = "a\nb" }},
		{"short sha256", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Platforms[0].Sha256 = "abc" }},
		{"no bin", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Platforms[0].Bin = "" }},
		{"overlapping selectors", "udrain.yaml", func(p *KrewPlugin) { delete(p.Spec.Platforms[0].Selector.MatchLabels, "arch") }},
		{"unsupported selector key", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Platforms[0].Selector.MatchLabels["libc"] = "musl" }},
		{"unknown platform", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Platforms[0].Selector.MatchLabels["arch"] = "riscv64" }},
		{"unclean to", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Platforms[0].Files[0].To = "./bin/" }},
		{"no platforms", "udrain.yaml", func(p *KrewPlugin) { p.Spec.Platforms = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := krewManifest(s, archives)
			tc.change(&bad)
			data, err := yaml.Marshal(bad)
			if err != nil {
				t.Fatal(err)
			}
			if errs := validateKrewManifest(tc.file, data); len(errs) == 0 {
				t.Errorf("accepted; krew refuses it")
			}
		})
	}
}

// TestPluginReproducible: the archives of two builds are the same bytes.
func TestPluginReproducible(t *testing.T) {
	b, _ := theImage(t)
	root, _ := filepath.Abs(checkout)
	var sums [2]string
	for i := range sums {
		dir := t.TempDir()
		if _, err := writePlugin(context.Background(), root, filepath.Join(outputDir(t), "bin"), dir, b.Stamps, imagePlatforms[:1]); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "checksums.txt"))
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = string(data)
	}
	if sums[0] != sums[1] {
		t.Errorf("two builds' checksums differ:\n%s\n%s", sums[0], sums[1])
	}
}
