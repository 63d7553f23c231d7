package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/ptr"

	"github.com/udrain/udrain/eviction"
)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// kubectlCases are the cases of the four files, in their order.
func kubectlCases() []kubectlCase {
	var cases []kubectlCase
	for _, part := range [][]kubectlCase{
		deletePodsCases(), checkEvictionSupportCases(), deleteOrEvictCases(), dryRunServerCases(), filterPodsCases(),
		namespaceTerminatingCases(), skipDeletedFilterCases(), cordonHelperCases(), cmdCordonCases(), cmdDrainCases(),
	} {
		cases = append(cases, part...)
	}
	return cases
}

const drainTest = "pkg/drain/drain_test.go"

// createPods is kubectl's: pods pod0..pod7 of namespace default, their
// UIDs "00".."77" (or "0".."7", the new pods), Generation i; here on
// node "node".
func createPods(newPods bool) []corev1.Pod {
	var pods []corev1.Pod
	for i := range 8 {
		uid := strconv.Itoa(i) + strconv.Itoa(i)
		if newPods {
			uid = strconv.Itoa(i)
		}
		pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod" + strconv.Itoa(i), Namespace: "default", UID: types.UID(uid), Generation: int64(i)},
			Spec: corev1.PodSpec{NodeName: "node"}})
	}
	return pods
}

// terminating marks the pod name of ns deleted at now, in tr.
func terminating(tr k8stesting.ObjectTracker, ns, name string, at time.Time) (*corev1.Pod, error) {
	obj, err := tr.Get(podsResource, ns, name)
	if err != nil {
		return nil, err
	}
	p := obj.(*corev1.Pod).DeepCopy()
	if p.DeletionTimestamp == nil {
		p.DeletionTimestamp = &metav1.Time{Time: at}
	}
	return p, tr.Update(podsResource, p, ns)
}

