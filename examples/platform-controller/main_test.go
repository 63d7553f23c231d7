package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// fakeCluster has two upgrade domains of two nodes, one LeaderWorkerSet
// group (leader and worker) per domain, and a PDB over the leaders that
// allows `allowed` disruptions. Evicted pods come back at once with a new
// UID, Running and Ready, as a StatefulSet and a kubelet would bring them
// back; a budget allowing nothing answers 429.
func fakeCluster(t *testing.T, allowed int32) *fake.Clientset {
	t.Helper()
	var objs []runtime.Object
	yes := true
	for d, nodes := range [][]string{{"node-a1", "node-a2"}, {"node-b1", "node-b2"}} {
		domain := fmt.Sprintf("ud-%d", d+1)
		for w, n := range nodes {
			objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{topology.DefaultDomainLabel: domain}}})
			name := fmt.Sprintf("llm-%d", d)
			if w > 0 {
				name += fmt.Sprintf("-%d", w)
			}
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: name, UID: types.UID(name),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llm", UID: "sts", Controller: &yes}},
					Labels:          map[string]string{topology.LWSNameLabel: "llm", topology.LWSGroupIndexLabel: fmt.Sprint(d), topology.LWSWorkerIndexLabel: fmt.Sprint(w)},
					Annotations:     map[string]string{topology.LWSSizeAnnotation: "2"}},
				Spec:   corev1.PodSpec{NodeName: n},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			})
		}
	}
	min := intstr.FromInt32(1)
	objs = append(objs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "llm-leaders"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			topology.LWSNameLabel: "llm", topology.LWSWorkerIndexLabel: "0"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2},
	})
	client := fake.NewClientset(objs...)
	var mu sync.Mutex
	seq := 0
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		tr := client.Tracker()
		obj, err := tr.Get(podsGVR, ev.Namespace, ev.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod)
		pdb, _ := tr.Get(schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, "serving", "llm-leaders")
		b := pdb.(*policyv1.PodDisruptionBudget)
		if sel, _ := metav1.LabelSelectorAsSelector(b.Spec.Selector); sel.Matches(labels.Set(pod.Labels)) && b.Status.DisruptionsAllowed <= 0 {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		if err := tr.Delete(podsGVR, ev.Namespace, ev.Name); err != nil {
			return true, nil, err
		}
		mu.Lock()
		seq++
		pod.UID, pod.ResourceVersion = types.UID(fmt.Sprintf("%s-%d", pod.Name, seq)), ""
		mu.Unlock()
		return true, nil, tr.Add(pod)
	})
	return client
}

// webhook records the upgrade requests; it fails for the domains in fail.
type webhook struct {
	mu       sync.Mutex
	requests []upgradeRequest
	fail     map[string]bool
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var req upgradeRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.requests = append(w.requests, req)
	fail := w.fail[req.Domain]
	w.mu.Unlock()
	if fail {
		http.Error(rw, "image pull failed", http.StatusInternalServerError)
		return
	}
	io.WriteString(rw, "upgraded")
}

func (w *webhook) got() []upgradeRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]upgradeRequest(nil), w.requests...)
}

// runController runs the program's run with a fake client and a test
// logger; it returns run's error and what was logged.
func runController(t *testing.T, client kubernetes.Interface, args ...string) (string, error) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	ctx, cancel := context.WithTimeout(klog.NewContext(t.Context(), logger), 30*time.Second)
	defer cancel()
	err := run(ctx, args, io.Discard, func(string) (kubernetes.Interface, error) { return client, nil })
	return logger.GetSink().(ktesting.Underlier).GetBuffer().String(), err
}

// events lists the Events the recorder created, as "Kind/name reason".
func events(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Reason)
	}
	return out
}

