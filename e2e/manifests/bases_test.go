package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The namespace of udrain's components, and udrain's image.
const (
	udrainNamespace = "udrain-system"
	udrainImage     = "ghcr.io/udrain/udrain"
)

// base is a kustomization a user applies: a folder of deploy/, or an
// overlay of the test's own that adds a component to one.
type base struct {
	name       string
	dir        string // from the repository root
	components []string
	// namespaces the base's namespaced objects may be in.
	namespaces []string
}

// userBases are what deploy/README.md tells a user to apply after
// deploy/namespace.
var userBases = []base{
	{name: "deploy/rbac", dir: "deploy/rbac", namespaces: []string{udrainNamespace}},
	{name: "deploy/readiness-gate", dir: "deploy/readiness-gate", namespaces: []string{udrainNamespace, "udrain-readiness-gate"}},
	{name: "deploy/rollout", dir: "deploy/rollout", namespaces: []string{udrainNamespace}},
	{name: "deploy/rollout with the job-step component", dir: "deploy/rollout", components: []string{"deploy/rollout/job-step"},
		namespaces: []string{udrainNamespace, "udrain-upgrade"}},
}

// kustomize renders a kustomization folder as kubectl kustomize does.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	data, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readDocuments(data)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	return objs
}

// overlay writes a kustomization of the test's own over b, with extra
// fields, and returns its folder.
func overlay(t *testing.T, b base, extra types.Kustomization) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	k := extra
	k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
	k.Resources = []string{rel(b.dir)}
	for _, c := range b.components {
		k.Components = append(k.Components, rel(c))
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// render renders b as a user applies it.
func (b base) render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	if len(b.components) == 0 {
		return kustomize(t, filepath.Join(repoRoot, b.dir))
	}
	return kustomize(t, overlay(t, b, types.Kustomization{}))
}

// TestNamespaceIsABaseOfItsOwn: deploy/namespace holds udrain-system and
// nothing else, and no other base renders it, so that "kubectl delete -k
// deploy/rollout" (or deploy/readiness-gate, deploy/rbac) deletes what the
// base made and leaves the namespace, with the Leases of every rollout
// and the other components, where it is. Every namespaced object of a base
// lands in the namespace it is meant for, which must exist beforehand:
// deploy/namespace, applied once.
func TestNamespaceIsABaseOfItsOwn(t *testing.T) {
	ns := kustomize(t, filepath.Join(repoRoot, "deploy/namespace"))
	if len(ns) != 1 || ns[0].GetKind() != "Namespace" || ns[0].GetName() != udrainNamespace {
		var got []string
		for _, o := range ns {
			got = append(got, o.GetKind()+" "+o.GetName())
		}
		t.Fatalf("deploy/namespace renders %v, want the Namespace %s alone", got, udrainNamespace)
	}
	if got := ns[0].GetLabels()[enforceLabel]; got != "restricted" {
		t.Errorf("deploy/namespace: %s enforces %q, want restricted", udrainNamespace, got)
	}
	for _, b := range userBases {
		objs := b.render(t)
		if len(objs) == 0 {
			t.Errorf("%s renders nothing", b.name)
		}
		for _, o := range objs {
			if o.GetKind() == "Namespace" && o.GetName() == udrainNamespace {
				t.Errorf("%s renders the Namespace %s: kubectl delete -k %s would delete it, and with it every rollout's Lease and the other components; leave it to deploy/namespace", b.name, udrainNamespace, b.dir)
			}
			if ns := o.GetNamespace(); ns != "" && !slices.Contains(b.namespaces, ns) {
				t.Errorf("%s: %s %s is in namespace %q, want one of %v", b.name, o.GetKind(), o.GetName(), ns, b.namespaces)
			}
		}
	}
}

// retargetSnippet is the kustomization of deploy/README.md that retargets
// udrain's image: its first yaml block with an images: field.
func retargetSnippet(t *testing.T) types.Kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		if !strings.Contains(m[1], "images:") {
			continue
		}
		var k types.Kustomization
		if err := yaml.UnmarshalStrict([]byte(m[1]), &k); err != nil {
			t.Fatalf("deploy/README.md: the kustomization with images: is not one kustomize reads: %v", err)
		}
		return k
	}
	t.Fatal("deploy/README.md has no yaml block with images:")
	return types.Kustomization{}
}

// TestImagesRetarget: the kustomization deploy/README.md shows, with its
// images: field (a private registry, the release's tag and a digest),
// moves every container of every base that runs udrain's image to that
// reference, tag@digest, and leaves other images alone.
func TestImagesRetarget(t *testing.T) {
	snippet := retargetSnippet(t)
	var img *types.Image
	for i := range snippet.Images {
		if snippet.Images[i].Name == udrainImage {
			img = &snippet.Images[i]
		}
	}
	if img == nil || img.NewName == "" || img.NewTag == "" || !digestRef.MatchString(img.Digest) {
		t.Fatalf("deploy/README.md's images: %+v, want an entry for %s with newName, newTag and a sha256 digest", snippet.Images, udrainImage)
	}
	want := img.NewName + ":" + img.NewTag + "@" + img.Digest
	for _, b := range userBases {
		retargeted := 0
		for _, o := range kustomize(t, overlay(t, b, types.Kustomization{Images: snippet.Images})) {
			pts, err := podTemplates(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, pt := range pts {
				for _, c := range containers(&pt.spec) {
					switch {
					case strings.HasPrefix(c.image, udrainImage):
						t.Errorf("%s: %s %s, container %q still runs %s", b.name, o.GetKind(), o.GetName(), c.name, c.image)
					case c.image == want:
						retargeted++
					case strings.HasPrefix(c.image, img.NewName):
						t.Errorf("%s: %s %s, container %q runs %s, want %s", b.name, o.GetKind(), o.GetName(), c.name, c.image, want)
					}
				}
			}
		}
		if b.dir != "deploy/rbac" && retargeted == 0 {
			t.Errorf("%s: no container runs %s", b.name, want)
		}
	}
}
