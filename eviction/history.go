package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/resourceversion"
)

// wentBack is the first object a view saw go back in time.
type wentBack struct {
	object   string
	was, now string
}

// history remembers the first object whose resourceVersion went back
// between two events of a view's informers. A resourceVersion is opaque
// to clients, but the API server's come from etcd's revision, and an
// object's only grows; versions that are not decimal numbers are not
// compared.
type history struct {
	mu    sync.Mutex
	first *wentBack
}

// update compares an object's versions across an informer's update.
func (h *history) update(old, cur interface{}) {
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(cur)
	if err1 != nil || err2 != nil || o.GetUID() != n.GetUID() {
		return
	}
	was, now := o.GetResourceVersion(), n.GetResourceVersion()
	if !resourceversion.Older(now, was) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = &wentBack{object: describeObject(cur), was: was, now: now}
	}
}

func (h *history) back() *wentBack {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

func describeObject(obj interface{}) string {
	m, _ := meta.Accessor(obj)
	switch obj.(type) {
	case *corev1.Node:
		return "node " + m.GetName()
	case *corev1.Pod:
		return "pod " + m.GetNamespace() + "/" + m.GetName()
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget " + m.GetNamespace() + "/" + m.GetName()
	}
	if m.GetNamespace() == "" {
		return fmt.Sprintf("%T %s", obj, m.GetName())
	}
	return fmt.Sprintf("%T %s/%s", obj, m.GetNamespace(), m.GetName())
}

// expected is what the rollout wrote and has seen, that a change of
// history would undo: the domains it finished or found upgraded, and the
// nodes it holds cordoned. The rollout's stages set it; its guard reads
// it.
type expected struct {
	mu       sync.Mutex
	upgraded []string            // domains
	cordoned map[string][]string // nodes, by domain
}

func (x *expected) addUpgraded(domain string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !slices.Contains(x.upgraded, domain) {
		x.upgraded = append(x.upgraded, domain)
	}
}

// setCordoned sets the nodes of domain the rollout holds cordoned (none:
// it released them).
func (x *expected) setCordoned(domain string, nodes []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cordoned == nil {
		x.cordoned = map[string][]string{}
	}
	if len(nodes) == 0 {
		delete(x.cordoned, domain)
		return
	}
	x.cordoned[domain] = slices.Clone(nodes)
}

func (x *expected) get() (upgraded, cordoned []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, nodes := range x.cordoned {
		cordoned = append(cordoned, nodes...)
	}
	slices.Sort(cordoned)
	return slices.Clone(x.upgraded), cordoned
}

// historyChanged says whether the view shows the cluster's history
// changed under the rollout: an object's resourceVersion went back, a
// domain it upgraded lost all its marks, or nodes it holds cordoned lost
// their cordon mark. A node gone from the view says nothing (an
// autoscaler may remove nodes).
func (r *rollout) historyChanged() *udrain.HistoryChangedError {
	if b := r.v.hist.back(); b != nil {
		return &udrain.HistoryChangedError{ID: r.id, Object: b.object, Seen: b.was, Server: b.now}
	}
	upgraded, cordoned := r.expect.get()
	for _, name := range upgraded {
		seen, marked := 0, false
		for _, n := range mustDomain(r.layout, name).Nodes {
			node, ok := r.v.Node(n)
			if !ok {
				continue
			}
			seen++
			marked = marked || node.Annotations[udrain.UpgradedByAnnotation] == r.id
		}
		if seen > 0 && !marked {
			return &udrain.HistoryChangedError{ID: r.id, Domain: name}
		}
	}
	var lost []string
	for _, n := range cordoned {
		if node, ok := r.v.Node(n); ok && node.Annotations[udrain.CordonedByAnnotation] != r.id {
			lost = append(lost, n)
		}
	}
	if len(lost) > 0 {
		return &udrain.HistoryChangedError{ID: r.id, Nodes: lost}
	}
	return nil
}

// guardHistory watches the view while the rollout runs and cancels the
// returned context, with a *HistoryChangedError as its cause, when the
// cluster's history changes under it. It looks at every change the view
// sees, at most every 200ms.
func (r *rollout) guardHistory(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			changed := r.v.Changed()
			if e := r.historyChanged(); e != nil {
				r.logger.Info("The cluster's state went back in time; stopping", "err", e)
				cancel(e)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
	}
}

// causeOf turns a *DomainError that ended in the cancel of ctx into one
// that says why ctx was cancelled, when the cause is a T: the rollout
// stopped because its Lease was lost (*RetryError, ReasonLockLost) or its history
// changed (*HistoryChangedError), not because it was "canceled".
func causeOf[T error](ctx context.Context, err error) error {
	var cause T
	var de *DomainError
	if errors.As(context.Cause(ctx), &cause) && errors.As(err, &de) && errors.Is(de.Err, context.Canceled) {
		de.Err = cause
	}
	return err
}

// confirmHistory reads one of the nodes from the API server (a list by
// name, read from etcd) before the rollout records progress on them (its
// upgraded mark), and returns a *HistoryChangedError when the server's
// copy is older than the view's (a restore the view has not caught up with
// yet) or lost the cordon mark the view shows. A read that fails says
// nothing: the write that follows meets the same server.
func (r *rollout) confirmHistory(ctx context.Context, nodes []string) *udrain.HistoryChangedError {
	var seen *corev1.Node
	for _, n := range nodes {
		if node, ok := r.v.Node(n); ok {
			seen = node
			break
		}
	}
	if seen == nil {
		return nil
	}
	var list *corev1.NodeList
	_, err := r.d.s.write(ctx, func(ctx context.Context) error {
		var err error
		list, err = r.d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + seen.Name})
		return err
	})
	if err != nil || len(list.Items) != 1 || list.Items[0].UID != seen.UID {
		return nil
	}
	cur := &list.Items[0]
	r.v.hist.update(seen, cur)
	if b := r.v.hist.back(); b != nil {
		return &udrain.HistoryChangedError{ID: r.id, Object: b.object, Seen: b.was, Server: b.now}
	}
	if seen.Annotations[udrain.CordonedByAnnotation] == r.id && cur.Annotations[udrain.CordonedByAnnotation] != r.id {
		return &udrain.HistoryChangedError{ID: r.id, Nodes: []string{cur.Name}}
	}
	return nil
}
