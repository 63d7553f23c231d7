package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// startupTaint is what the first domain's upgrade step puts on its nodes,
// as a node agent that is still starting would: workloads that tolerate it
// (here a batch Deployment) land first when the domain is uncordoned.
const startupTaint = "udrain.dev/warming-up"

// TestRecoveryStopsOnFragmentedGPUs is the drill "a recovery that cannot
// complete says why", the production story behind it: a domain of two
// 8-GPU nodes holds a group of three 4-GPU pods and two 2-GPU pods of a
// batch Deployment, packed 4+4 | 4+2+2. udrain plan warns of the
// fragmentation risk (coming back spread, a 4-GPU pod finds no node).
// The rollout drains the domain; its upgrade step leaves a start-up taint
// that only the batch pods tolerate, and the batch system takes its pods
// back and submits them again once the nodes are schedulable, so that they
// come back first and the scheduler spreads them, one per node; the taint
// lifted, the group's third pod finds 2 GPUs free on each node and stays
// Pending. The
// rollout must stop at its recovery timeout with a *eviction.DomainError
// (StageRecovery) whose health names that pod, Pending, with the
// scheduler's message (Insufficient nvidia.com/gpu); the next domains
// untouched. Once placement is fixed (the batch Deployment scaled down),
// the same rollout resumes and completes.
func TestRecoveryStopsOnFragmentedGPUs(t *testing.T) {
	t.Parallel()
	cfg := defaultScenario()
	cfg.Size = 3 // 12 of the domain's 16 GPUs; the batch pods take the rest
	s := deploy(t, cfg)
	ctx := t.Context()
	c := s.tt.Client
	first := s.nodes.UD(0)
	group := fmt.Sprintf("%s-%d", s.lws.Name, s.groupIn(t, first).Index)
	batch := createBatch(t, s, first)

	// The plan warns, through the CLI as through the library.
	code, stdout, _ := runCLI(ctx, []string{"plan", first, "--ignore-daemonsets"}, c, nil)
	if code != 0 || !strings.Contains(stdout, "fragmentation risk") {
		t.Errorf("udrain plan %s: exit code %d, want 0 and a fragmentation warning:\n%s", first, code, stdout)
	}
	warning := stdout[strings.Index(stdout, "Warning: the evicted pods"):]
	t.Logf("udrain plan %s warns: %s", first, strings.SplitN(warning, "\n", 2)[0])

	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	start := time.Now()
	const recoveryTimeout = 20 * time.Second
	opts := eviction.RolloutOptions{ID: "e2e-fragment", Domains: s.domains(), RecoveryTimeout: recoveryTimeout,
		Upgrade: func(ctx context.Context, dom topology.Domain) error {
			if dom.Name != first {
				return sleepCtx(ctx, upgradeStep)
			}
			for _, n := range dom.Nodes {
				taint := corev1.Taint{Key: startupTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}
				if err := patchTaints(ctx, s, n, func(ts []corev1.Taint) []corev1.Taint { return append(ts, taint) }); err != nil {
					return err
				}
			}
			// The batch system takes its jobs back during the maintenance
			// and submits them again once the nodes are schedulable.
			if err := scaleBatch(ctx, s, batch, 0); err != nil {
				return err
			}
			go liftStartupTaint(t, s, dom, batch)
			return nil
		}}
	res, err := d.Rollout(ctx, opts)
	took := time.Since(start)
	var de *eviction.DomainError
	if !errors.As(err, &de) || de.Stage != eviction.StageRecovery || de.Domain != first || !errors.Is(err, context.DeadlineExceeded) || de.Timeout != recoveryTimeout {
		t.Fatalf("rollout: err = %v; want a *eviction.DomainError of %s at %s that unwraps to context.DeadlineExceeded after %s", err, first, eviction.StageRecovery, recoveryTimeout)
	}
	t.Logf("rollout stopped after %s: %v", took.Round(time.Millisecond), err)

	// The plan the rollout made warned too.
	plan := res.Domains[0].Plan
	if plan == nil || len(plan.GPUFit) != 1 || len(plan.GPUFit[0].SpreadUnplaced) != 1 || plan.GPUFit[0].SpreadUnplaced[0].GPUs != 4 {
		t.Errorf("the rollout's plan of %s: GPUFit %+v, want one 4-GPU pod that finds no node when spread", first, planFit(plan))
	}
	if !slices.ContainsFunc(events.ofType(eviction.EventPlanned), func(e eviction.Event) bool {
		return e.Domain == first && strings.Contains(e.Message, "fragmentation risk")
	}) {
		t.Errorf("no Planned event of %s with the fragmentation warning", first)
	}

	// The error names the Pending pod and the scheduler's reason.
	var pending *health.MemberStatus
	if de.Health != nil {
		for _, g := range de.Health.Groups {
			for _, m := range g.Problems {
				if g.ID.Name == group && m.Reason == health.ReasonMemberUnscheduled {
					pending = &m
				}
			}
		}
	}
	if pending == nil || !strings.Contains(pending.Detail, "Insufficient nvidia.com/gpu") {
		t.Fatalf("recovery's health %+v: want group %s with an unscheduled member whose detail is the scheduler's Insufficient nvidia.com/gpu", de.Health, group)
	}
	checkNames(t, "the error", err, []string{pending.Name, "Pending", "Insufficient nvidia.com/gpu", recoveryTimeout.String()})
	// The GPUs fragmented: 2 free on each node of the domain.
	if free := freeGPUs(t, s, first); !slices.Equal(free, []int64{2, 2}) {
		t.Errorf("free GPUs per node of %s: %v, want [2 2] (fragmented)", first, free)
	}
	if got := []eviction.DomainState{res.Domains[0].State, res.Domains[1].State, res.Domains[2].State}; !slices.Equal(got,
		[]eviction.DomainState{eviction.StateFailed, eviction.StatePending, eviction.StatePending}) {
		t.Errorf("domains %v, want the first Failed and the others Pending", got)
	}
	for _, e := range events.all() {
		if e.Domain != "" && e.Domain != first {
			t.Errorf("the rollout touched domain %s: %s", e.Domain, e.Type)
		}
	}

	// Fixing placement: the batch Deployment scaled down frees a node's
	// share; the same rollout resumes and completes.
	if err := scaleBatch(ctx, s, batch, 0); err != nil {
		t.Fatal(err)
	}
	res, err = d.Rollout(ctx, opts)
	if err != nil {
		t.Fatalf("the rollout run again once the batch Deployment is scaled down: %v", err)
	}
	var statuses []eviction.DomainState
	for _, dom := range res.Domains {
		statuses = append(statuses, dom.State)
	}
	if !slices.Equal(statuses, []eviction.DomainState{eviction.StateSkipped, eviction.StateDone, eviction.StateDone}) {
		t.Errorf("resumed rollout: domains %v, want %s skipped, the others done", statuses, first)
	}
	t.Logf("after the fix, the rollout resumed and completed in %s", res.Duration.Duration().Round(time.Millisecond))
	checkWholeRollout(t, s, start, "both runs")
}

