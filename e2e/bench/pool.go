package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
)

// Shape is a benchmark cluster's layout: UDs domains of PerUD 8-GPU nodes,
// and Workloads LeaderWorkerSet-like workloads of UDs groups each (one
// group per domain, a PDB keeping UDs−BudgetGroups of them), Size pods per group
// requesting GPUsPerPod GPUs each.
type Shape struct {
	UDs        int `json:"uds"`
	PerUD      int `json:"nodesPerUD"`
	Workloads  int `json:"workloads"`
	Size       int `json:"podsPerGroup"`
	GPUsPerPod int `json:"gpusPerPod"`
	// ReadyDelay and TerminateDelay are the pods' kwok delays; Grace
	// their termination grace period in seconds.
	ReadyDelay     time.Duration `json:"readyDelay"`
	TerminateDelay time.Duration `json:"terminateDelay"`
	Grace          int64         `json:"gracePeriodSeconds"`
	// BudgetGroups is how many groups of a workload its PDB lets be down
	// at once (minAvailable groups − BudgetGroups); 0 means 1.
	BudgetGroups int `json:"budgetGroups,omitempty"`
}

// Nodes is the number of nodes; Groups the number of groups; Pods the
// number of pods.
func (s Shape) Nodes() int  { return s.UDs * s.PerUD }
func (s Shape) Groups() int { return s.Workloads * s.UDs }
func (s Shape) Pods() int   { return s.Groups() * s.Size }

// ShapeError says what is wrong with a [Shape] and what to change.
type ShapeError struct {
	Reason string
}

func (e *ShapeError) Error() string { return e.Reason }

// Validate says what is wrong with the shape (every problem, each a
// *ShapeError), in flag terms.
func (s Shape) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, &ShapeError{Reason: fmt.Sprintf(format, args...)})
	}
	if s.UDs < 2 || s.PerUD < 1 || s.Workloads < 1 || s.Size < 1 {
		bad("need at least 2 upgrade domains, 1 node per domain, 1 workload and 1 pod per group (have %d, %d, %d, %d)", s.UDs, s.PerUD, s.Workloads, s.Size)
	}
	gpus := fixture.H100().Count
	if s.GPUsPerPod < 1 || s.GPUsPerPod > gpus {
		bad("GPUs per pod must be 1..%d, not %d", gpus, s.GPUsPerPod)
	} else if slots := s.PerUD * (gpus / s.GPUsPerPod); s.Workloads*s.Size > slots {
		bad("%d workloads x %d pods per group do not fit in a domain of %d nodes (%d pods of %d GPUs): add nodes per domain or use fewer, smaller groups",
			s.Workloads, s.Size, s.PerUD, slots, s.GPUsPerPod)
	}
	if s.BudgetGroups < 0 || s.BudgetGroups >= max(s.UDs, 2) {
		bad("the budget's groups down at once (%d) must be 0 or 1 (one at a time) up to %d, fewer than the %d groups of a workload", s.BudgetGroups, max(s.UDs, 2)-1, s.UDs)
	}
	if s.ReadyDelay < 0 || s.TerminateDelay < 0 {
		bad("delays must not be negative")
	}
	if s.Grace > 0 && s.TerminateDelay > time.Duration(s.Grace)*time.Second {
		bad("the termination delay %s is longer than the grace period %ds: kwok would cut it; raise the grace period", s.TerminateDelay, s.Grace)
	}
	return errors.Join(errs...)
}

// Pool is one side of a benchmark: a namespace and a node pool of the same
// name, with its workloads and, once started, a recording of its pods.
type Pool struct {
	Name      string
	Shape     Shape
	Nodes     fixture.Nodes
	Workloads []fixture.LWS
	// NodeList is the pool's nodes as created; UDOf maps their names to
	// their domains.
	NodeList []corev1.Node
	UDOf     map[string]string
	Recorder *fixture.PodRecorder
}

// NewPool describes a pool; nothing is created before Create.
func NewPool(name string, s Shape) *Pool {
	gpu := fixture.H100()
	p := &Pool{Name: name, Shape: s, Nodes: fixture.Nodes{Pool: name, UDs: s.UDs, PerUD: s.PerUD, GPU: &gpu}, UDOf: map[string]string{}}
	for w := range s.Workloads {
		wname := "llm"
		if s.Workloads > 1 {
			wname = "llm-" + strconv.Itoa(w)
		}
		p.Workloads = append(p.Workloads, fixture.LWS{Namespace: name, Name: wname, Groups: s.UDs, Size: s.Size, Pool: name,
			GPUsPerPod: s.GPUsPerPod, ReadyDelay: s.ReadyDelay, TerminateDelay: s.TerminateDelay, GracePeriodSeconds: s.Grace, BudgetGroups: s.BudgetGroups})
	}
	return p
}

