package eviction

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/topology"
)

// TestFiltersMatchKubectl runs kubectl's own drain.Helper.GetPodsForDeletion
// and udrain's planner over the same random pod sets and options, and
// requires the same decisions: which pods are deleted, which are skipped,
// kubectl's warnings and its refusals, message for message.
func TestFiltersMatchKubectl(t *testing.T) {
	const cases = 1500
	rng := rand.New(rand.NewSource(20261129))
	coverage := map[string]int{}
	for i := 0; i < cases; i++ {
		c := randomCase(rng)
		for k := range c.features {
			coverage[k]++
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want := kubectlDecisions(t, c)
			got := udrainDecisions(t, c)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("case %d (options %+v) differs from kubectl (-kubectl +udrain):\n%s", i, c.helper, diff)
			}
		})
	}
	// The generator must have exercised every filter both ways.
	for _, f := range []string{"daemonset", "orphaned-daemonset", "mirror", "emptydir", "unreplicated", "succeeded", "failed",
		"terminating-recent", "terminating-old", "selector", "force", "no-force", "ignore-ds", "no-ignore-ds",
		"delete-emptydir", "no-delete-emptydir", "skip-wait", "no-skip-wait", "non-controller-owner"} {
		if coverage[f] < 50 {
			t.Errorf("feature %q appeared in only %d of %d cases", f, coverage[f], cases)
		}
	}
}

type diffCase struct {
	pods       []corev1.Pod
	daemonSets []appsv1.DaemonSet
	helper     drain.Helper
	now        time.Time
	features   map[string]bool
}

// decisions is what both implementations are compared on.
type decisions struct {
	Deleted  []string
	Skipped  []string
	Warnings map[string][]string
	Errors   map[string][]string
}

func randomCase(rng *rand.Rand) diffCase {
	c := diffCase{now: time.Now(), features: map[string]bool{}}
	pick := func(p float64) bool { return rng.Float64() < p }
	for _, ns := range []string{"a", "b"} {
		for j := 0; j < 2; j++ {
			c.daemonSets = append(c.daemonSets, appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("ds-%d", j)}})
		}
	}
	n := 1 + rng.Intn(12)
	for i := 0; i < n; i++ {
		ns := []string{"a", "b"}[rng.Intn(2)]
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%02d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)),
				Labels: map[string]string{}, Annotations: map[string]string{}},
			Spec:   corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		switch rng.Intn(6) {
		case 0: // no owner
			c.features["unreplicated"] = true
		case 1, 2:
			p.OwnerReferences = ownedBy("ReplicaSet", "rs")
		case 3:
			p.OwnerReferences = ownedBy("DaemonSet", fmt.Sprintf("ds-%d", rng.Intn(2)))
			c.features["daemonset"] = true
		case 4:
			p.OwnerReferences = ownedBy("DaemonSet", "ds-gone")
			c.features["orphaned-daemonset"] = true
		case 5:
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "x"}}
			c.features["non-controller-owner"] = true
		}
		if pick(0.15) {
			p.Annotations[corev1.MirrorPodAnnotationKey] = "hash"
			c.features["mirror"] = true
		}
		if pick(0.3) {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			c.features["emptydir"] = true
		}
		switch rng.Intn(8) {
		case 0:
			p.Status.Phase = corev1.PodSucceeded
			c.features["succeeded"] = true
		case 1:
			p.Status.Phase = corev1.PodFailed
			c.features["failed"] = true
		case 2:
			p.Status.Phase = corev1.PodPending
		}
		switch rng.Intn(6) {
		case 0:
			ts := metav1.NewTime(c.now.Add(-5 * time.Second))
			p.DeletionTimestamp = &ts
			c.features["terminating-recent"] = true
		case 1:
			ts := metav1.NewTime(c.now.Add(-time.Hour))
			p.DeletionTimestamp = &ts
			c.features["terminating-old"] = true
		}
		if pick(0.5) {
			p.Labels["app"] = []string{"web", "llm"}[rng.Intn(2)]
		}
		if pick(0.3) {
			p.Labels["tier"] = "gpu"
		}
		c.pods = append(c.pods, p)
	}
	h := drain.Helper{GracePeriodSeconds: -1}
	h.Force = pick(0.5)
	h.IgnoreAllDaemonSets = pick(0.5)
	h.DeleteEmptyDirData = pick(0.5)
	if pick(0.5) {
		h.SkipWaitForDeleteTimeoutSeconds = 60
		c.features["skip-wait"] = true
	} else {
		c.features["no-skip-wait"] = true
	}
	if pick(0.4) {
		h.PodSelector = []string{"app=llm", "app!=web", "tier", "!tier,app in (web,llm)"}[rng.Intn(4)]
		c.features["selector"] = true
	}
	flag := func(on bool, yes, no string) {
		if on {
			c.features[yes] = true
		} else {
			c.features[no] = true
		}
	}
	flag(h.Force, "force", "no-force")
	flag(h.IgnoreAllDaemonSets, "ignore-ds", "no-ignore-ds")
	flag(h.DeleteEmptyDirData, "delete-emptydir", "no-delete-emptydir")
	c.helper = h
	return c
}

