package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// SignalKind says where a node agent reports its upgrade done.
type SignalKind string

// The places a node agent may report in.
const (
	// SignalLabel: a node label Key with the value Value.
	SignalLabel SignalKind = "Label"
	// SignalAnnotation: a node annotation Key with the value Value.
	SignalAnnotation SignalKind = "Annotation"
	// SignalCondition: a node condition of type Key with the status Value
	// ("True" if Value is empty).
	SignalCondition SignalKind = "Condition"
)

// Signal is what a node shows when its agent has finished the upgrade.
type Signal struct {
	Kind  SignalKind
	Key   string
	Value string
}

// String renders the signal as a flag would take it: "label k=v",
// "annotation k=v", "condition Type=Status".
func (s Signal) String() string {
	v := s.Value
	if s.Kind == SignalCondition && v == "" {
		v = string(corev1.ConditionTrue)
	}
	return fmt.Sprintf("%s %s=%s", strings.ToLower(string(s.Kind)), s.Key, v)
}

// Shown reports whether node shows the signal.
func (s Signal) Shown(node *corev1.Node) bool {
	switch s.Kind {
	case SignalLabel:
		v, ok := node.Labels[s.Key]
		return ok && v == s.Value
	case SignalAnnotation:
		v, ok := node.Annotations[s.Key]
		return ok && v == s.Value
	case SignalCondition:
		want := corev1.ConditionStatus(s.Value)
		if want == "" {
			want = corev1.ConditionTrue
		}
		for _, c := range node.Status.Conditions {
			if string(c.Type) == s.Key {
				return c.Status == want
			}
		}
	}
	return false
}

// NodeLabelOptions configure [NodeLabel].
type NodeLabelOptions struct {
	// Key and Value are the label the step puts on each node of a domain
	// to request its upgrade, such as
	// upgrade.example.com/kubelet-version=1.37.2: what an agent on the
	// node, or a system-upgrade-controller Plan selecting nodes by label,
	// acts on.
	Key, Value string
	// Done is what a node shows once its agent has finished. Make it name
	// the version (a label upgrade.example.com/kubelet-done=1.37.2), so
	// that a signal left from the last upgrade does not count for this
	// one.
	Done Signal
	// Timeout bounds the wait for a domain's nodes; zero means no limit
	// but the context's.
	Timeout time.Duration
	// Clock times Timeout; nil means the real clock.
	Clock clock.Clock
}

// NodeLabel returns an upgrade step that labels every node of a domain
// with opts.Key=opts.Value and waits, on a watch of the nodes, until each
// shows opts.Done. A node that shows it already when labelled counts at
// once, so a resumed rollout goes straight on; the label stays on the
// nodes afterwards, as the record of the version asked for.
//
// When opts.Timeout passes first, the step fails with a
// *TimeoutError naming the nodes still waiting. NodeLabel returns
// a *udrain.ConfigError for options that cannot work.
func NodeLabel(client kubernetes.Interface, opts NodeLabelOptions) (eviction.UpgradeFunc, error) {
	if client == nil {
		return nil, &udrain.ConfigError{Field: "upgrade.NodeLabel(client)", Problem: "nil; pass a clientset, e.g. from kubernetes.NewForConfig"}
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &labelStep{client: client, opts: opts}
	return s.run, nil
}

// Validate checks the options without a cluster: it returns the
// *udrain.ConfigError that NodeLabel would return for them.
func (o NodeLabelOptions) Validate() error {
	if err := validLabel(o.Key, o.Value); err != nil {
		return err
	}
	if err := validSignal(o.Done); err != nil {
		return err
	}
	if o.Done.Kind == SignalLabel && o.Done.Key == o.Key {
		return &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Done", Problem: fmt.Sprintf("the done label is the requested label %s itself: the step would count its own request as done", o.Key)}
	}
	if o.Timeout < 0 {
		return &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Timeout", Problem: fmt.Sprintf("%s: use 0 (no limit) or a positive duration", o.Timeout)}
	}
	return nil
}

func validLabel(key, value string) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Key", Problem: fmt.Sprintf("%q is not a label key: %s", key, strings.Join(errs, "; "))}
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Value", Problem: fmt.Sprintf("%q is not a label value: %s", value, strings.Join(errs, "; "))}
	}
	return nil
}

