package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
)

// The demo's workloads.
const (
	// workloadLWS is real LeaderWorkerSets (fixture.LeaderWorkerSet) that
	// the LWS manager runs ("udrain-demo lws-manager"): one group each.
	workloadLWS = "lws"
	// workloadRay is RayClusters that a real KubeRay operator runs
	// (fixture.RayClusters): a group is a cluster, its leader the head.
	workloadRay = "ray"
)

// config is the demo's shape.
type config struct {
	Namespace, Pool                    string
	UDs, NodesPerUD, Groups, GroupSize int
	ReadyDelay, TerminateDelay         time.Duration
	GracePeriodSeconds                 int64
	// Workload is workloadLWS or workloadRay.
	Workload string
	// KubeRayDir is hack/kuberay.sh's cache folder: deploy installs the
	// CRDs of its crds folder (ray workload only).
	KubeRayDir string
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
		Workload: workloadLWS,
	}
}

// rayGroupSize is a RayCluster of the demo when --group-size is not given:
// a head and two hosts of eight GPUs, which fill the two nodes of a domain.
const rayGroupSize = 3

// servingLabel marks the pods of the demo's LeaderWorkerSets: the budget
// over their leaders selects by it.
const servingLabel = "udrain.dev/demo"

// demo is the demo's nodes and workload: lws, or ray when it is set.
type demo struct {
	nodes      fixture.Nodes
	ns         string
	lws        []fixture.LeaderWorkerSet
	ray        *fixture.RayClusters
	kubeRayDir string
}

// lwsName is the name of the demo's i-th LeaderWorkerSet: vllm-a, vllm-b, ...
func lwsName(i int) string { return fmt.Sprintf("vllm-%c", 'a'+i) }

func newDemo(c config) (demo, error) {
	gpu := fixture.H100()
	d := demo{nodes: fixture.Nodes{Pool: c.Pool, UDs: c.UDs, PerUD: c.NodesPerUD, GPU: &gpu}, ns: c.Namespace}
	var errs []error
	if _, err := d.nodes.Build(); err != nil {
		errs = append(errs, err)
	}
	switch c.Workload {
	case workloadLWS:
		for i := range c.Groups {
			w := fixture.LeaderWorkerSet{Namespace: c.Namespace, Name: lwsName(i), Replicas: 1, Size: c.GroupSize, Pool: c.Pool,
				Placement: fixture.PlaceExclusive, NoBudget: true, PodLabels: map[string]string{servingLabel: "vllm"},
				GPUsPerPod: 4, ReadyDelay: c.ReadyDelay, TerminateDelay: c.TerminateDelay, GracePeriodSeconds: c.GracePeriodSeconds}
			if _, err := w.Object(); err != nil {
				errs = append(errs, err)
				break
			}
			d.lws = append(d.lws, w)
		}
		if c.Groups > 26 {
			errs = append(errs, fmt.Errorf("--groups=%d: at most 26 LeaderWorkerSets (vllm-a..vllm-z)", c.Groups))
		}
		if c.GroupSize > c.NodesPerUD*2 {
			errs = append(errs, fmt.Errorf("a group of %d pods (4 GPUs each) does not fit the %d nodes (8 GPUs each) of a domain; raise --nodes-per-ud", c.GroupSize, c.NodesPerUD))
		}
	case workloadRay:
		d.ray = &fixture.RayClusters{Namespace: c.Namespace, Name: "ray", Clusters: c.Groups, Hosts: c.GroupSize - 1, GPUsPerHost: 8, Pool: c.Pool,
			ReadyDelay: c.ReadyDelay, TerminateDelay: c.TerminateDelay, GracePeriodSeconds: c.GracePeriodSeconds}
		d.kubeRayDir = c.KubeRayDir
		if _, err := d.ray.Objects(); err != nil {
			errs = append(errs, err)
		}
		if c.GroupSize-1 > c.NodesPerUD {
			errs = append(errs, fmt.Errorf("a RayCluster of %d pods (a head and %d hosts of 8 GPUs) does not fit the %d nodes (8 GPUs each) of a domain; raise --nodes-per-ud", c.GroupSize, c.GroupSize-1, c.NodesPerUD))
		}
	default:
		errs = append(errs, fmt.Errorf("--workload=%q: give %s (LeaderWorkerSet-shaped groups) or %s (RayClusters of the KubeRay operator)", c.Workload, workloadLWS, workloadRay))
	}
	if c.Groups > c.UDs {
		errs = append(errs, fmt.Errorf("%d groups over %d upgrade domains: the leaders' budget (minAvailable groups-1) needs one group per domain; give at most --uds groups", c.Groups, c.UDs))
	}
	return d, errors.Join(errs...)
}

// namespace is the workload's namespace.
func (d demo) namespace() string { return d.ns }

// groupCount is the number of groups (LeaderWorkerSets, RayClusters).
func (d demo) groupCount() int {
	if d.ray != nil {
		return d.ray.Clusters
	}
	return len(d.lws)
}

// pdbName is the PDB over the leaders (heads).
func (d demo) pdbName() string {
	if d.ray != nil {
		return d.ray.PDBName()
	}
	return "vllm-leaders"
}

// selector selects the workload's pods.
func (d demo) selector() labels.Selector {
	if d.ray != nil {
		return d.ray.Selector()
	}
	return labels.SelectorFromSet(labels.Set{servingLabel: "vllm"})
}

// leaderPDB is the budget over the leaders of the demo's LeaderWorkerSets:
// all but one available.
func (d demo) leaderPDB() *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(int32(len(d.lws) - 1))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: d.pdbName(), Namespace: d.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable,
			Selector: metav1.SetAsLabelSelector(labels.Set{servingLabel: "vllm", fixture.LWSWorkerIndexLabel: "0"})},
	}
}

