package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The krew plugin: kubectl udrain. krew installs a plugin from a manifest
// (a Plugin object) that names, for each platform, an archive, its
// SHA-256, the files to copy out of it and the binary to link.
const (
	krewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	krewKind       = "Plugin"
	pluginName     = "udrain"
	// releaseURL is where a release's archives are published.
	releaseURL = "https://github.com/udrain/udrain/releases/download"
)

// KrewPlugin is krew's Plugin manifest (sigs.k8s.io/krew/pkg/index).
type KrewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   KrewMetadata   `json:"metadata"`
	Spec       KrewPluginSpec `json:"spec"`
}

// KrewMetadata is the manifest's metadata: only the name matters to krew.
type KrewMetadata struct {
	Name string `json:"name"`
}

// KrewPluginSpec is the plugin's description and its platforms.
type KrewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage,omitempty"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description,omitempty"`
	Caveats          string         `json:"caveats,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is how to install on the platforms its selector matches.
type KrewPlatform struct {
	Selector KrewSelector `json:"selector"`
	URI      string       `json:"uri"`
	Sha256   string       `json:"sha256"`
	Files    []KrewFile   `json:"files,omitempty"`
	Bin      string       `json:"bin"`
}

// KrewSelector is a label selector over the labels os and arch.
type KrewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// KrewFile copies From (a glob in the archive) to To (in the plugin's
// installation folder).
type KrewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// pluginArchive is one platform's archive, as written.
type pluginArchive struct {
	Platform Platform
	Name     string // file name under the output folder
	Sha256   string
	Bin      string // the binary's name in the archive
	License  string // the license file's name in the archive, "" if none
}

// archiveName is the file name of p's archive of release version.
func archiveName(version string, p Platform) string {
	return fmt.Sprintf("kubectl-udrain_%s_%s_%s.tar.gz", version, p.OS, p.Arch)
}

// krewManifest is the manifest of the archives of release s.
func krewManifest(s Stamps, archives []pluginArchive) KrewPlugin {
	m := KrewPlugin{
		APIVersion: krewAPIVersion,
		Kind:       krewKind,
		Metadata:   KrewMetadata{Name: pluginName},
		Spec: KrewPluginSpec{
			Version:          s.Version,
			Homepage:         "https://github.com/udrain/udrain",
			ShortDescription: "Drain upgrade domains without breaking gang-scheduled groups",
			Description: `Upgrades the nodes of a cluster that runs multi-host inference
(LeaderWorkerSet, Ray, multi-node vLLM or SGLang) without breaking more
model replicas than a PodDisruptionBudget allows: it drains upgrade
domains (nodes sharing a label value) one at a time, leaders before
workers, with kubectl drain's own filters, and waits for the groups to
recover before the next domain. Plans, audits the placement contract,
drains, rolls out resumably, and reports GPUs out of service.`,
			Caveats: `udrain needs the RBAC of deploy/rbac/drainer.yaml in
https://github.com/udrain/udrain. Start with:
  kubectl udrain domains
  kubectl udrain audit
  kubectl udrain plan DOMAIN`,
		},
	}
	for _, a := range archives {
		files := []KrewFile{{From: a.Bin, To: "."}}
		if a.License != "" {
			files = append(files, KrewFile{From: a.License, To: "."})
		}
		m.Spec.Platforms = append(m.Spec.Platforms, KrewPlatform{
			Selector: KrewSelector{MatchLabels: map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      fmt.Sprintf("%s/%s/%s", releaseURL, s.Version, a.Name),
			Sha256:   a.Sha256,
			Files:    files,
			Bin:      a.Bin,
		})
	}
	return m
}

// buildPlugin builds udrain for every plugin platform and writes the krew
// archives, checksums.txt and the manifest udrain.yaml into outDir; it
// returns the manifest's path.
func buildPlugin(ctx context.Context, root, binDir, outDir string, s Stamps) (string, error) {
	return writePlugin(ctx, root, binDir, outDir, s, pluginPlatforms)
}

// licenseFiles are the names krew's index accepts for a plugin's license.
var licenseFiles = []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING"}

func writePlugin(ctx context.Context, root, binDir, outDir string, s Stamps, platforms []Platform) (string, error) {
	var license string
	var licenseData []byte
	for _, name := range licenseFiles {
		if data, err := os.ReadFile(filepath.Join(root, name)); err == nil {
			license, licenseData = name, data
			break
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	var archives []pluginArchive
	var sums strings.Builder
	for _, p := range platforms {
		bin, err := buildBinary(ctx, root, binDir, p, s)
		if err != nil {
			return "", err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return "", err
		}
		a := pluginArchive{Platform: p, Name: archiveName(s.Version, p), Bin: p.exe("kubectl-udrain"), License: license}
		entries := []archiveEntry{{a.Bin, 0o755, data}}
		if license != "" {
			entries = append(entries, archiveEntry{license, 0o644, licenseData})
		}
		gz, err := tarGz(entries, s)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(outDir, a.Name), gz, 0o644); err != nil {
			return "", err
		}
		sum := sha256.Sum256(gz)
		a.Sha256 = hex.EncodeToString(sum[:])
		fmt.Fprintf(&sums, "%s  %s\n", a.Sha256, a.Name)
		archives = append(archives, a)
	}
	if err := os.WriteFile(filepath.Join(outDir, "checksums.txt"), []byte(sums.String()), 0o644); err != nil {
		return "", err
	}
	data, err := yaml.Marshal(krewManifest(s, archives))
	if err != nil {
		return "", err
	}
	path := filepath.Join(outDir, pluginName+".yaml")
	return path, os.WriteFile(path, data, 0o644)
}

type archiveEntry struct {
	name string
	mode int64
	data []byte
}

// tarGz is a reproducible .tar.gz of entries: owner root, the commit's time.
func tarGz(entries []archiveEntry, s Stamps) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: tar.TypeReg, Size: int64(len(e.data)), ModTime: s.Time(), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return gzipBytes(buf.Bytes())
}