// Domains lists the pool's upgrade domains in natural order, the spare
// ones ([Pool.AddSpare]) last.
func (p *Pool) Domains() []string {
	out := make([]string, max(p.Nodes.UDs, p.Shape.UDs))
	for d := range out {
		out[d] = p.Nodes.UD(d)
	}
	return out
}

// DomainNodes lists the nodes of domain d in order.
func (p *Pool) DomainNodes(d int) []string {
	out := make([]string, p.Shape.PerUD)
	for i := range out {
		out[i] = p.Nodes.Name(d, i)
	}
	return out
}

// ObservedWorkloads describes the pool's workloads for [Observe].
func (p *Pool) ObservedWorkloads() []Workload {
	out := make([]Workload, len(p.Workloads))
	for i, w := range p.Workloads {
		out[i] = Workload{Name: w.Name, Groups: w.Groups, MinAvailable: w.MinAvailable()}
	}
	return out
}

// Create makes the namespace, the nodes and the workloads, each kind of
// object concurrently (limit requests in flight), as a cluster of
// hundreds of nodes needs.
func (p *Pool) Create(ctx context.Context, c kubernetes.Interface, limit int) error {
	if err := p.Shape.Validate(); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: map[string]string{"udrain.dev/bench": "true"}}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", p.Name, err)
	}
	nodes, err := p.Nodes.Build()
	if err != nil {
		return err
	}
	p.NodeList = make([]corev1.Node, len(nodes))
	err = parallel(ctx, len(nodes), limit, func(i int) error {
		n, err := c.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			n, err = c.CoreV1().Nodes().Get(ctx, nodes[i].Name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("create node %s: %w", nodes[i].Name, err)
		}
		p.NodeList[i] = *n
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range p.NodeList {
		p.UDOf[n.Name] = n.Labels[fixture.UpgradeDomainLabel]
	}
	// Pods are refused until the namespace's default ServiceAccount exists.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(p.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no default service account in %s: %w", p.Name, err)
	}
	if err := fixture.EnsureWorkerIndexLabeler(ctx, c, p.Name); err != nil {
		return err
	}
	type create func() error
	var creates []create
	for _, w := range p.Workloads {
		pdb := w.PodDisruptionBudget()
		creates = append(creates, func() error {
			_, err := c.PolicyV1().PodDisruptionBudgets(p.Name).Create(ctx, pdb, metav1.CreateOptions{})
			return err
		})
		sets, err := p.statefulSets(w)
		if err != nil {
			return err
		}
		for _, s := range sets {
			creates = append(creates, func() error {
				_, err := c.AppsV1().StatefulSets(p.Name).Create(ctx, s, metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("create StatefulSet %s/%s: %w", p.Name, s.Name, err)
				}
				return nil
			})
		}
	}
	return parallel(ctx, len(creates), limit, func(i int) error { return creates[i]() })
}

// statefulSets are workload w's StatefulSets as the pool creates them.
func (p *Pool) statefulSets(w fixture.LWS) ([]*appsv1.StatefulSet, error) {
	sets, err := w.StatefulSets()
	if err != nil {
		return nil, err
	}
	for _, s := range sets {
		instantTermination(&s.Spec.Template, p.Shape.TerminateDelay)
		if w.Exclusive {
			exclusiveWithin(&s.Spec.Template.Spec, w.Name)
		}
	}
	return sets, nil
}

// exclusiveWithin narrows the exclusive topology of a pod of workload
// name ([fixture.LWS] Exclusive) to that workload: its anti-affinity to
// other groups' pods selects only the workload's pods. LeaderWorkerSet's exclusive topology repels the
// groups of every LWS in the namespace; a cluster with several models
// runs each in a namespace of its own, where the same terms repel only
// the model's own groups. The pool keeps all its workloads in one
// namespace (one recording, one audit count), so the terms name the
// workload instead: each domain may hold one group of each workload.
func exclusiveWithin(spec *corev1.PodSpec, name string) {
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		return
	}
	scope := metav1.LabelSelectorRequirement{Key: fixture.LWSNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{name}}
	terms := spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	for i := range terms {
		if sel := terms[i].LabelSelector; sel != nil && selects(sel, fixture.LWSGroupKeyLabel) {
			sel.MatchExpressions = append(sel.MatchExpressions, scope)
		}
	}
}

// selects says whether a selector has a requirement on label key.
func selects(sel *metav1.LabelSelector, key string) bool {
	if _, ok := sel.MatchLabels[key]; ok {
		return true
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == key {
			return true
		}
	}
	return false
}