// deletePodsCases: TestDeletePods tests waitForDelete, with a getPodFn
// per case. Here the pods are deleted (--disable-eviction: kubectl's
// deletePods, then waitForDelete, with usingEviction false as the test's)
// and the fake answers the deletions as that getPodFn describes the pods
// afterwards.
func deletePodsCases() []kubectlCase {
	flags := func(timeout time.Duration) func() *drain.Helper {
		return func() *drain.Helper {
			// Force: the pods declare no controller, which udrain's
			// filters (kubectl's, which DeleteOrEvictPods skips) refuse.
			return &drain.Helper{DisableEviction: true, Force: true, SkipWaitForDeleteTimeoutSeconds: 10, Timeout: timeout}
		}
	}
	type deleteCase struct {
		name                           string
		timeout                        time.Duration
		ctxTimeoutEarly                bool
		expectPendingPods, expectError bool
		expectedError                  error
		verdict                        kubectlVerdict
		why                            string
		pods                           func() []corev1.Pod
		onDelete                       func(tr k8stesting.ObjectTracker, ns, name string) error
		getError                       bool
		udrainWant                     func(observed) []string
	}
	stuck := func(tr k8stesting.ObjectTracker, ns, name string) error {
		_, err := terminating(tr, ns, name, time.Now())
		return err
	}
	var cases []kubectlCase
	for _, tc := range []deleteCase{
		{name: "Wait for deleting to complete", timeout: 10 * time.Second, verdict: agrees,
			// The pods terminate for a while; then pod0..pod3 are
			// replaced (new UIDs), the others gone.
			onDelete: func(tr k8stesting.ObjectTracker, ns, name string) error {
				p, err := terminating(tr, ns, name, time.Now())
				if err != nil {
					return err
				}
				go func() {
					time.Sleep(300 * time.Millisecond)
					_ = tr.Delete(podsResource, ns, name)
					if p.Generation < 4 {
						_ = tr.Add(&createPods(true)[p.Generation])
					}
				}()
				return nil
			}},
		{name: "Pod found with same name but different UID", timeout: 10 * time.Second, verdict: agrees,
			onDelete: func(tr k8stesting.ObjectTracker, ns, name string) error {
				if err := tr.Delete(podsResource, ns, name); err != nil {
					return err
				}
				return tr.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "SOME_OTHER_UID"}})
			}},
		{name: "Deleting could timeout", timeout: 3 * time.Second, expectPendingPods: true, expectError: true, expectedError: context.DeadlineExceeded,
			verdict: agrees, onDelete: stuck},
		{name: "Context Canceled", timeout: 5 * time.Second, ctxTimeoutEarly: true, expectPendingPods: true, expectError: true, expectedError: context.Canceled,
			verdict: agrees, onDelete: stuck},
		{name: "Skip Deleted Pod", timeout: 3 * time.Second, verdict: agrees,
			// Deleted 100 s ago and still there (a finalizer): older than
			// SkipWaitForDeleteTimeoutSeconds.
			pods: func() []corev1.Pod {
				pods := createPods(false)
				for i := range pods {
					pods[i].DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-100 * time.Second)}
				}
				return pods
			},
			onDelete: func(k8stesting.ObjectTracker, string, string) error { return nil }},
		{name: "Client error could be passed out", timeout: 5 * time.Second, expectPendingPods: true, expectError: true,
			verdict: documented, getError: true,
			why: "udrain waits for pods on a watch, not with a GET per pod: the GET that fails here is a request it does not make (a watch's errors are retried by client-go's reflector)",
			udrainWant: func(o observed) []string {
				var p problems
				p.check(o.Err == nil && len(o.Pending) == 0 && len(o.Deletions) == 8, "want the 8 pods deleted and seen gone on the watch, no error; got %v, pending %v", o.Err, o.Pending)
				return p
			}},
	} {
		pods := createPods(false)
		if tc.pods != nil {
			pods = tc.pods()
		}
		setup := func(t *testing.T) *kubectlFake {
			f := newKubectlFake(nil, objects(pods, domainNode("node", false))...).target(pods...)
			if tc.onDelete != nil {
				f.onDelete(tc.onDelete)
			}
			if tc.getError {
				f.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("This is a random error for testing")
				})
			}
			return f
		}
		withCtx := func(run runner) runner {
			if !tc.ctxTimeoutEarly {
				return run
			}
			return func(ctx context.Context, t *testing.T, f *kubectlFake) observed {
				ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				return run(ctx, t, f)
			}
		}
		cases = append(cases, kubectlCase{file: drainTest, test: "TestDeletePods", name: tc.name, verdict: tc.verdict, why: tc.why, setup: setup,
			kubectl:    withCtx(kubectlDeleteOrEvict(flags(tc.timeout), pods)),
			udrain:     withCtx(udrainDrain("node", flags(tc.timeout))),
			udrainWant: tc.udrainWant,
			want: func(o observed) []string {
				var p problems
				switch {
				case !tc.expectError:
					p.check(o.Err == nil, "unexpected error %v", o.Err)
				case o.Err == nil:
					p.check(false, "unexpected non-error")
				case tc.expectedError != nil && tc.ctxTimeoutEarly:
					p.check(o.Took < tc.timeout, "took %s: the supplied context did not end the wait before the timeout %s", o.Took, tc.timeout)
				case tc.expectedError != nil:
					p.check(errors.Is(o.Err, tc.expectedError), "error %v, want %v", o.Err, tc.expectedError)
				}
				p.check(tc.expectPendingPods == (len(o.Pending) > 0), "pending pods %v, want some: %t", o.Pending, tc.expectPendingPods)
				return p
			}})
	}
	return cases
}

// drainablePod is a pod of namespace default on node "node" that a
// ReplicaSet controls, which kubectl's filters and udrain's let go.
func drainablePod(name string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name + "-uid"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node"}}
}

// checkEvictionSupportCases: TestCheckEvictionSupport asks which eviction
// API the server serves. Here each implementation drains a pod, and the
// request it sends says which API it chose.
func checkEvictionSupportCases() []kubectlCase {
	flags := func() *drain.Helper { return &drain.Helper{GracePeriodSeconds: -1} }
	var cases []kubectlCase
	for _, version := range []string{"", "v1", "v1beta1"} {
		want := ""
		if version != "" {
			want = "policy/" + version
		}
		pod := drainablePod("bar")
		// udrain evicted through policy/v1 whatever the server served.
		verdict := fixed
		if version == "v1" {
			verdict = agrees
		}
		cases = append(cases, kubectlCase{file: drainTest, test: "TestCheckEvictionSupport", name: "evictionVersion=" + version, verdict: verdict,
			setup: func(t *testing.T) *kubectlFake {
				return newKubectlFake(evictionResources(version), objects([]corev1.Pod{pod}, domainNode("node", false))...).target(pod)
			},
			kubectl: kubectlDeleteOrEvict(flags, []corev1.Pod{pod}),
			udrain:  udrainDrain("node", flags),
			want: func(o observed) []string {
				var p problems
				p.check(o.Err == nil, "unexpected error %v", o.Err)
				p.check(len(o.Evictions)+len(o.Deletions) == 1 && o.EvictionVersion == want, "evictions %v, deletions %v: want the pod removed through %q (\"\": deleted)", o.Evictions, o.Deletions, want)
				return p
			}})
	}
	return cases
}