// waitForEvents waits until the recorder, which sends asynchronously, has
// created want (a real wait: the broadcaster runs its own goroutine).
func waitForEvents(t *testing.T, client kubernetes.Interface, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := events(t, client)
		missing := []string{}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %q not created; got %q", missing, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRolloutUpgradesEveryDomain(t *testing.T) {
	client := fakeCluster(t, 1)
	hook := &webhook{}
	srv := httptest.NewServer(hook)
	defer srv.Close()

	log, err := runController(t, client, "--target-version", "1.37.2", "--webhook", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := []upgradeRequest{
		{Domain: "ud-1", Nodes: []string{"node-a1", "node-a2"}, Version: "1.37.2"},
		{Domain: "ud-2", Nodes: []string{"node-b1", "node-b2"}, Version: "1.37.2"},
	}
	if diff := cmp.Diff(want, hook.got()); diff != "" {
		t.Errorf("webhook requests (-want +got):\n%s", diff)
	}
	for _, n := range []string{"node-a1", "node-a2", "node-b1", "node-b2"} {
		node, err := client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels[TargetVersionLabel] != "1.37.2" || node.Annotations[eviction.UpgradedByAnnotation] != "platform-1.37.2" || node.Spec.Unschedulable {
			t.Errorf("node %s: labels %v, annotations %v, unschedulable %v; want labelled, marked upgraded by platform-1.37.2, schedulable",
				n, node.Labels, node.Annotations, node.Spec.Unschedulable)
		}
	}
	// run flushed the recorder before it returned: every event is there.
	var wantEvents []string
	for _, n := range []string{"node-a1", "node-a2", "node-b1", "node-b2"} {
		wantEvents = append(wantEvents, "Node/"+n+" UdrainCordoned", "Node/"+n+" UdrainUncordoned")
	}
	got := events(t, client)
	sort.Strings(got)
	sort.Strings(wantEvents)
	if diff := cmp.Diff(wantEvents, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, want := range []string{`DomainDone event="DomainDone" domain="ud-2"`, `Upgrade webhook done domain="ud-1" status=200`, `Rollout summary id="platform-1.37.2" domainsDone=2`} {
		if !strings.Contains(log, want) {
			t.Errorf("log has no %q:\n%s", want, log)
		}
	}

	// Run again with the same version: nothing is drained or upgraded twice.
	if _, err := runController(t, client, "--target-version", "1.37.2", "--webhook", srv.URL); err != nil {
		t.Fatal(err)
	}
	if n := len(hook.got()); n != 2 {
		t.Errorf("the webhook was called %d times after a rerun, want still 2", n)
	}
}

// TestUpgradeFailureStopsTheRollout: a failing webhook stops the rollout
// at that domain, which stays cordoned; the next domain is not touched.
func TestUpgradeFailureStopsTheRollout(t *testing.T) {
	client := fakeCluster(t, 1)
	hook := &webhook{fail: map[string]bool{"ud-1": true}}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	_, err := runController(t, client, "--target-version", "1.37.2", "--webhook", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "upgrade webhook for domain ud-1 answered 500 Internal Server Error: image pull failed") {
		t.Fatalf("error %v, want the webhook's failure", err)
	}
	a1, _ := client.CoreV1().Nodes().Get(context.Background(), "node-a1", metav1.GetOptions{})
	b1, _ := client.CoreV1().Nodes().Get(context.Background(), "node-b1", metav1.GetOptions{})
	if !a1.Spec.Unschedulable || b1.Spec.Unschedulable {
		t.Errorf("node-a1 unschedulable %v (want true), node-b1 unschedulable %v (want false)", a1.Spec.Unschedulable, b1.Spec.Unschedulable)
	}
}

// TestBlockedEvictionBecomesAWarningEvent: a budget that allows nothing
// blocks the leader's eviction; the pod gets a Warning event naming the
// PDB, and the drain gives up at --drain-timeout with a BlockedError.
func TestBlockedEvictionBecomesAWarningEvent(t *testing.T) {
	client := fakeCluster(t, 0)
	log, err := runController(t, client, "--target-version", "1.37.2", "--drain-timeout", "300ms")
	var blocked *eviction.BlockedError
	if !errors.As(err, &blocked) {
		t.Fatalf("error %v, want a BlockedError", err)
	}
	waitForEvents(t, client, "Pod/llm-0 UdrainEvictionBlocked")
	if !strings.Contains(log, `Eviction blocked by a PodDisruptionBudget event="Blocked"`) || !strings.Contains(log, `pdb="serving/llm-leaders"`) {
		t.Errorf("the block was not logged with its PDB:\n%s", log)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--target-version is required"},
		{[]string{"--target-version", "1.37 beta"}, "cannot be a label value"},
		{[]string{"--target-version", "1.37", "extra"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
	} {
		_, err := runController(t, fake.NewClientset(), tc.args...)
		var usage *usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
}
