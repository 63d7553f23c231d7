package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
)

// config is the demo's shape.
type config struct {
	Namespace, Pool                    string
	UDs, NodesPerUD, Groups, GroupSize int
	ReadyDelay, TerminateDelay         time.Duration
	GracePeriodSeconds                 int64
}

// defaultConfig is three domains of two 8-GPU nodes and three groups of a
// leader and three workers with four GPUs each: a group fills the two
// nodes of one domain, so replacements of a drained group wait for their
// domain to come back (a group cannot squeeze into another domain).
func defaultConfig() config {
	return config{
		Namespace: "udrain-demo", Pool: "demo",
		UDs: 3, NodesPerUD: 2, Groups: 3, GroupSize: 4,
		ReadyDelay: 2 * time.Second, TerminateDelay: time.Second, GracePeriodSeconds: 5,
	}
}

// demo is the demo's nodes and workload.
type demo struct {
	nodes fixture.Nodes
	lws   fixture.LWS
}

func newDemo(c config) (demo, error) {
	gpu := fixture.H100()
	d := demo{
		nodes: fixture.Nodes{Pool: c.Pool, UDs: c.UDs, PerUD: c.NodesPerUD, GPU: &gpu},
		lws: fixture.LWS{Namespace: c.Namespace, Name: "vllm", Groups: c.Groups, Size: c.GroupSize, Pool: c.Pool,
			GPUsPerPod: 4, ReadyDelay: c.ReadyDelay, TerminateDelay: c.TerminateDelay, GracePeriodSeconds: c.GracePeriodSeconds},
	}
	var errs []error
	if _, err := d.nodes.Build(); err != nil {
		errs = append(errs, err)
	}
	if _, err := d.lws.StatefulSets(); err != nil {
		errs = append(errs, err)
	}
	if c.Groups > c.UDs {
		errs = append(errs, fmt.Errorf("%d groups over %d upgrade domains: the leaders' budget (minAvailable groups-1) needs one group per domain; give at most --uds groups", c.Groups, c.UDs))
	}
	if c.GroupSize > c.NodesPerUD*2 {
		errs = append(errs, fmt.Errorf("a group of %d pods (4 GPUs each) does not fit the %d nodes (8 GPUs each) of a domain; raise --nodes-per-ud", c.GroupSize, c.NodesPerUD))
	}
	return d, errors.Join(errs...)
}

// reset deletes what an earlier run left, the namespace (with the workload)
// and the pool's nodes, and waits until both are gone.
func (d demo) reset(ctx context.Context, c kubernetes.Interface, out io.Writer, poll time.Duration) error {
	ns := d.lws.Namespace
	err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	default:
		fmt.Fprintf(out, "  deleting namespace %s of the previous run\n", ns)
		err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("namespace %s still exists after 2m (its pods should be gone within seconds: is the cluster's kwok-controller running? hack/cluster.sh status): %w", ns, err)
		}
	}
	sel := metav1.ListOptions{LabelSelector: d.nodes.Selector().String()}
	old, err := c.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list nodes of pool %s: %w", d.nodes.Pool, err)
	}
	if len(old.Items) == 0 {
		return nil
	}
	fmt.Fprintf(out, "  deleting the %d nodes of the previous run\n", len(old.Items))
	if err := fixture.DeletePool(ctx, c, d.nodes.Pool); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Nodes().List(ctx, sel)
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes of pool %s still exist after 1m: %w", d.nodes.Pool, err)
	}
	return nil
}

// deploy creates the namespace, the nodes and the workload.
func (d demo) deploy(ctx context.Context, c kubernetes.Interface, out io.Writer) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.lws.Namespace}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	nodes, err := d.nodes.Create(ctx, c)
	if err != nil {
		return err
	}
	uds := make([]string, d.nodes.UDs)
	for i := range uds {
		uds[i] = d.nodes.UD(i)
	}
	fmt.Fprintf(out, "  %d nodes with 8 x %s, in %d upgrade domains (label %s): %s\n",
		len(nodes), d.nodes.GPU.Product, d.nodes.UDs, fixture.UpgradeDomainLabel, strings.Join(uds, ", "))
	if err := d.lws.Create(ctx, c); err != nil {
		return err
	}
	w := d.lws
	fmt.Fprintf(out, "  workload %s/%s: %d groups of %d pods (leader %s + workers %s..%s, 4 GPUs each)\n",
		w.Namespace, w.Name, w.Groups, w.Size, w.LeaderName(0), w.WorkerName(0, 1), w.WorkerName(0, w.Size-1))
	fmt.Fprintf(out, "    leaders spread over the domains, each group's workers packed into its leader's domain\n")
	fmt.Fprintf(out, "    leaders declare the readiness gate %s (Ready only while their whole group is)\n", fixture.GroupReadyCondition)
	fmt.Fprintf(out, "    PodDisruptionBudget %s over the leaders: minAvailable %d (one group at a time may be down)\n",
		w.PDBName(), w.PodDisruptionBudget().Spec.MinAvailable.IntValue())
	return nil
}

// waitHealthy polls until every group is healthy and the leaders' budget
// counts them all, printing a line whenever that progresses.
func (d demo) waitHealthy(ctx context.Context, c kubernetes.Interface, out io.Writer, timeout, poll time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		groups, err := d.lws.Health(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		pdb, err := c.PolicyV1().PodDisruptionBudgets(d.lws.Namespace).Get(ctx, d.lws.PDBName(), metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		line, done := status(groups, pdb, d.lws.Groups)
		if line != last {
			last = line
			fmt.Fprintf(out, "  %s\n", line)
		}
		return done, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the workload is not healthy after %s (last: %s); is the readiness-gate controller running? (%w)", timeout, last, err)
	}
	return nil
}

// status says how far the workload is from healthy: every one of want
// groups whole with its leader Ready, and the budget's status counting
// them all for its current spec.
func status(groups []fixture.GroupStatus, pdb *policyv1.PodDisruptionBudget, want int) (string, bool) {
	healthy, pods, ready := 0, 0, 0
	for _, g := range groups {
		if g.Healthy() {
			healthy++
		}
		pods += g.Members
		ready += g.ReadyMembers
	}
	s := pdb.Status
	line := fmt.Sprintf("%d/%d groups healthy (%d pods, %d with ready containers); PodDisruptionBudget %s: %d healthy, allows %d disruption(s)",
		healthy, want, pods, ready, pdb.Name, s.CurrentHealthy, s.DisruptionsAllowed)
	done := healthy == want && len(groups) == want && s.CurrentHealthy == int32(want) && s.ObservedGeneration >= pdb.Generation
	return line, done
}