// deleteOrEvictCases: TestDeleteOrEvict removes 2 of 4 pods, by
// eviction or deletion, and checks the requests and the callbacks.
func deleteOrEvictCases() []kubectlCase {
	var cases []kubectlCase
	for _, tc := range []struct {
		description                        string
		evictionSupported, disableEviction bool
		verdict                            kubectlVerdict
	}{
		{"eviction supported/enabled", true, false, documented},
		{"eviction unsupported/disabled", false, false, fixed},
		{"eviction supported/disabled", true, true, agrees},
		{"eviction unsupported/disabled", false, false, fixed},
	} {
		// mypod-1 and mypod-2 on the drained node, mypod-3 and mypod-4
		// on another; no UIDs, no owners (Force, for udrain's filters).
		var all []corev1.Pod
		for i := 1; i <= 4; i++ {
			node := "node"
			if i > 2 {
				node = "other"
			}
			all = append(all, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("mypod-%d", i)}, Spec: corev1.PodSpec{NodeName: node}})
		}
		remove := all[:2]
		flags := func() *drain.Helper {
			return &drain.Helper{GracePeriodSeconds: 10, DisableEviction: tc.disableEviction, Force: true}
		}
		grace := int64(10)
		var expected []policyv1.Eviction
		if tc.evictionSupported && !tc.disableEviction {
			for _, p := range remove {
				expected = append(expected, policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
					DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}})
			}
		}
		version := ""
		if tc.evictionSupported {
			version = "v1"
		}
		common := func(o observed, p *problems) {
			p.check(slices.Equal(o.Remaining, []string{"default/mypod-3", "default/mypod-4"}), "remaining pods %v, want mypod-3 and mypod-4", o.Remaining)
			usingEviction := !tc.disableEviction
			if tc.evictionSupported {
				for _, c := range o.Callbacks {
					p.check(strings.Contains(c, fmt.Sprintf("eviction=%t", usingEviction)), "callback %q while %s", c, map[bool]string{true: "evicting", false: "deleting"}[usingEviction])
				}
			}
		}
		cases = append(cases, kubectlCase{file: drainTest, test: "TestDeleteOrEvict", name: tc.description, verdict: tc.verdict,
			why: "each eviction carries the pod's UID as a precondition (DeleteOptions.Preconditions.UID), so that a replacement pod of the same name is never evicted in its place",
			setup: func(t *testing.T) *kubectlFake {
				return newKubectlFake(evictionResources(version), objects(all, domainNode("node", false), domainNode("other", false))...).target(remove...)
			},
			kubectl: kubectlDeleteOrEvict(flags, remove),
			udrain:  udrainDrain("node", flags),
			want: func(o observed) []string {
				var p problems
				common(o, &p)
				bodies := sortedEvictions(o.EvictionBodies)
				p.check(reflect.DeepEqual(bodies, expected) && len(o.Evictions) == len(expected), "evictions %+v, want %+v", bodies, expected)
				return p
			},
			udrainWant: func(o observed) []string {
				var p problems
				common(o, &p)
				var withUID []policyv1.Eviction
				for _, e := range expected {
					e.DeleteOptions = e.DeleteOptions.DeepCopy()
					e.DeleteOptions.Preconditions = &metav1.Preconditions{UID: ptr.To(types.UID(""))}
					withUID = append(withUID, e)
				}
				bodies := sortedEvictions(o.EvictionBodies)
				p.check(reflect.DeepEqual(bodies, withUID), "evictions %+v, want kubectl's with the pods' UIDs as preconditions", bodies)
				return p
			}})
	}
	return cases
}