// createBatch runs a Deployment of two 2-GPU pods on the domain's nodes,
// tolerating the start-up taint and spread softly over nodes, and waits
// until both run.
func createBatch(t *testing.T, s *scenario, domain string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": "batch"}
	replicas := int32(2)
	gpus := *resource.NewQuantity(2, resource.DecimalSI)
	grace := int64(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: s.tt.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: metav1.SetAsLabelSelector(labels),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					fixture.ReadyDelayAnnotation: "500ms", fixture.TerminateDelayAnnotation: "500ms"}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{fixture.UpgradeDomainLabel: domain},
					Tolerations:  []corev1.Toleration{{Key: startupTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: metav1.SetAsLabelSelector(labels)}},
					Containers: []corev1.Container{{Name: "job", Image: fixture.DefaultImage, Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{fixture.GPUResource: gpus, corev1.ResourceCPU: resource.MustParse("1")},
						Limits:   corev1.ResourceList{fixture.GPUResource: gpus}}}},
					TerminationGracePeriodSeconds: &grace,
					AutomountServiceAccountToken:  new(false),
				},
			},
		},
	}
	created, err := s.tt.Client.AppsV1().Deployments(s.tt.Name).Create(t.Context(), dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fixture.WaitForPods(t.Context(), s.tt.Client, s.tt.Name, k8slabels.SelectorFromSet(labels), fixture.PodsRunning(2))
	if err != nil {
		t.Fatal(err)
	}
	if pods[0].Spec.NodeName != pods[1].Spec.NodeName {
		t.Fatalf("the batch pods run on %s and %s; the domain's only free GPUs were on one node", pods[0].Spec.NodeName, pods[1].Spec.NodeName)
	}
	return created
}

