package eviction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

// TestClassifyEvictionError: one judgment of an eviction's failure. What
// ServerProblemOf calls a server problem is retried; an error of the
// client's own making, alone or in a *url.Error as client-go's REST
// client returns it, is not.
func TestClassifyEvictionError(t *testing.T) {
	post := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://10.0.0.1:6443/api/v1/namespaces/a/pods/p/eviction", Err: err}
	}
	status := func(code int32, reason metav1.StatusReason) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason}}
	}
	nsTerminating := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("namespace a is being terminated"))
	nsTerminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace a is being terminated"}}
	for _, tc := range []struct {
		name string
		err  error
		want outcomeKind
	}{
		{"accepted", nil, outcomeAccepted},
		{"404", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), outcomeGone},
		{"429", apierrors.NewTooManyRequests("budget", 0), outcomeBlocked},
		{"403 NamespaceTerminating", nsTerminating, outcomeNamespaceTerminating},
		{"403 RBAC", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("RBAC")), outcomeFatal},
		{"500", status(500, metav1.StatusReasonInternalError), outcomeTransient},
		{"503", status(503, metav1.StatusReasonServiceUnavailable), outcomeTransient},
		{"504", status(504, metav1.StatusReasonTimeout), outcomeTransient},
		{"501 is not the server failing", status(501, metav1.StatusReasonMethodNotAllowed), outcomeFatal},
		{"connection refused", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), outcomeTransient},
		{"connection reset", post(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), outcomeTransient},
		{"EOF", post(io.EOF), outcomeTransient},
		{"HTTP/2 GOAWAY", post(errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=7")), outcomeTransient},
		{"timeout", post(context.DeadlineExceeded), outcomeTransient},
		{"no route to host", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}), outcomeTransient},
		{"a client-side failure", errors.New("request failed"), outcomeFatal},
		{"a client-side failure in a url.Error", post(errors.New("request failed")), outcomeFatal},
		{"a credential plugin that fails", post(errors.New("getting credentials: exec: executable aws failed with exit code 1")), outcomeFatal},
		{"a write that ran out of RequestTimeout", &unansweredError{errors.New("read tcp: i/o timeout")}, outcomeTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyEvictionError(tc.err); got != tc.want {
				t.Errorf("classifyEvictionError(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

// A cordon patch refused by an error of the client's own making stops the
// drain at once, naming the error, with nothing else done; one refused by
// a server problem (a reset connection) is retried.
func TestCordonFailsAtOnceOnAClientError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		retried bool
	}{
		{"client error", &url.Error{Op: "Patch", URL: "https://10.0.0.1:6443/api/v1/nodes/node-1-1", Err: errors.New("request failed")}, false},
		{"reset connection", &url.Error{Op: "Patch", URL: "https://10.0.0.1:6443/api/v1/nodes/node-1-1", Err: io.ErrUnexpectedEOF}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			var mu sync.Mutex
			patches := 0
			fc.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				patches++
				if patches > 1 {
					return false, nil, nil // the server is back
				}
				return true, nil, tc.err
			})
			d, err := New(fc.client, Options{Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = d.Drain(ctx, "ud-1", DrainOptions{})
			var de *DomainError
			switch {
			case tc.retried && err != nil:
				t.Fatalf("Drain: %v, want the patch retried and the drain done", err)
			case !tc.retried && (!errors.As(err, &de) || de.Stage != StageCordon || !strings.Contains(err.Error(), "cordon node node-1-1: ") || !strings.Contains(err.Error(), "request failed")):
				t.Fatalf("Drain: %v, want a DomainError at Cordon naming the node and the error", err)
			case !tc.retried && (patches != 1 || len(fc.evicted()) != 0):
				t.Errorf("%d patches, %d evictions after a client error; want 1 and none", patches, len(fc.evicted()))
			}
		})
	}
}

// nsTerminatingReactor refuses every eviction 403 NamespaceTerminating,
// as the API server's NamespaceLifecycle admission does while a namespace
// is being deleted.
func nsTerminatingReactor(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", fmt.Errorf("unable to create new content in namespace %s because it is being terminated", action.GetNamespace()))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace is being terminated", Field: "metadata.namespace"}}
	return true, nil, err
}

