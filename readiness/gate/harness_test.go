package gate

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain/topology"
)

// waitTimeout bounds every wait of these tests; they normally take
// milliseconds.
const waitTimeout = 10 * time.Second

// syncRecord is one reconcile as the controller's afterSync hook saw it.
type syncRecord struct {
	id     topology.GroupID
	result syncResult
	err    error
}

// recorder collects what one controller did.
type recorder struct {
	mu      sync.Mutex
	changes []Change
	syncs   []syncRecord
	leaders []string
	events  []string // "term start", "sync", "term end", in order
}

func (r *recorder) onTerm(started bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if started {
		r.events = append(r.events, "term start")
	} else {
		r.events = append(r.events, "term end")
	}
}

func (r *recorder) eventCount(event string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e == event {
			n++
		}
	}
	return n
}

// syncsOutsideTerms counts reconciles that ran between the end of a term
// and the start of the next.
func (r *recorder) syncsOutsideTerms() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, inTerm := 0, false
	for _, e := range r.events {
		switch e {
		case "term start":
			inTerm = true
		case "term end":
			inTerm = false
		case "sync":
			if !inTerm {
				n++
			}
		}
	}
	return n
}

func (r *recorder) onChange(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
}

func (r *recorder) afterSync(id topology.GroupID, result syncResult, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs = append(r.syncs, syncRecord{id, result, err})
	r.events = append(r.events, "sync")
}

func (r *recorder) onNewLeader(identity string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaders = append(r.leaders, identity)
}

func (r *recorder) changeVerdicts() []verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	var vs []verdict
	for _, c := range r.changes {
		vs = append(vs, verdictOf(c.Condition))
	}
	return vs
}

func (r *recorder) changeList() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Change(nil), r.changes...)
}

// count returns the number of reconciles of group name with the given
// result.
func (r *recorder) count(name string, result syncResult) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.syncs {
		if s.id.Name == name && s.result == result && s.err == nil {
			n++
		}
	}
	return n
}

func (r *recorder) syncCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.syncs)
}

func (r *recorder) sawLeader(identity string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.leaders {
		if l == identity {
			return true
		}
	}
	return false
}

// fakeCluster is a fake clientset holding some pods.
type fakeCluster struct {
	t      *testing.T
	client *fake.Clientset
}

func newFakeCluster(t *testing.T, pods ...*corev1.Pod) *fakeCluster {
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	return &fakeCluster{t: t, client: fake.NewClientset(objs...)}
}

// running is a controller started in a goroutine.
type running struct {
	ctrl *Controller
	rec  *recorder
	stop func()
}

// start runs a controller on the cluster until the test ends or stop is
// called; stop waits for Run to return nil.
func (fc *fakeCluster) start(opts Options) *running {
	t := fc.t
	rec := &recorder{}
	opts.OnChange = rec.onChange
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[topology.GroupID](time.Millisecond, 20*time.Millisecond)
	}
	if opts.LeaderElection != nil {
		opts.LeaderElection.OnNewLeader = rec.onNewLeader
	}
	c, err := New(fc.client, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.afterSync = rec.afterSync
	c.onTerm = rec.onTerm
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
			case <-time.After(waitTimeout):
				t.Errorf("Run did not return within %v of its context's end", waitTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return &running{ctrl: c, rec: rec, stop: stop}
}

// waitFor polls cond until it holds, failing the test after waitTimeout.
func (fc *fakeCluster) waitFor(what string, cond func() bool) {
	fc.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		fc.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (fc *fakeCluster) pod(name string) *corev1.Pod {
	fc.t.Helper()
	pod, err := fc.client.CoreV1().Pods(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		fc.t.Fatalf("get pod %s: %v", name, err)
	}
	return pod
}

func (fc *fakeCluster) create(pod *corev1.Pod) {
	fc.t.Helper()
	if _, err := fc.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		fc.t.Fatalf("create pod %s: %v", pod.Name, err)
	}
}

func (fc *fakeCluster) update(name string, opts ...podOption) {
	fc.t.Helper()
	pod := fc.pod(name)
	for _, o := range opts {
		o(pod)
	}
	if _, err := fc.client.CoreV1().Pods(testNamespace).Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		fc.t.Fatalf("update pod %s: %v", name, err)
	}
}

func (fc *fakeCluster) delete(name string) {
	fc.t.Helper()
	if err := fc.client.CoreV1().Pods(testNamespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		fc.t.Fatalf("delete pod %s: %v", name, err)
	}
}

// statusPatches counts the patches of pods/status sent to the cluster,
// failed ones included.
func (fc *fakeCluster) statusPatches() int {
	n := 0
	for _, a := range fc.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// failPatchesOnce makes the first status patch fail with err.
func (fc *fakeCluster) failPatchesOnce(err error) {
	var once sync.Once
	fc.client.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		failed := false
		once.Do(func() { failed = true })
		if failed {
			return true, nil, err
		}
		return false, nil, nil
	})
}
