package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository, seen from this package's folder.
const repoRoot = "../.."

// object is one document of a YAML file of the repository.
type object struct {
	// file is the file's path from the repository root.
	file string
	u    *unstructured.Unstructured
}

// String names the object as a message should: its kind, namespace and
// name.
func (o object) String() string {
	name := o.u.GetName()
	if ns := o.u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return o.u.GetKind() + " " + name
}

// readTree returns every object of every YAML file under dir (a path from
// the repository root), file by file in lexical order, each file's
// documents in order.
func readTree(t *testing.T, dir string) []object {
	t.Helper()
	var out []object
	err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
		default:
			return nil
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		objs, err := readFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.ToSlash(rel), err)
		}
		for _, u := range objs {
			out = append(out, object{file: filepath.ToSlash(rel), u: u})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readFile returns the documents of a YAML file, each converted strictly
// (a duplicate field fails); empty documents are skipped.
func readFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return readDocuments(data)
}

func readDocuments(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if s := string(bytes.TrimSpace(js)); s == "null" || s == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, u)
	}
}

// podTemplate is a pod spec found in an object, with the metadata beside it
// (a pod's own, or its template's).
type podTemplate struct {
	// path is where the spec is in the object: "spec" for a Pod,
	// "spec.template.spec" for a Deployment,
	// "spec.leaderWorkerTemplate.workerTemplate.spec" for a LeaderWorkerSet's
	// workers, "spec.workerGroupSpecs[0].template.spec" for a RayCluster's.
	path string
	meta metav1.ObjectMeta
	spec corev1.PodSpec
}

// podTemplates finds every pod spec in an object, whatever its kind: a map
// with a list of containers is one. So Pods, the templates of Deployments,
// StatefulSets, DaemonSets, Jobs and CronJobs, and those of custom
// resources (a LeaderWorkerSet's leader and worker templates, a
// RayCluster's head and worker groups, a RayJob's or RayService's cluster)
// are all found without a list of kinds to keep up to date. Each spec and
// its metadata are decoded strictly: a field Kubernetes does not know
// fails, as it would on apply.
func podTemplates(o *unstructured.Unstructured) ([]podTemplate, error) {
	var out []podTemplate
	var visit func(node any, path string, meta map[string]any) error
	visit = func(node any, path string, meta map[string]any) error {
		switch n := node.(type) {
		case map[string]any:
			if _, ok := n["containers"].([]any); ok {
				var pt podTemplate
				pt.path = path
				if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(n, &pt.spec, true); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if meta != nil {
					if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(meta, &pt.meta, true); err != nil {
						return fmt.Errorf("%s: metadata: %w", path, err)
					}
				}
				out = append(out, pt)
				return nil
			}
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				// A pod's or a template's spec has its metadata beside it.
				var childMeta map[string]any
				if m, ok := n["metadata"].(map[string]any); ok && k == "spec" {
					childMeta = m
				}
				if err := visit(n[k], join(path, k), childMeta); err != nil {
					return err
				}
			}
		case []any:
			for i, v := range n {
				if err := visit(v, fmt.Sprintf("%s[%d]", path, i), nil); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(o.Object, "", nil); err != nil {
		return nil, err
	}
	return out, nil
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// containers are all the containers of a pod spec: init, regular and
// ephemeral, with the field that holds each.
func containers(spec *corev1.PodSpec) []struct{ field, name, image string } {
	var out []struct{ field, name, image string }
	for _, c := range spec.InitContainers {
		out = append(out, struct{ field, name, image string }{"initContainers", c.Name, c.Image})
	}
	for _, c := range spec.Containers {
		out = append(out, struct{ field, name, image string }{"containers", c.Name, c.Image})
	}
	for _, c := range spec.EphemeralContainers {
		out = append(out, struct{ field, name, image string }{"ephemeralContainers", c.Name, c.Image})
	}
	return out
}

// TestPodTemplatesOfEveryKind: the search finds the pod spec of each kind
// that holds one, built-in or custom, where it is, with its metadata, and
// nothing in kinds that hold none. The other tests of this package are
// only as good as this search.
func TestPodTemplatesOfEveryKind(t *testing.T) {
	const docs = `
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: p}}
spec:
  containers: [{name: c, image: "x:v1"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      initContainers: [{name: i, image: "x:v1"}]
      containers: [{name: c, image: "x:v1"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        metadata: {labels: {app: cj}}
        spec:
          restartPolicy: Never
          containers: [{name: c, image: "x:v1"}]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        containers: [{name: leader, image: "x:v1"}]
    workerTemplate:
      metadata: {labels: {role: worker}}
      spec:
        containers: [{name: worker, image: "x:v1"}]
---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    template:
      metadata: {labels: {role: head}}
      spec:
        containers: [{name: head, image: "x:v1"}]
  workerGroupSpecs:
  - groupName: a
    template:
      metadata: {labels: {role: a}}
      spec:
        containers: [{name: a, image: "x:v1"}]
  - groupName: b
    template:
      metadata: {labels: {role: b}}
      spec:
        containers: [{name: b, image: "x:v1"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {containers: "not a list"}
`
	objs, err := readDocuments([]byte(docs))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		pts, err := podTemplates(o)
		if err != nil {
			t.Fatalf("%s: %v", o.GetKind(), err)
		}
		for _, pt := range pts {
			var names []string
			for _, c := range containers(&pt.spec) {
				names = append(names, c.name)
			}
			got = append(got, fmt.Sprintf("%s %s labels=%v containers=%s", o.GetKind(), pt.path, pt.meta.Labels, strings.Join(names, ",")))
		}
	}
	want := []string{
		"Pod spec labels=map[app:p] containers=c",
		"Deployment spec.template.spec labels=map[app:d] containers=i,c",
		"CronJob spec.jobTemplate.spec.template.spec labels=map[app:cj] containers=c",
		"LeaderWorkerSet spec.leaderWorkerTemplate.leaderTemplate.spec labels=map[role:leader] containers=leader",
		"LeaderWorkerSet spec.leaderWorkerTemplate.workerTemplate.spec labels=map[role:worker] containers=worker",
		"RayCluster spec.headGroupSpec.template.spec labels=map[role:head] containers=head",
		"RayCluster spec.workerGroupSpecs[0].template.spec labels=map[role:a] containers=a",
		"RayCluster spec.workerGroupSpecs[1].template.spec labels=map[role:b] containers=b",
	}
	if !slices.Equal(got, want) {
		t.Errorf("pod templates found:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	// A misspelt field fails, as kubectl apply would.
	bad, err := readDocuments([]byte("kind: Pod\nspec:\n  containers: [{name: c, image: x, securityContxt: {}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := podTemplates(bad[0]); err == nil || !strings.Contains(err.Error(), "securityContxt") {
		t.Errorf("a container with an unknown field: %v, want an error naming it", err)
	}
}