// AddSpare adds an empty domain of the pool's size after its last (the
// spare capacity of a cluster: a buffer pool, a domain emptied earlier),
// creating its nodes (limit requests in flight). Nothing is placed there
// until the scheduler puts something there.
func (p *Pool) AddSpare(ctx context.Context, c kubernetes.Interface, limit int) (string, error) {
	more := p.Nodes
	more.UDs++
	all, err := more.Build()
	if err != nil {
		return "", err
	}
	nodes := all[len(all)-more.PerUD:]
	created := make([]corev1.Node, len(nodes))
	err = parallel(ctx, len(nodes), limit, func(i int) error {
		n, err := c.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create spare node %s: %w", nodes[i].Name, err)
		}
		created[i] = *n
		return nil
	})
	if err != nil {
		return "", err
	}
	p.Nodes = more
	p.NodeList = append(p.NodeList, created...)
	for _, n := range created {
		p.UDOf[n.Name] = n.Labels[fixture.UpgradeDomainLabel]
	}
	return p.Nodes.UD(more.UDs - 1), nil
}

// instantTermination gives a pod template a termination delay of 0 when
// delay is 0: the fixture leaves a zero delay to the Stages' default (2s),
// but the API-cost scenario measures instant termination too (the pod is
// gone within the second of its deletion: kwok counts from the deletion
// timestamp, which has whole seconds).
func instantTermination(t *corev1.PodTemplateSpec, delay time.Duration) {
	if delay != 0 {
		return
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[fixture.TerminateDelayAnnotation] = "0ms"
}

// Health says how far the pool is from healthy: groups healthy and PDBs
// caught up (every group counted healthy, as many disruptions allowed as
// the budget gives when all are); "" when it is.
func (p *Pool) Health(ctx context.Context, c kubernetes.Interface) (string, error) {
	pods, err := c.CoreV1().Pods(p.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	pdbs, err := c.PolicyV1().PodDisruptionBudgets(p.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	healthy, total := 0, 0
	for _, w := range p.Workloads {
		total += w.Groups
		for _, g := range fixture.Groups(pods.Items, p.NodeList, w.Name, "") {
			if g.Healthy() {
				healthy++
			}
		}
	}
	caughtUp := 0
	for _, b := range pdbs.Items {
		if st := b.Status; st.ObservedGeneration >= b.Generation && st.CurrentHealthy == st.ExpectedPods && st.ExpectedPods > 0 &&
			st.DisruptionsAllowed == st.ExpectedPods-st.DesiredHealthy {
			caughtUp++
		}
	}
	if healthy == total && caughtUp == len(p.Workloads) {
		return "", nil
	}
	return fmt.Sprintf("%d/%d groups healthy, %d/%d PDBs caught up, %d pods", healthy, total, caughtUp, len(p.Workloads), len(pods.Items)), nil
}

// WaitHealthy waits until [Pool.Health] says the pool is healthy.
func (p *Pool) WaitHealthy(ctx context.Context, c kubernetes.Interface, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		msg, err := p.Health(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = msg
		return msg == "", nil
	})
	if err != nil {
		return fmt.Errorf("pool %s not healthy within %s: %s", p.Name, timeout, last)
	}
	return nil
}

// Record starts recording the pool's pods.
func (p *Pool) Record(ctx context.Context, c kubernetes.Interface) error {
	rec, err := fixture.RecordPods(ctx, c, p.Name, nil)
	if err != nil {
		return err
	}
	p.Recorder = rec
	return nil
}

// GroupIn returns the index of workload w's group whose leader runs in
// domain d.
func (p *Pool) GroupIn(ctx context.Context, c kubernetes.Interface, w, d int) (int, error) {
	groups, err := p.Workloads[w].Health(ctx, c)
	if err != nil {
		return 0, err
	}
	for _, g := range groups {
		if len(g.UDs) == 1 && g.UDs[0] == p.Nodes.UD(d) {
			return g.Index, nil
		}
	}
	return 0, fmt.Errorf("no group of %s in domain %s: %+v", p.Workloads[w].Name, p.Nodes.UD(d), groups)
}

// Delete stops the recording and deletes the namespace and the nodes,
// without waiting.
func (p *Pool) Delete(ctx context.Context, c kubernetes.Interface) error {
	if p.Recorder != nil {
		p.Recorder.Stop()
	}
	err := c.CoreV1().Namespaces().Delete(ctx, p.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	return errors.Join(err, fixture.DeletePool(ctx, c, p.Name))
}

// parallel runs fn(0..n-1) with at most limit calls at once and returns
// the first error; after an error no new call starts.
func parallel(ctx context.Context, n, limit int, fn func(i int) error) error {
	if limit < 1 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	for i := range n {
		if failed() || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