func sortedEvictions(evs []policyv1.Eviction) []policyv1.Eviction {
	out := slices.Clone(evs)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// dryRunServerCases: TestDeleteOrEvictWithDryRunServer removes two pods
// with --dry-run=server and wants no error. A dry run changes nothing:
// the pods stay and no node is cordoned (kubectl's helper cordons
// nothing here; udrain's server dry run sends its cordon as a dry run).
func dryRunServerCases() []kubectlCase {
	var cases []kubectlCase
	for _, tc := range []struct {
		description     string
		disableEviction bool
	}{
		{"Eviction enabled with server dry-run", false},
		{"Eviction disabled with server dry-run", true},
	} {
		var pods []corev1.Pod
		for i := 1; i <= 2; i++ {
			pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("mypod-%d", i)}, Spec: corev1.PodSpec{NodeName: "node"}})
		}
		flags := func() *drain.Helper {
			return &drain.Helper{GracePeriodSeconds: 10, DisableEviction: tc.disableEviction, DryRunStrategy: cmdutil.DryRunServer, Force: true}
		}
		cases = append(cases, kubectlCase{file: drainTest, test: "TestDeleteOrEvictWithDryRunServer", name: tc.description, verdict: agrees,
			setup: func(t *testing.T) *kubectlFake {
				return newKubectlFake(evictionResources("v1"), objects(pods, domainNode("node", false))...).target(pods...)
			},
			kubectl: kubectlDeleteOrEvict(flags, pods),
			udrain:  udrainDrain("node", flags),
			want: func(o observed) []string {
				var p problems
				p.check(o.Err == nil, "error from DeleteOrEvictPods: %v", o.Err)
				p.check(len(o.Remaining) == 2 && len(o.Evictions)+len(o.Deletions) == 0 && o.NodeWrites == 0,
					"a dry run changed the cluster: pods left %v, evictions %v, deletions %v, node writes %d", o.Remaining, o.Evictions, o.Deletions, o.NodeWrites)
				return p
			}})
	}
	return cases
}

// filterPodsCases: TestFilterPods runs AdditionalFilters after kubectl's
// own (with Force) and counts the pods left for deletion.
func filterPodsCases() []kubectlCase {
	skip := func(corev1.Pod) drain.PodDeleteStatus { return drain.MakePodDeleteStatusSkip() }
	okay := func(corev1.Pod) drain.PodDeleteStatus { return drain.MakePodDeleteStatusOkay() }
	var cases []kubectlCase
	for _, tc := range []struct {
		description        string
		expectedPodListLen int
		additionalFilters  []drain.PodFilter
	}{
		{"AdditionalFilter skip all", 0, []drain.PodFilter{skip, okay}},
		{"AdditionalFilter okay all", 1, []drain.PodFilter{okay}},
		{"AdditionalFilter Skip after Okay all skip", 0, []drain.PodFilter{okay, skip}},
		{"No additionalFilters okay all", 1, nil},
	} {
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod"}, Spec: corev1.PodSpec{NodeName: "node"}}
		flags := func() *drain.Helper { return &drain.Helper{Force: true, AdditionalFilters: tc.additionalFilters} }
		cases = append(cases, kubectlCase{file: drainTest, test: "TestFilterPods", name: tc.description, verdict: agrees,
			setup: func(t *testing.T) *kubectlFake {
				return newKubectlFake(nil, objects([]corev1.Pod{pod}, domainNode("node", false))...)
			},
			kubectl: kubectlPodsForDeletion("node", flags),
			udrain:  udrainPlan("node", flags),
			want: func(o observed) []string {
				var p problems
				p.check(o.Err == nil, "unexpected error %v", o.Err)
				p.check(len(o.Deletable) == tc.expectedPodListLen, "pods for deletion %v, want %d", o.Deletable, tc.expectedPodListLen)
				return p
			}})
	}
	return cases
}