// splitMessages parses "msg: ns/a, ns/b" lines into msg -> sorted pods.
func splitMessages(lines []string, prefix string) map[string][]string {
	if len(lines) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, l := range lines {
		l = strings.TrimPrefix(l, prefix)
		i := strings.LastIndex(l, ": ")
		msg, pods := l[:i], strings.Split(l[i+2:], ", ")
		sort.Strings(pods)
		out[msg] = pods
	}
	return out
}

func kubectlDecisions(t *testing.T, c diffCase) decisions {
	var objs []runtime.Object
	for i := range c.pods {
		objs = append(objs, c.pods[i].DeepCopy())
	}
	for i := range c.daemonSets {
		objs = append(objs, c.daemonSets[i].DeepCopy())
	}
	h := c.helper
	h.Client = fake.NewClientset(objs...)
	h.Ctx = context.Background()
	list, errs := h.GetPodsForDeletion("n1")
	if list == nil {
		t.Fatalf("kubectl: %v", errs)
	}
	var d decisions
	deleted := map[string]bool{}
	for _, p := range list.Pods() {
		d.Deleted = append(d.Deleted, p.Namespace+"/"+p.Name)
		deleted[p.Namespace+"/"+p.Name] = true
	}
	if w := list.Warnings(); w != "" {
		d.Warnings = splitMessages(strings.Split(w, "; "), "")
	}
	var errLines []string
	for _, e := range errs {
		errLines = append(errLines, e.Error())
	}
	d.Errors = splitMessages(errLines, "cannot delete ")
	refused := map[string]bool{}
	for _, pods := range d.Errors {
		for _, p := range pods {
			refused[p] = true
		}
	}
	// Skipped: listed (matching the selector) but neither deleted nor refused.
	sel := c.helper.PodSelector
	for _, p := range c.pods {
		key := p.Namespace + "/" + p.Name
		if matchesSelector(t, sel, p.Labels) && !deleted[key] && !refused[key] {
			d.Skipped = append(d.Skipped, key)
		}
	}
	sort.Strings(d.Deleted)
	sort.Strings(d.Skipped)
	return d
}

func udrainDecisions(t *testing.T, c diffCase) decisions {
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{topology.DefaultDomainLabel: "ud"}}}}
	h := c.helper
	plan, err := NewPlan("ud", &Snapshot{
		Nodes: nodes, Pods: topology.PodPointers(c.pods), Now: c.now, DaemonSets: dsPointers(c.daemonSets),
	}, Options{Helper: &h, Groupers: []topology.Grouper{}})
	if err != nil {
		t.Fatal(err)
	}
	var d decisions
	for _, p := range plan.Pods() {
		d.Deleted = append(d.Deleted, p.String())
	}
	for _, s := range plan.Skipped {
		d.Skipped = append(d.Skipped, s.Namespace+"/"+s.Name)
	}
	d.Warnings = splitMessages(plan.Warnings, "")
	if err := plan.Err(); err != nil {
		re, ok := err.(*ClusterError)
		if !ok || re.Reason != ReasonRefusedPods {
			t.Fatalf("plan.Err() = %v", err)
		}
		d.Errors = splitMessages(re.Messages, "cannot delete ")
	}
	sort.Strings(d.Deleted)
	sort.Strings(d.Skipped)
	return d
}

func matchesSelector(t *testing.T, sel string, lbls map[string]string) bool {
	s, err := parseSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labelsSet(lbls))
}

// dsPointers is list as a lister gives it, never nil: the case's
// DaemonSets are all the cluster has.
func dsPointers(list []appsv1.DaemonSet) []*appsv1.DaemonSet {
	out := make([]*appsv1.DaemonSet, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out
}
