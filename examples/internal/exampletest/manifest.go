// Package exampletest holds test helpers shared by the examples' tests:
// reading and strictly decoding their manifests, building the pods a
// LeaderWorkerSet makes from its templates, and the checks of udrain's
// placement contract that more than one manifest must pass. The example
// programs themselves never import it: each stays a standalone program a
// user can copy.
package exampletest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/topology"
)

// GroupKeyLabel is the label LeaderWorkerSet gives every pod of a group,
// with a value unique to the group.
const GroupKeyLabel = "leaderworkerset.sigs.k8s.io/group-key"

// ReadObjects returns the objects of a multi-document YAML file, in order,
// each document converted strictly (a duplicate field fails); empty
// documents are skipped.
func ReadObjects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, u)
	}
}

// Decode converts an object read by ReadObjects (or a part of one) into a
// typed object, strictly: an unknown field fails.
func Decode(t testing.TB, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, into, true); err != nil {
		t.Fatalf("decode %T: %v", into, err)
	}
}

// LWS is a LeaderWorkerSet of a manifest, its pod templates decoded
// strictly.
type LWS struct {
	Name, Namespace string
	Replicas, Size  int
	Leader, Worker  corev1.PodTemplateSpec
}

// DecodeLWS reads a LeaderWorkerSet's name, namespace, replicas, group size
// and its leader and worker templates; a missing template fails.
func DecodeLWS(t testing.TB, o *unstructured.Unstructured) LWS {
	t.Helper()
	w := LWS{Name: o.GetName(), Namespace: o.GetNamespace()}
	spec := o.Object["spec"].(map[string]any)
	replicas, _, _ := unstructured.NestedInt64(spec, "replicas")
	size, _, _ := unstructured.NestedInt64(spec, "leaderWorkerTemplate", "size")
	w.Replicas, w.Size = int(replicas), int(size)
	for name, into := range map[string]*corev1.PodTemplateSpec{"leaderTemplate": &w.Leader, "workerTemplate": &w.Worker} {
		tpl, ok, _ := unstructured.NestedMap(spec, "leaderWorkerTemplate", name)
		if !ok {
			t.Fatalf("the LeaderWorkerSet has no spec.leaderWorkerTemplate.%s", name)
		}
		Decode(t, tpl, into)
	}
	return w
}

// Pod is the pod LeaderWorkerSet makes from a template for member worker
// of group g (0 is the leader): its names, labels and annotations.
func (w LWS) Pod(g, worker int) *corev1.Pod {
	tpl := w.Worker
	name := fmt.Sprintf("%s-%d-%d", w.Name, g, worker)
	if worker == 0 {
		tpl, name = w.Leader, fmt.Sprintf("%s-%d", w.Name, g)
	}
	l := labels.Merge(tpl.Labels, labels.Set{
		topology.LWSNameLabel: w.Name, topology.LWSGroupIndexLabel: fmt.Sprint(g),
		topology.LWSWorkerIndexLabel: fmt.Sprint(worker), GroupKeyLabel: fmt.Sprintf("key-%d", g),
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace, UID: types.UID(name), Labels: l,
			Annotations: map[string]string{topology.LWSSizeAnnotation: fmt.Sprint(w.Size)}},
		Spec: *tpl.Spec.DeepCopy(),
	}
}

// CheckTopology checks the placement constraints of w's templates: the
// leaders spread over the upgrade domains (maxSkew 1, DoNotSchedule,
// selecting the leaders only), and each worker requires the domain of the
// leader of its own group (same GroupKeyLabel).
func CheckTopology(t testing.TB, w LWS) {
	t.Helper()
	leaders, worker := labels.Set(w.Pod(1, 0).Labels), labels.Set(w.Pod(1, 1).Labels)
	var spread *corev1.TopologySpreadConstraint
	for i, c := range w.Leader.Spec.TopologySpreadConstraints {
		if c.TopologyKey == topology.DefaultDomainLabel {
			spread = &w.Leader.Spec.TopologySpreadConstraints[i]
		}
	}
	if spread == nil {
		t.Fatalf("the leaders have no topology spread constraint over %s", topology.DefaultDomainLabel)
	}
	sel, err := metav1.LabelSelectorAsSelector(spread.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if spread.MaxSkew != 1 || spread.WhenUnsatisfiable != corev1.DoNotSchedule || !sel.Matches(leaders) || sel.Matches(worker) {
		t.Errorf("leader spread %+v: want maxSkew 1, DoNotSchedule, selecting the leaders only", spread)
	}

	a := w.Worker.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("the workers have no required pod affinity: a group could span domains")
	}
	term := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if sel, err = metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil {
		t.Fatal(err)
	}
	if term.TopologyKey != topology.DefaultDomainLabel || !sel.Matches(leaders) || !cmp.Equal(term.MatchLabelKeys, []string{GroupKeyLabel}) {
		t.Errorf("worker affinity %+v: want the domain (%s) of a leader with the same %s", term, topology.DefaultDomainLabel, GroupKeyLabel)
	}
}

// PlaceOneGroupPerDomain places w's groups as its constraints demand: group
// g whole on node gpu-g, alone in upgrade domain ud-g.
func (w LWS) PlaceOneGroupPerDomain() ([]corev1.Node, []*corev1.Pod) {
	var nodes []corev1.Node
	var pods []*corev1.Pod
	for g := range w.Replicas {
		node := fmt.Sprintf("gpu-%d", g)
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{topology.DefaultDomainLabel: fmt.Sprintf("ud-%d", g)}}})
		for i := range w.Size {
			p := w.Pod(g, i)
			p.Spec.NodeName = node
			pods = append(pods, p)
		}
	}
	return nodes, pods
}

// Audit runs udrain's contract audit over pods on nodes with pdb: it fails
// the test unless it finds wantGroups groups, and reports every finding.
// It returns the groups found.
func Audit(t testing.TB, nodes []corev1.Node, pods []*corev1.Pod, pdb policyv1.PodDisruptionBudget, wantGroups int) []topology.Group {
	t.Helper()
	layout, err := topology.BuildLayout(nodes, topology.LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups := topology.FindGroups(pods, topology.DefaultGroupers()...)
	if len(groups) != wantGroups {
		t.Fatalf("%d groups found, want %d", len(groups), wantGroups)
	}
	r := topology.Audit(topology.AuditInput{Layout: layout, Groups: groups, PDBs: []policyv1.PodDisruptionBudget{pdb}, Pods: pods})
	if len(r.Findings) > 0 {
		t.Errorf("audit findings: %+v", r.Findings)
	}
	return groups
}