// namespaceTerminatingCases: TestEvictDuringNamespaceTerminating answers
// every eviction 403 NamespaceTerminating (as the API server does, the
// pod there or not). With refresh, the namespace controller deletes the
// pod: terminating after 10 ms, gone 200 ms later (the test's GETs answer
// the pod terminating, then gone); without, the pod stays and the drain's
// timeout ends it. The test's timeout (100 ms, its GETs answering at
// once) is raised to 3 s for both: kubectl's wait for the terminating pod
// polls once a second.
func namespaceTerminatingCases() []kubectlCase {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "test-pod", UID: "test-uid"}, Spec: corev1.PodSpec{NodeName: "node"}}
	flags := func() *drain.Helper {
		return &drain.Helper{Timeout: 3 * time.Second, EvictErrorRetryDelay: 5 * time.Millisecond, Force: true}
	}
	var cases []kubectlCase
	for _, tc := range []struct {
		description string
		refresh     bool
	}{
		{"Pod refreshed after NamespaceTerminating error", true},
		{"Pod not refreshed after NamespaceTerminating error", false},
	} {
		cases = append(cases, kubectlCase{file: drainTest, test: "TestEvictDuringNamespaceTerminating", name: tc.description, verdict: fixed,
			setup: func(t *testing.T) *kubectlFake {
				f := newKubectlFake(evictionResources("v1"), objects([]corev1.Pod{pod}, domainNode("node", false))...).target(pod)
				var once sync.Once
				f.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() != "eviction" {
						return false, nil, nil
					}
					if tc.refresh {
						once.Do(func() {
							tr := f.Tracker()
							go func() {
								time.Sleep(10 * time.Millisecond)
								_, _ = terminating(tr, pod.Namespace, pod.Name, time.Now())
								time.Sleep(200 * time.Millisecond)
								_ = tr.Delete(podsResource, pod.Namespace, pod.Name)
							}()
						})
					}
					err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("namespace is terminating"))
					err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause})
					return true, nil, err
				})
				return f
			},
			kubectl: kubectlDeleteOrEvict(flags, []corev1.Pod{pod}),
			udrain:  udrainDrain("node", flags),
			want: func(o observed) []string {
				var p problems
				if tc.refresh {
					p.check(o.Err == nil, "expected no error, got: %v", o.Err)
					p.check(!slices.Contains(o.Remaining, "default/test-pod"), "the pod is still there")
					return p
				}
				// kubectl's: error when evicting pods/"test-pod" -n
				// "default": global timeout reached: 3s.
				p.check(o.Err != nil && (errors.Is(o.Err, context.DeadlineExceeded) || strings.Contains(o.Err.Error(), "global timeout reached")),
					"error %v, want the drain's timeout", o.Err)
				return p
			}})
	}
	return cases
}

// skipDeletedFilterCases: TestSkipDeletedFilter: a pod deleted longer ago
// than SkipWaitForDeleteTimeoutSeconds is not deleted (nor waited for).
// The filter runs in GetPodsForDeletion, with Force (the pod declares no
// controller).
func skipDeletedFilterCases() []kubectlCase {
	var cases []kubectlCase
	for i, tc := range []struct {
		timeStampAgeSeconds, skipWaitForDeleteTimeoutSeconds int
		expectedDelete                                       bool
	}{{0, 20, true}, {1, 20, true}, {100, 20, false}} {
		flags := func() *drain.Helper {
			return &drain.Helper{SkipWaitForDeleteTimeoutSeconds: tc.skipWaitForDeleteTimeoutSeconds, Force: true}
		}
		cases = append(cases, kubectlCase{file: "pkg/drain/filter_test.go", test: "TestSkipDeletedFilter", name: fmt.Sprint(i), verdict: agrees,
			// The pod's age counts from the run, not from the table's
			// making: a case may wait for others to run first.
			setup: func(t *testing.T) *kubectlFake {
				pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod"}, Spec: corev1.PodSpec{NodeName: "node"}}
				if tc.timeStampAgeSeconds > 0 {
					pod.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-time.Duration(tc.timeStampAgeSeconds) * time.Second)}
				}
				return newKubectlFake(nil, objects([]corev1.Pod{pod}, domainNode("node", false))...)
			},
			kubectl: kubectlPodsForDeletion("node", flags),
			udrain:  udrainPlan("node", flags),
			want: func(o observed) []string {
				var p problems
				p.check(o.Err == nil, "unexpected error %v", o.Err)
				p.check(slices.Contains(o.Deletable, "default/pod") == tc.expectedDelete, "pods for deletion %v; want the pod deleted: %t", o.Deletable, tc.expectedDelete)
				return p
			}})
	}
	return cases
}

