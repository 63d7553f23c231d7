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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/examples/internal/exampletest"
)

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
	return runWithClients(t, &clients{kube: client, dynamic: fakeDynamic()}, args...)
}

// runWithClients is runController with the dynamic client too.
func runWithClients(t *testing.T, c *clients, args ...string) (string, error) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	ctx, cancel := context.WithTimeout(klog.NewContext(t.Context(), logger), 30*time.Second)
	defer cancel()
	err := run(ctx, args, io.Discard, func(string) (*clients, error) { return c, nil })
	return logger.GetSink().(ktesting.Underlier).GetBuffer().String(), err
}

// events lists the Events the recorder created, as "Kind/name uid reason"
// (a node's UID is its name, as kubectl records node events).
func events(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+string(e.InvolvedObject.UID)+" "+e.Reason)
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
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1})
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
		if node.Labels[TargetVersionLabel] != "1.37.2" || node.Annotations[udrain.UpgradedByAnnotation] != "platform-1.37.2" || node.Spec.Unschedulable {
			t.Errorf("node %s: labels %v, annotations %v, unschedulable %v; want labelled, marked upgraded by platform-1.37.2, schedulable",
				n, node.Labels, node.Annotations, node.Spec.Unschedulable)
		}
	}
	// run flushed the recorder before it returned: every event is there,
	// those of the evicted pods with the UID of the pod that was evicted
	// (its replacement has another).
	var wantEvents []string
	for _, n := range []string{"node-a1", "node-a2", "node-b1", "node-b2"} {
		wantEvents = append(wantEvents, "Node/"+n+" "+n+" UdrainCordoned", "Node/"+n+" "+n+" UdrainUncordoned")
	}
	for _, p := range []string{"llm-0", "llm-0-1", "llm-1", "llm-1-1"} {
		wantEvents = append(wantEvents, "Pod/"+p+" "+p+" UdrainEvicted")
	}
	got := events(t, client)
	sort.Strings(got)
	sort.Strings(wantEvents)
	if diff := cmp.Diff(wantEvents, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, want := range []string{`DomainDone event="DomainDone" domain="ud-2"`, `Upgrade webhook done domain="ud-1" status=200`, `Rollout summary id="platform-1.37.2" domainsDone=2 domainsSkipped=0 phase1Evicted=2 phase2Evicted=2 groupsDisrupted=2`,
		`domain.ud-1="Done" domain.ud-2="Done"`} {
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
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1})
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
// PDB, and the drain gives up at --drain-timeout with a DomainError in
// phase 1 that unwraps to context.DeadlineExceeded and a RetryError with
// ReasonBlocked;
// the log says where it stopped and which budget blocked.
func TestBlockedEvictionBecomesAWarningEvent(t *testing.T) {
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 0})
	log, err := runController(t, client, "--target-version", "1.37.2", "--drain-timeout", "2s") // time for a busy machine to be refused first
	var stop *eviction.DomainError
	var blocked *eviction.RetryError
	if !errors.As(err, &stop) || !errors.As(err, &blocked) || blocked.Reason != eviction.ReasonBlocked || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a DomainError unwrapping to a Blocked RetryError and context.DeadlineExceeded", err)
	}
	if stop.Domain != "ud-1" || stop.Stage != eviction.StagePhase1 || stop.Timeout != 2*time.Second || blocked.Block.PDB != "llm-leaders" {
		t.Errorf("stopped in %s at %s after %s, blocked by %s; want ud-1, %s, 2s, llm-leaders", stop.Domain, stop.Stage, stop.Timeout, blocked.Block.PDB, eviction.StagePhase1)
	}
	waitForEvents(t, client, "Pod/llm-0 llm-0 UdrainEvictionBlocked")
	for _, want := range []string{
		`Eviction blocked by a PodDisruptionBudget event="Blocked"`, `pdb="serving/llm-leaders"`,
		`Rollout stopped; run again with the same --target-version to resume`,
		`domain="ud-1" stage="Phase1" id="platform-1.37.2" cause="timeout" timeout="2s" podsPending=2 firstPodPending="serving/llm-0" blockedBy="serving/llm-leaders"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log has no %q:\n%s", want, log)
		}
	}
}

// TestRecoveryTimeoutNamesTheGroups: replacements that never become Ready
// stop the rollout at --recovery-timeout with a DomainError in the
// recovery stage, whose health says which group is not healthy and why
// (package health's reason), and the log says the same.
func TestRecoveryTimeoutNamesTheGroups(t *testing.T) {
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1, Unready: true})
	log, err := runController(t, client, "--target-version", "1.37.2", "--recovery-timeout", "300ms")
	var stop *eviction.DomainError
	if !errors.As(err, &stop) || !errors.Is(err, context.DeadlineExceeded) || stop.Stage != eviction.StageRecovery || stop.Health == nil {
		t.Fatalf("error %v, want a DomainError in %s with the domain's health, unwrapping to context.DeadlineExceeded", err, eviction.StageRecovery)
	}
	var reasons []string
	for _, g := range stop.Health.Groups {
		reasons = append(reasons, fmt.Sprintf("%s %t %s", g.ID, g.Healthy, g.Reason))
	}
	if diff := cmp.Diff([]string{"serving/llm-0 false MemberNotReady"}, reasons); diff != "" {
		t.Errorf("groups of the stopped domain (-want +got):\n%s", diff)
	}
	want := `domain="ud-1" stage="Recovery" id="platform-1.37.2" cause="timeout" timeout="300ms" notRecovered=["serving/llm-0: MemberNotReady"`
	if !strings.Contains(log, want) {
		t.Errorf("log has no %q:\n%s", want, log)
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