// ParseLabel parses the label NodeLabel requests, "KEY=VALUE" as a
// command line or a configuration file gives it, into
// NodeLabelOptions.Key and Value, and checks both. Its errors are
// *udrain.ConfigError about NodeLabelOptions.Key (or Value).
func ParseLabel(text string) (key, value string, err error) {
	key, value, ok := strings.Cut(text, "=")
	if !ok {
		return "", "", &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Key", Problem: fmt.Sprintf("%q: write KEY=VALUE", text)}
	}
	return key, value, validLabel(key, value)
}

// ParseSignal parses a done signal of kind as text gives it: "KEY=VALUE"
// for a label or an annotation, "TYPE[=STATUS]" for a condition (status
// True when left out), and checks it. Its errors are *udrain.ConfigError
// about NodeLabelOptions.Done.
func ParseSignal(kind SignalKind, text string) (Signal, error) {
	s := Signal{Kind: kind}
	var ok bool
	if s.Key, s.Value, ok = strings.Cut(text, "="); !ok && kind != SignalCondition {
		return Signal{}, &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Done", Problem: fmt.Sprintf("%s %q: write KEY=VALUE", strings.ToLower(string(kind)), text)}
	}
	if err := validSignal(s); err != nil {
		return Signal{}, err
	}
	return s, nil
}

func validSignal(s Signal) error {
	field := "upgrade.NodeLabelOptions.Done"
	switch s.Kind {
	case SignalLabel, SignalAnnotation:
		if errs := validation.IsQualifiedName(s.Key); len(errs) > 0 {
			return &udrain.ConfigError{Field: field, Problem: fmt.Sprintf("%q is not a %s key: %s", s.Key, strings.ToLower(string(s.Kind)), strings.Join(errs, "; "))}
		}
		if s.Kind == SignalLabel {
			if errs := validation.IsValidLabelValue(s.Value); len(errs) > 0 {
				return &udrain.ConfigError{Field: field, Problem: fmt.Sprintf("%q is not a label value: %s", s.Value, strings.Join(errs, "; "))}
			}
		}
	case SignalCondition:
		if s.Key == "" {
			return &udrain.ConfigError{Field: field, Problem: "a condition signal needs the condition type"}
		}
		switch corev1.ConditionStatus(s.Value) {
		case "", corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			return &udrain.ConfigError{Field: field, Problem: fmt.Sprintf("condition status %q: use True, False or Unknown", s.Value)}
		}
	default:
		return &udrain.ConfigError{Field: field, Problem: fmt.Sprintf("kind %q: use Label, Annotation or Condition", s.Kind)}
	}
	return nil
}

type labelStep struct {
	client kubernetes.Interface
	opts   NodeLabelOptions
}

func (s *labelStep) run(ctx context.Context, dom topology.Domain) error {
	logger := klog.FromContext(ctx).WithValues("domain", dom.Name, "upgradeStep", "nodeLabel")
	parent := ctx
	if s.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = withTimeout(ctx, s.opts.Clock, s.opts.Timeout)
		defer cancel()
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{s.opts.Key: s.opts.Value}}})
	if err != nil {
		return err
	}
	nodes := s.client.CoreV1().Nodes()
	for _, n := range dom.Nodes {
		if _, err := nodes.Patch(ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("labelling node %s with %s=%s: %w", n, s.opts.Key, s.opts.Value, err)
		}
	}
	logger.Info("Nodes labelled for upgrade", "label", s.opts.Key+"="+s.opts.Value, "nodes", len(dom.Nodes), "done", s.opts.Done.String())

	pending := map[string]bool{}
	for _, n := range dom.Nodes {
		pending[n] = true
	}
	// The whole node list: an agent may take the request label off when
	// done, so a watch by that label could miss the answer.
	lw := listWatch(s.client, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return nodes.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return nodes.Watch(ctx, o)
	})
	_, err = watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		node, ok := ev.Object.(*corev1.Node)
		if !ok || !pending[node.Name] || ev.Type == watch.Deleted {
			return false, nil
		}
		if s.opts.Done.Shown(node) {
			delete(pending, node.Name)
			logger.V(2).Info("Node reported its upgrade done", "node", node.Name, "left", len(pending))
		}
		return len(pending) == 0, nil
	})
	if err == nil {
		logger.Info("Every node reported its upgrade done", "nodes", len(dom.Nodes))
		return nil
	}
	left := make([]string, 0, len(pending))
	for n := range pending {
		left = append(left, n)
	}
	slices.Sort(left)
	return waitError(parent, ctx, err, &TimeoutError{Domain: dom.Name, Pending: left, Awaited: s.opts.Done.String(), Timeout: s.opts.Timeout})
}
