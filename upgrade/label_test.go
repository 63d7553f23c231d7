package upgrade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
)

func TestSignalShown(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"done": "1.37", "empty": ""},
		Annotations: map[string]string{"state": "done"},
	}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: "KubeletUpgraded", Status: corev1.ConditionTrue}, {Type: "Rebooted", Status: corev1.ConditionFalse}}}}
	for _, tc := range []struct {
		s    Signal
		want bool
	}{
		{Signal{SignalLabel, "done", "1.37"}, true},
		{Signal{SignalLabel, "done", "1.36"}, false},
		{Signal{SignalLabel, "empty", ""}, true},
		{Signal{SignalLabel, "missing", ""}, false},
		{Signal{SignalAnnotation, "state", "done"}, true},
		{Signal{SignalAnnotation, "done", "1.37"}, false},
		{Signal{SignalCondition, "KubeletUpgraded", ""}, true},
		{Signal{SignalCondition, "KubeletUpgraded", "True"}, true},
		{Signal{SignalCondition, "Rebooted", ""}, false},
		{Signal{SignalCondition, "Rebooted", "False"}, true},
		{Signal{SignalCondition, "Missing", "False"}, false},
	} {
		if got := tc.s.Shown(node); got != tc.want {
			t.Errorf("%s shown: %t, want %t", tc.s, got, tc.want)
		}
	}
}

func TestNodeLabelConfigErrors(t *testing.T) {
	done := Signal{SignalLabel, "example.com/done", "1.37"}
	for name, tc := range map[string]struct {
		opts  NodeLabelOptions
		field string
	}{
		"bad key":           {NodeLabelOptions{Key: "a b", Value: "1", Done: done}, "upgrade.NodeLabelOptions.Key"},
		"bad value":         {NodeLabelOptions{Key: "k", Value: "a b", Done: done}, "upgrade.NodeLabelOptions.Value"},
		"no signal":         {NodeLabelOptions{Key: "k", Value: "v"}, "upgrade.NodeLabelOptions.Done"},
		"done is request":   {NodeLabelOptions{Key: "example.com/done", Value: "1.37", Done: done}, "upgrade.NodeLabelOptions.Done"},
		"condition no type": {NodeLabelOptions{Key: "k", Value: "v", Done: Signal{Kind: SignalCondition}}, "upgrade.NodeLabelOptions.Done"},
		"condition status":  {NodeLabelOptions{Key: "k", Value: "v", Done: Signal{SignalCondition, "Up", "yes"}}, "upgrade.NodeLabelOptions.Done"},
		"negative timeout":  {NodeLabelOptions{Key: "k", Value: "v", Done: done, Timeout: -1}, "upgrade.NodeLabelOptions.Timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NodeLabel(fake.NewClientset(), tc.opts)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("err = %v, want a ConfigError for %s", err, tc.field)
			}
		})
	}
}

func testNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// stepLog records the lines of a step's contextual logger (verbosity 2)
// and lets a test wait for one: how a test knows what a step has seen
// before it lets the step's Timeout pass on a fake clock.
type stepLog struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // closed, and replaced, at each line
}

// newStepLog returns a context logging to a new stepLog; the lines are
// in the test's log if it fails.
func newStepLog(t *testing.T, ctx context.Context) (context.Context, *stepLog) {
	l := &stepLog{added: make(chan struct{})}
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Logf("the step logged:\n%s", strings.Join(l.lines, "\n"))
		}
	})
	return klog.NewContext(ctx, funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
		close(l.added)
		l.added = make(chan struct{})
	}, funcr.Options{Verbosity: 2})), l
}

// waitFor waits until a line has every one of parts (as funcr writes
// them: `"msg"="..."`, `"node"="n1"`).
func (l *stepLog) waitFor(t *testing.T, parts ...string) {
	t.Helper()
	bound := time.NewTimer(30 * time.Second)
	defer bound.Stop()
	for {
		l.mu.Lock()
		added := l.added
		for _, line := range l.lines {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
		select {
		case <-added:
		case <-bound.C:
			t.Fatalf("no line with %q logged within 30s", parts)
		}
	}
}

// watchStarted makes client report on the returned channel when a watch
// of resource has started.
func watchStarted(client *fake.Clientset, resource string) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor(resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(ch) })
		return true, w, err
	})
	return ch
}