// cordonHelperCases: cordon_test.go's three tests of CordonHelper.
func cordonHelperCases() []kubectlCase {
	const file = "pkg/drain/cordon_test.go"
	var cases []kubectlCase
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	for _, tc := range []struct {
		name        string
		nodeObject  runtime.Object
		expectError bool
	}{
		{"valid node object", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "test-node"}}, false},
		{"invalid object type", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod"}}, true},
	} {
		cases = append(cases, kubectlCase{file: file, test: "TestNewCordonHelperFromRuntimeObject", name: tc.name, verdict: noCounterpart,
			why:   "udrain reads nodes as typed objects from its informers; it converts no runtime.Object into a node",
			setup: func(t *testing.T) *kubectlFake { return newKubectlFake(nil) },
			kubectl: func(context.Context, *testing.T, *kubectlFake) observed {
				_, err := drain.NewCordonHelperFromRuntimeObject(tc.nodeObject, scheme, corev1.SchemeGroupVersion.WithKind("Node"))
				return observed{Err: err}
			},
			want: func(o observed) []string {
				var p problems
				p.check((o.Err != nil) == tc.expectError, "error %v, want one: %t", o.Err, tc.expectError)
				return p
			}})
	}
	for _, tc := range []struct {
		name                       string
		currentState, desiredState bool
		expectUpdated              bool
	}{
		{"no change required", true, true, false},
		{"update required - cordon", false, true, true},
		{"update required - uncordon", true, false, true},
	} {
		cases = append(cases, kubectlCase{file: file, test: "TestUpdateIfRequired", name: tc.name, verdict: agrees,
			setup: func(t *testing.T) *kubectlFake {
				return newKubectlFake(nil, domainNode("test-node", tc.currentState))
			},
			kubectl: kubectlCordon([]string{"test-node"}, tc.desiredState),
			udrain:  udrainCordon([]string{"test-node"}, tc.desiredState),
			want: func(o observed) []string {
				var p problems
				p.check(o.Err == nil, "unexpected error %v", o.Err)
				p.check((o.NodeWrites > 0) == tc.expectUpdated, "%d node writes, want an update: %t", o.NodeWrites, tc.expectUpdated)
				p.check(o.Unschedulable["test-node"] == tc.desiredState, "unschedulable %t, want %t", o.Unschedulable["test-node"], tc.desiredState)
				return p
			}})
	}
	for _, tc := range []struct {
		name       string
		shouldFail bool
		verdict    kubectlVerdict
	}{
		{"update success: local object should be updated", false, agrees},
		{"update faild: local object should not be updated", true, fixed},
	} {
		cases = append(cases, kubectlCase{file: file, test: "TestCordonHelper_PatchOrReplaceWithContext", name: tc.name, verdict: tc.verdict,
			setup: func(t *testing.T) *kubectlFake {
				f := newKubectlFake(nil, domainNode("fake-node", false))
				if tc.shouldFail {
					for _, verb := range []string{"update", "patch"} {
						f.PrependReactor(verb, "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
							return true, nil, errors.New("fake update error")
						})
					}
				}
				return f
			},
			kubectl: kubectlCordon([]string{"fake-node"}, true),
			udrain:  udrainCordon([]string{"fake-node"}, true),
			want: func(o observed) []string {
				var p problems
				if !tc.shouldFail {
					p.check(o.Err == nil && o.Unschedulable["fake-node"], "update should succeed: %v, unschedulable %t", o.Err, o.Unschedulable["fake-node"])
					return p
				}
				// Returned, not retried until a timeout (the update
				// error is of the client's own making).
				p.check(o.Err != nil && o.Took < 10*time.Second && o.NodeWrites == 1, "update should fail at once: err %v after %s and %d write(s)", o.Err, o.Took, o.NodeWrites)
				p.check(!o.Unschedulable["fake-node"], "the update failed but the node is cordoned")
				return p
			}})
	}
	return cases
}

// kubectlCordon cordons (desired) or uncordons the nodes as kubectl's
// command does: it gets every node first (a missing one fails the
// command, before any change), then RunCordonOrUncordon each.
func kubectlCordon(nodes []string, desired bool) runner {
	return func(ctx context.Context, t *testing.T, f *kubectlFake) observed {
		return kubectlRun(ctx, t, f, &drain.Helper{}, func(h *drain.Helper) error {
			var got []*corev1.Node
			for _, name := range nodes {
				n, err := f.CoreV1().Nodes().Get(ctx, strings.TrimPrefix(name, "node/"), metav1.GetOptions{})
				if err != nil {
					return err
				}
				got = append(got, n)
			}
			for _, n := range got {
				if err := drain.RunCordonOrUncordon(h, n, desired); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// udrainCordon cordons the domain of each node (a drain of it: its
// cordon, and nothing to evict) or uncordons it (Drainer.Uncordon).
func udrainCordon(nodes []string, desired bool) runner {
	return func(ctx context.Context, t *testing.T, f *kubectlFake) observed {
		return udrainRun(ctx, t, f, &drain.Helper{GracePeriodSeconds: -1}, func(d *eviction.Drainer) (*eviction.Plan, error) {
			for _, name := range nodes {
				var err error
				if desired {
					_, _, err = d.Drain(ctx, name, eviction.DrainOptions{})
				} else {
					_, err = d.Uncordon(ctx, name)
				}
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
	}
}