// A namespace being deleted under a drain: its evictions are refused 403
// NamespaceTerminating, each refusal reported as such and retried (no
// permission error, no stop); once the namespace controller marks the
// pods deleted, the drain waits for them and is done. A drain whose
// timeout ends first says the namespace is being deleted.
func TestNamespaceBeingDeletedIsWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deleted bool // the namespace controller deletes the pods
	}{{"the namespace controller deletes the pods", true}, {"the pods stay", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			fc.client.PrependReactor("create", "pods", nsTerminatingReactor)
			log := newEventLog()
			h := KubectlDefaults()
			h.Timeout = 2 * time.Second
			d, err := New(fc.client, Options{Helper: h, OnEvent: log.add, Backoff: wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: 1 << 30}})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
				done <- err
			}()
			log.waitFor(t, "a NamespaceTerminating refusal", func(e Event) bool {
				return e.Type == EventRetrying && e.Request == RequestNamespaceTerminating && e.Pod != nil && e.Pod.Name == "llm-0"
			})
			if tc.deleted {
				for _, name := range []string{"llm-0", "llm-0-1"} {
					p, err := fc.client.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
					if _, err := fc.client.CoreV1().Pods(testNS).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				log.waitFor(t, "the leader waited for", func(e Event) bool {
					return e.Type == EventEvicted && e.Request == RequestNamespaceTerminating && e.Pod.Name == "llm-0"
				})
				for _, name := range []string{"llm-0", "llm-0-1"} {
					fc.deleteBehindTheAPI(name)
				}
			}
			err = <-done
			var pe *PermissionError
			if errors.As(err, &pe) {
				t.Fatalf("Drain: %v: a namespace being deleted is no missing permission", err)
			}
			if tc.deleted {
				if err != nil {
					t.Fatalf("Drain: %v, want done once the pods are gone with their namespace", err)
				}
				return
			}
			var de *DomainError
			if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || de.Stage != StagePhase1 ||
				!strings.Contains(err.Error(), "namespace(s) being deleted, which refuse evictions and take their pods with them: "+testNS) {
				t.Fatalf("Drain: %v, want the timeout at Phase1, naming namespace %s as being deleted", err, testNS)
			}
			if n := len(log.ofType(EventRetrying)); n < 2 {
				t.Errorf("%d Retrying events, want the refusals retried", n)
			}
		})
	}
}