// health lists the workload's groups as they are now.
func (d demo) health(ctx context.Context, c kubernetes.Interface) ([]fixture.GroupStatus, error) {
	if d.ray != nil {
		return d.ray.Health(ctx, c)
	}
	pods, err := c.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: d.selector().String()})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", d.ns, err)
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return d.view().groups(pods.Items, nodes.Items), nil
}

// view is how the workload's groups are judged from its pods.
func (d demo) view() groupView {
	if r := d.ray; r != nil {
		return groupView{count: r.Clusters, groups: r.Groups, isLeader: r.IsHead}
	}
	return lwsView(d.lws)
}

// reset deletes what an earlier run left, the namespace (with the workload)
// and the pool's nodes, and waits until both are gone.
func (d demo) reset(ctx context.Context, c kubernetes.Interface, out io.Writer, poll time.Duration) error {
	ns := d.namespace()
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
func (d demo) deploy(ctx context.Context, cs clients, out io.Writer) error {
	c := cs.kube
	// Labelled for the testbed's LWS webhooks from the start.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.namespace(), Labels: map[string]string{fixture.LWSNamespaceLabel: "true"}}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	// The rollout holds its Lease in udrain's namespace.
	lockNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "udrain-system"}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, lockNS, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", lockNS.Name, err)
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
	if d.ray != nil {
		return d.deployRay(ctx, cs, out)
	}
	pdb := d.leaderPDB()
	if _, err := c.PolicyV1().PodDisruptionBudgets(d.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PDB %s/%s: %w", d.ns, pdb.Name, err)
	}
	for _, w := range d.lws {
		if err := w.Create(ctx, c, cs.dyn); err != nil {
			return err
		}
	}
	w := d.lws[0]
	fmt.Fprintf(out, "  %d LeaderWorkerSets in %s, %s..%s: one group of %d pods each (leader %s + workers %s..%s, 4 GPUs each)\n",
		len(d.lws), d.ns, w.Name, d.lws[len(d.lws)-1].Name, w.Size, w.LeaderName(0), w.WorkerName(0, 1), w.WorkerName(0, w.Size-1))
	fmt.Fprintf(out, "    the LeaderWorkerSet manager labels their pods, injects LWS_* and makes each group's worker StatefulSet\n")
	fmt.Fprintf(out, "    exclusive topology on %s: each group alone in a domain, where the scheduler puts it\n", fixture.UpgradeDomainLabel)
	fmt.Fprintf(out, "    leaders declare the readiness gate %s (Ready only while their whole group is)\n", fixture.GroupReadyCondition)
	fmt.Fprintf(out, "    PodDisruptionBudget %s over the leaders: minAvailable %d (one group at a time may be down)\n",
		pdb.Name, pdb.Spec.MinAvailable.IntValue())
	return nil
}

// waitHealthy polls until every group is healthy and the leaders' budget
// counts them all, printing a line whenever that progresses.
func (d demo) waitHealthy(ctx context.Context, c kubernetes.Interface, out io.Writer, timeout, poll time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		groups, err := d.health(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		pdb, err := c.PolicyV1().PodDisruptionBudgets(d.namespace()).Get(ctx, d.pdbName(), metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		line, done := status(groups, pdb, d.groupCount())
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
		hint := "are the LeaderWorkerSet manager and the readiness-gate controller running?"
		if d.ray != nil {
			hint = "are the KubeRay operator and the readiness-gate controller running?"
		}
		return fmt.Errorf("the workload is not healthy after %s (last: %s); %s (%w)", timeout, last, hint, err)
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

// deployRay installs KubeRay's CRDs, then creates the budget over the heads
// and the RayClusters; the KubeRay operator (started by the demo script
// once the CRDs exist) makes their pods.
func (d demo) deployRay(ctx context.Context, cs clients, out io.Writer) error {
	r := d.ray
	if d.kubeRayDir == "" {
		return errors.New("the ray workload needs --kuberay-dir, the folder hack/kuberay.sh prints")
	}
	if err := fixture.InstallCRDs(ctx, cs.dyn, filepath.Join(d.kubeRayDir, "crds"), fixture.KubeRayCRDFiles...); err != nil {
		return err
	}
	fmt.Fprintf(out, "  KubeRay's CRDs installed: RayCluster, RayJob, RayService (ray.io/v1)\n")
	pdb := r.PodDisruptionBudget()
	if _, err := cs.kube.PolicyV1().PodDisruptionBudgets(r.Namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PDB %s/%s: %w", r.Namespace, pdb.Name, err)
	}
	if err := r.Create(ctx, cs.dyn); err != nil {
		return err
	}
	fmt.Fprintf(out, "  %d RayClusters in %s: %s..%s, each a head and one replica of %d hosts (8 GPUs each, numOfHosts %d)\n",
		r.Clusters, r.Namespace, r.ClusterName(0), r.ClusterName(r.Clusters-1), r.Hosts, r.Hosts)
	fmt.Fprintf(out, "    heads keep out of each other's domain, each cluster's hosts follow its head into its domain\n")
	fmt.Fprintf(out, "    heads declare the readiness gate %s (Ready only while their whole cluster is)\n", fixture.GroupReadyCondition)
	fmt.Fprintf(out, "    PodDisruptionBudget %s over the heads: minAvailable %d (one cluster at a time may be down)\n",
		pdb.Name, pdb.Spec.MinAvailable.IntValue())
	return nil
}