// scaleBatch sets the batch Deployment's replicas.
func scaleBatch(ctx context.Context, s *scenario, batch *appsv1.Deployment, replicas int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := s.tt.Client.AppsV1().Deployments(s.tt.Name).GetScale(ctx, batch.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = replicas
		_, err = s.tt.Client.AppsV1().Deployments(s.tt.Name).UpdateScale(ctx, batch.Name, scale, metav1.UpdateOptions{})
		return err
	})
}

// liftStartupTaint waits until every node of the domain is schedulable
// again (uncordoned, the node controller's unschedulable taint gone), has
// the batch Deployment submit its two pods again, waits until the
// scheduler has placed them (one per node: the emptier node scores higher)
// and removes the start-up taint, as the node agent would once started:
// then the group's pods come back.
func liftStartupTaint(t *testing.T, s *scenario, dom topology.Domain, batch *appsv1.Deployment) {
	ctx := t.Context()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range dom.Nodes {
			n, err := s.tt.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnschedulable }) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("the nodes of %s were not uncordoned: %v", dom.Name, err)
		return
	}
	if err := scaleBatch(ctx, s, batch, 2); err != nil {
		t.Errorf("scaling the batch Deployment up: %v", err)
		return
	}
	sel := k8slabels.SelectorFromSet(batch.Spec.Selector.MatchLabels)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, nil
		}
		placed := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && slices.Contains(dom.Nodes, p.Spec.NodeName) {
				placed++
			}
		}
		return placed == 2, nil
	})
	if err != nil {
		t.Errorf("the batch pods did not come back to %s: %v", dom.Name, err)
	}
	for _, n := range dom.Nodes {
		if err := patchTaints(ctx, s, n, func(ts []corev1.Taint) []corev1.Taint {
			return slices.DeleteFunc(ts, func(t corev1.Taint) bool { return t.Key == startupTaint })
		}); err != nil && ctx.Err() == nil {
			t.Errorf("lifting the start-up taint of %s: %v", n, err)
		}
	}
}

// patchTaints rewrites node's taints with edit, retrying on conflicts.
func patchTaints(ctx context.Context, s *scenario, node string, edit func([]corev1.Taint) []corev1.Taint) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := s.tt.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Spec.Taints = edit(n.Spec.Taints)
		_, err = s.tt.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// freeGPUs returns the GPUs the pods bound to each node of the domain
// leave free, in node order.
func freeGPUs(t *testing.T, s *scenario, domain string) []int64 {
	t.Helper()
	var out []int64
	for i := range s.nodes.PerUD {
		name := s.nodes.Name(slices.Index(s.domains(), domain), i)
		pods, err := s.tt.Client.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if err != nil {
			t.Fatal(err)
		}
		free := int64(fixture.H100().Count)
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range p.Spec.Containers {
				free -= c.Resources.Requests.Name(fixture.GPUResource, resource.DecimalSI).Value()
			}
		}
		out = append(out, free)
	}
	return out
}

func planFit(p *eviction.Plan) string {
	if p == nil {
		return "(no plan)"
	}
	return fmt.Sprint(p.GPUFit)
}