// A server dry run over a namespace being deleted: the pod would go with
// it (WouldWait), and the check before the cordon does not take the
// refusal for a missing permission.
func TestServerDryRunOverANamespaceBeingDeleted(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	fc.client.PrependReactor("create", "pods", nsTerminatingReactor)
	h := KubectlDefaults()
	h.DryRunStrategy = cmdutil.DryRunServer
	d, err := New(fc.client, Options{Helper: h})
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := d.Drain(ctx, "ud-1", DrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.DryRunPods {
		got = append(got, p.Name+" "+string(p.DryRun))
	}
	if diff := cmp.Diff([]string{"llm-0 WouldWait", "llm-0-1 WouldWait"}, got); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
}

// drain.Helper's callbacks come when kubectl's do: Started before the
// eviction, Finished once the pod (that UID) is gone, after udrain's Gone
// event; the deprecated OnPodDeletedOrEvicted instead when Finished is
// unset; Finished with the error of an eviction that fails for good.
func TestKubectlCallbacksTiming(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finished   bool // set OnPodDeletionOrEvictionFinished
		fail       bool // evictions fail for good (403)
		want       []string
		wantErrMsg string
	}{
		{name: "Finished once the pod is gone", finished: true, want: []string{
			"started llm-0 true", "event Evicting llm-0", "event Evicted llm-0", "event Gone llm-0", "finished llm-0 true <nil>",
			"started llm-0-1 true", "event Evicting llm-0-1", "event Evicted llm-0-1", "event Gone llm-0-1", "finished llm-0-1 true <nil>"}},
		{name: "the deprecated callback when Finished is unset", want: []string{
			"started llm-0 true", "event Evicting llm-0", "event Evicted llm-0", "event Gone llm-0", "deleted-or-evicted llm-0 true",
			"started llm-0-1 true", "event Evicting llm-0-1", "event Evicted llm-0-1", "event Gone llm-0-1", "deleted-or-evicted llm-0-1 true"}},
		{name: "Finished with the error of a failed eviction", finished: true, fail: true, want: []string{
			"started llm-0 true", "event Evicting llm-0", "finished llm-0 true forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
			// The pods terminate: they go a moment after their eviction
			// (a kubelet), so that Gone comes well after Evicted.
			fc.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" || isDryRunEviction(a) {
					return false, nil, nil
				}
				if tc.fail {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("forbidden"))
				}
				name := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name
				tr := fc.client.Tracker()
				obj, err := tr.Get(podsGVR, testNS, name)
				if err != nil {
					return true, nil, err
				}
				p := obj.(*corev1.Pod).DeepCopy()
				p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				if err := tr.Update(podsGVR, p, testNS); err != nil {
					return true, nil, err
				}
				go func() {
					time.Sleep(100 * time.Millisecond)
					_ = tr.Delete(podsGVR, testNS, name)
				}()
				return true, nil, nil
			})
			var mu sync.Mutex
			var got []string
			add := func(s string) {
				mu.Lock()
				got = append(got, s)
				mu.Unlock()
			}
			h := KubectlDefaults()
			h.OnPodDeletionOrEvictionStarted = func(p *corev1.Pod, ev bool) { add(fmt.Sprintf("started %s %t", p.Name, ev)) }
			h.OnPodDeletedOrEvicted = func(p *corev1.Pod, ev bool) { add(fmt.Sprintf("deleted-or-evicted %s %t", p.Name, ev)) }
			if tc.finished {
				h.OnPodDeletionOrEvictionFinished = func(p *corev1.Pod, ev bool, err error) {
					msg := "<nil>"
					if err != nil {
						msg = "forbidden"
					}
					add(fmt.Sprintf("finished %s %t %s", p.Name, ev, msg))
				}
			}
			d, err := New(fc.client, Options{Helper: h, OnEvent: func(_ context.Context, e Event) {
				switch e.Type {
				case EventEvicting, EventEvicted, EventGone:
					add(fmt.Sprintf("event %s %s", e.Type, e.Pod.Name))
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = d.Drain(ctx, "ud-1", DrainOptions{})
			if (err != nil) != tc.fail {
				t.Fatalf("Drain: %v", err)
			}
			// Each pod's own order (the two pods' may interleave).
			entryPod := func(entry string) string {
				f := strings.Fields(entry)
				if f[0] == "event" {
					return f[2]
				}
				return f[1]
			}
			byPod := func(calls []string) []string {
				out := slices.Clone(calls)
				slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(entryPod(a), entryPod(b)) })
				return out
			}
			if diff := cmp.Diff(tc.want, byPod(got)); diff != "" {
				t.Errorf("callbacks and events, by pod (-want +got):\n%s", diff)
			}
		})
	}
}

func isDryRunEviction(a k8stesting.Action) bool {
	ev, ok := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	return ok && ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0
}