func TestNodeLabelStep(t *testing.T) {
	const key, version = "example.com/kubelet-version", "1.37.2"
	doneLabel := Signal{SignalLabel, "example.com/kubelet-done", version}
	for name, tc := range map[string]struct {
		nodes   []runtime.Object
		done    Signal
		timeout time.Duration
		// agent plays the node agent once the step watches: it changes
		// the nodes it returns.
		agent func(n *corev1.Node) bool
		// seen are the nodes the step has seen done when the timeout
		// passes (on a fake clock: a slow machine takes its time).
		seen    []string
		wantErr func(error) bool
	}{
		"already done (resumed)": {
			nodes: []runtime.Object{testNode("n1", map[string]string{doneLabel.Key: version}), testNode("n2", map[string]string{doneLabel.Key: version})},
			done:  doneLabel,
		},
		"agent sets the done label": {
			nodes: []runtime.Object{testNode("n1", nil), testNode("n2", nil), testNode("other", nil)},
			done:  doneLabel,
			agent: func(n *corev1.Node) bool {
				if n.Labels[key] != version {
					return false
				}
				n.Labels[doneLabel.Key] = version
				return true
			},
		},
		"agent sets an annotation": {
			nodes: []runtime.Object{testNode("n1", nil), testNode("n2", nil)},
			done:  Signal{SignalAnnotation, "example.com/upgrade-state", "done-" + version},
			agent: func(n *corev1.Node) bool {
				n.Annotations = map[string]string{"example.com/upgrade-state": "done-" + version}
				return true
			},
		},
		"agent sets a condition": {
			nodes: []runtime.Object{testNode("n1", nil), testNode("n2", nil)},
			done:  Signal{Kind: SignalCondition, Key: "KubeletUpgraded"},
			agent: func(n *corev1.Node) bool {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KubeletUpgraded", Status: corev1.ConditionTrue})
				return true
			},
		},
		"an old version's done label does not count": {
			nodes:   []runtime.Object{testNode("n1", map[string]string{doneLabel.Key: "1.36.0"}), testNode("n2", map[string]string{doneLabel.Key: version})},
			done:    doneLabel,
			timeout: 300 * time.Millisecond,
			seen:    []string{"n2"},
			wantErr: func(err error) bool {
				var te *TimeoutError
				return errors.As(err, &te) && cmp.Equal(te.Pending, []string{"n1"}) && errors.Is(err, context.DeadlineExceeded)
			},
		},
		"timeout names the nodes left": {
			nodes:   []runtime.Object{testNode("n1", nil), testNode("n2", nil)},
			done:    doneLabel,
			timeout: 2 * time.Second,
			agent: func(n *corev1.Node) bool {
				if n.Name != "n1" {
					return false
				}
				n.Labels[doneLabel.Key] = version
				return true
			},
			seen: []string{"n1"},
			wantErr: func(err error) bool {
				var te *TimeoutError
				return errors.As(err, &te) && cmp.Equal(te.Pending, []string{"n2"}) && te.Timeout == 2*time.Second
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(tc.nodes...)
			watching := watchStarted(client, "nodes")
			clk := clocktesting.NewFakeClock(time.Now())
			step, err := NodeLabel(client, NodeLabelOptions{Key: key, Value: version, Done: tc.done, Timeout: tc.timeout, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			ctx, log := newStepLog(t, ctx)
			done := make(chan error, 1)
			go func() { done <- step(ctx, testDomain) }()
			if tc.agent != nil {
				select {
				case <-watching:
				case err := <-done:
					t.Fatalf("the step returned before the agent acted: %v", err)
				}
				for _, n := range testDomain.Nodes {
					node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if tc.agent(node) {
						if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if tc.timeout > 0 {
				for _, n := range tc.seen {
					log.waitFor(t, `"msg"="Node reported its upgrade done"`, `"node"="`+n+`"`)
				}
				clk.Step(tc.timeout)
			}
			err = <-done
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("step: %v", err)
			}
			nodes, err := client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes.Items {
				want := n.Name != "other"
				if got := n.Labels[key] == version; got != want {
					t.Errorf("node %s labelled %t, want %t", n.Name, got, want)
				}
			}
		})
	}
}

// TestNodeLabelCancel: a cancelled wait unwraps to context.Canceled (the
// rollout's "interrupted"), not to a timeout.
func TestNodeLabelCancel(t *testing.T) {
	client := fake.NewClientset(testNode("n1", nil), testNode("n2", nil))
	watching := watchStarted(client, "nodes")
	step, err := NodeLabel(client, NodeLabelOptions{Key: "k", Value: "v", Done: Signal{SignalLabel, "d", "v"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- step(ctx, testDomain) }()
	<-watching
	cancel()
	err = <-done
	var te *TimeoutError
	if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
		t.Errorf("err = %v, want context.Canceled and no TimeoutError", err)
	}
}