// A fake whose discovery says nothing of v1 (client-go's bare fake) stops
// the drain before its cordon, naming the question, as kubectl's helper
// fails on it: it neither waits for pods that a bare fake never removes
// nor cordons.
func TestDrainStopsWhenDiscoveryFails(t *testing.T) {
	ctx := testContext(t)
	client := fake.NewClientset(lwsCluster(2, 1, 2)...)
	d, err := New(client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = d.Drain(ctx, "ud-1", DrainOptions{})
	var de *DomainError
	if !errors.As(err, &de) || de.Stage != StageCordon || !strings.Contains(err.Error(), "serves pods/eviction") {
		t.Fatalf("Drain: %v, want a DomainError at Cordon saying discovery failed", err)
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "node-1-1", metav1.GetOptions{})
	if n.Spec.Unschedulable {
		t.Error("the node was cordoned")
	}
	if _, err := drain.CheckEvictionSupport(client); err == nil {
		t.Error("kubectl's CheckEvictionSupport accepts the bare fake; the test's premise is wrong")
	}
}

// A rollout whose domain holds the group of a namespace being deleted
// goes on: the group's evictions are refused NamespaceTerminating, its pods
// go with the namespace, and the domain's recovery does not wait for a
// group that will not come back (it waited until its timeout).
func TestRolloutForgetsTheGroupsOfADeletedNamespace(t *testing.T) {
	ctx := testContext(t)
	fc := doomedNamespaceCluster(t, 50*time.Millisecond)
	d, err := New(fc.client, Options{Backoff: wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Rollout(ctx, RolloutOptions{ID: "r", RecoveryTimeout: 20 * time.Second, Upgrade: func(ctx context.Context, dom topology.Domain) error {
		idx := domainIndex(dom.Name)
		fc.recreateGroup(ctx, idx-1, 2, idx, 1, 2)
		return nil
	}})
	if err != nil {
		t.Fatalf("Rollout: %v, want done, the deleted namespace's group not waited for", err)
	}
	if n := len(res.Domains); n != 2 {
		t.Errorf("%d domains done, want 2", n)
	}
	if got := sorted(fc.evicted()); !slices.Equal(got, []string{"inference/llm-0", "inference/llm-0-1", "inference/llm-1", "inference/llm-1-1"}) {
		t.Errorf("evicted %v, want the two groups of the rollout and nothing of the deleted namespace", got)
	}
}

// A namespace the drain's preflight finds being deleted (its dry-run
// eviction refused NamespaceTerminating) is noted for recovery even when
// no later event says so: its pods may be gone before their eviction is
// sent, which reports nothing, and recovery must not wait for their
// groups (TestRolloutForgetsTheGroupsOfADeletedNamespace failed so under
// make stress: the dry run started the namespace's deletion, the pods were
// gone before phase 1 reached them, and recovery waited 20 s for the
// group). Here no observer sees the drain's events: only the preflight
// can note it.
func TestPreflightNotesANamespaceBeingDeleted(t *testing.T) {
	ctx := testContext(t)
	fc := doomedNamespaceCluster(t, 0)
	d, v := viewOf(ctx, fc, Options{Backoff: wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: 1 << 30}})
	snap, err := v.planSnapshot(ctx, "ud-1")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := newPlan("ud-1", snap, d.s)
	if err != nil {
		t.Fatal(err)
	}
	var deleted deletedNamespaces
	if _, err := d.execute(ctx, v, plan, "r", nil, &deleted); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if !deleted.set[doomedNS] {
		t.Errorf("namespaces noted being deleted: %v, want %s (its dry-run eviction said so)", deleted.set, doomedNS)
	}
}

// doomedNS is the namespace doomedNamespaceCluster deletes.
const doomedNS = "doomed"

// doomedNamespaceCluster is lwsCluster(2, 1, 2) with a group of namespace
// doomedNS (a leader and a worker on node-1-1, a budget over the leader)
// being deleted: every eviction there, dry run or not, is refused 403
// NamespaceTerminating, and after the first one the namespace controller
// deletes its pods, after delay.
func doomedNamespaceCluster(t *testing.T, delay time.Duration) *fakeCluster {
	t.Helper()
	objs := lwsCluster(2, 1, 2)
	for w := range 2 {
		objs = append(objs, kube.LWSPod("gone", 0, w, 2, kube.InNamespace(doomedNS), kube.OnNode("node-1-1"), kube.WithUID(types.UID(fmt.Sprintf("gone-%d", w))), kube.OwnedByStatefulSets))
	}
	pdb := kube.LeaderPDB("gone", 1, 1)
	pdb.Namespace = doomedNS
	objs = append(objs, pdb)
	fc := newFakeCluster(t, objs...)
	var once sync.Once
	fc.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" || a.GetNamespace() != doomedNS {
			return false, nil, nil
		}
		once.Do(func() {
			tr := fc.client.Tracker()
			go func() {
				time.Sleep(delay)
				for _, name := range []string{"gone-0", "gone-0-1"} {
					_ = tr.Delete(podsGVR, doomedNS, name)
				}
			}()
		})
		return nsTerminatingReactor(a)
	})
	return fc
}
