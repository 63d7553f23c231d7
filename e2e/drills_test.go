package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// imagePullFailAnnotation makes kwok keep a scheduled pod Pending with its
// containers in ImagePullBackOff (hack/kwok/stages.yaml, pod-image-pull-fail).
const imagePullFailAnnotation = "udrain.dev/kwok-image-pull-fail"

// volumeMountFailAnnotation makes kwok keep a scheduled pod Pending with its
// containers ContainerCreating and write the FailedMount event a kubelet
// writes when a CSI driver does not mount its volume (hack/kwok/stages.yaml,
// pod-volume-mount-fail).
const volumeMountFailAnnotation = "udrain.dev/kwok-volume-mount-fail"

// TestRegistryDownAfterTheUpgradeStops is issue 24's registry drill: after
// the first domain's upgrade step its group's new pods cannot pull their
// image. The rollout stops before the next domain, within StuckAfter of
// the pods' failing (not after its recovery timeout), naming the pods,
// their group and ImagePullBackOff; the next domains are untouched. Once
// the registry is back, the same rollout resumes and completes, each group
// disrupted once.
func TestRegistryDownAfterTheUpgradeStops(t *testing.T) {
	t.Parallel()
	cannotStartDrill(t, "registry", imagePullFailAnnotation, "ImagePullBackOff")
}

// TestVolumeCannotMountAfterTheUpgradeStops is issue 24's CSI drill: after
// the first domain's upgrade step its group's new pods stay
// ContainerCreating, their volume not mounted (a FailedMount warning event,
// as a kubelet writes when the CSI driver does not answer). The rollout
// reads the events of members starting for StuckAfter and stops as in the
// registry drill, with the event's reason and message; it waited out its
// recovery timeout before.
func TestVolumeCannotMountAfterTheUpgradeStops(t *testing.T) {
	t.Parallel()
	cannotStartDrill(t, "csi", volumeMountFailAnnotation, "FailedMount", `MountVolume.SetUp failed for volume "model"`)
}

// cannotStartDrill breaks, in the first domain's upgrade step, the pods of
// the group there with annotation (a kwok Stage keeps them from starting),
// and checks that the rollout stops within StuckAfter with a Stuck ClusterError
// whose text holds want, then resumes once the cause is gone, each group
// disrupted once.
func cannotStartDrill(t *testing.T, id, annotation string, want ...string) {
	t.Helper()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	first := s.nodes.UD(0)
	broken := false
	var registryDown time.Time // when the upgrade step breaks the pods' start (a registry, a CSI driver)
	group := groupIn(t, s, first)
	opts := eviction.RolloutOptions{ID: id, Domains: s.domains(), RecoveryTimeout: 3 * time.Minute, StuckAfter: 5 * time.Second,
		Upgrade: func(ctx context.Context, dom topology.Domain) error {
			if dom.Name != first || broken {
				return sleepCtx(ctx, upgradeStep)
			}
			registryDown = time.Now()
			// The registry (or CSI driver) goes down: the group's pods made from now on
			// (its StatefulSets' template) and those made already,
			// Pending while their domain upgrades, cannot pull their image.
			patch := []byte(`{"metadata":{"annotations":{"` + annotation + `":"true"}}}`)
			tmpl := []byte(`{"spec":{"template":{"metadata":{"annotations":{"` + annotation + `":"true"}}}}}`)
			for _, sts := range []string{fmt.Sprintf("%s-%d", s.lws.Name, group), fmt.Sprintf("%s-%d-w", s.lws.Name, group)} {
				if _, err := s.tt.Client.AppsV1().StatefulSets(s.tt.Name).Patch(ctx, sts, types.StrategicMergePatchType, tmpl, metav1.PatchOptions{}); err != nil {
					return err
				}
			}
			pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: s.lws.Selector().String()})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if p.Labels[fixture.LWSGroupIndexLabel] != strconv.Itoa(group) || p.DeletionTimestamp != nil {
					continue
				}
				// A pod the StatefulSet controller replaced meanwhile comes
				// back from the patched template.
				if _, err := s.tt.Client.CoreV1().Pods(s.tt.Name).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			broken = true
			return nil
		}}
	start := time.Now()
	res, err := d.Rollout(ctx, opts)
	took := time.Since(start)
	var stuck *eviction.ClusterError
	var de *eviction.DomainError
	if !errors.As(err, &stuck) || stuck.Reason != eviction.ReasonStuck || !errors.As(err, &de) || de.Domain != first || de.Stage != eviction.StageRecovery {
		t.Fatalf("rollout: %v; want a Stuck ClusterError in the recovery of %s", err, first)
	}
	t.Logf("stopped after %s: %v", took.Round(time.Millisecond), err)
	var stuckPods []string
	for _, g := range stuck.Groups {
		for _, m := range g.Problems {
			stuckPods = append(stuckPods, m.Name)
		}
	}
	if len(stuckPods) == 0 || len(stuckPods) > s.lws.Size {
		t.Errorf("%d pods named stuck, want 1 to the group's %d: %v", len(stuckPods), s.lws.Size, err)
	}
	for _, p := range stuckPods {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the error does not name %s: %v", p, err)
		}
	}
	for _, w := range append(want, "cannot start") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say why in words a human acts on (%q): %v", w, err)
		}
	}
	if took > 2*time.Minute {
		t.Errorf("stopped after %s, want well within the 3m recovery timeout", took)
	}
	for _, dom := range res.Domains[1:] {
		if dom.State != eviction.StatePending {
			t.Errorf("domain %s: %s after the stop, want Pending (untouched)", dom.Domain, dom.State)
		}
	}

	// The registry (or CSI driver) is back: the template loses the annotation, the stuck
	// pods are made again by their StatefulSets, and the rollout resumes.
	unpatch := []byte(`{"spec":{"template":{"metadata":{"annotations":{"` + annotation + `":null}}}}}`)
	for _, sts := range []string{fmt.Sprintf("%s-%d", s.lws.Name, group), fmt.Sprintf("%s-%d-w", s.lws.Name, group)} {
		if _, err := s.tt.Client.AppsV1().StatefulSets(s.tt.Name).Patch(ctx, sts, types.StrategicMergePatchType, unpatch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range stuckPods {
		if err := s.tt.Client.CoreV1().Pods(s.tt.Name).Delete(ctx, p, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	opts.Upgrade = func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) }
	resumed := time.Now()
	if _, err := d.Rollout(ctx, opts); err != nil {
		t.Fatalf("resumed rollout: %v", err)
	}
	s.waitHealthy(t, time.Minute)
	// The drill deletes the stuck pods itself, and the StatefulSet
	// controller replaces the pods made from the template before the
	// registry broke (a rolling update: seen in CI, taken for a leader
	// evicted after its workers): leaders first is checked up to the
	// registry's failure (the first domain's evictions are all done by
	// then: the upgrade step follows the drain) and from the resume on,
	// the rest over the whole run.
	o := s.observe(t, start)
	t.Logf("%s drill: %s", id, o)
	for g := range s.groupCount() {
		if o.Disruptions[g] != 1 {
			t.Errorf("group %d disrupted %d times, want exactly once", g, o.Disruptions[g])
		}
	}
	if want := s.groupCount() - 1; o.MinHealthy < want {
		t.Errorf("only %d groups healthy at %s; the PDB promises %d", o.MinHealthy, o.MinHealthyAt.Format("15:04:05.000"), want)
	}
	if registryDown.IsZero() {
		t.Fatal("the upgrade step of the first domain never ran")
	}
	for _, p := range s.observeBetween(t, start, registryDown).leadersFirst() {
		t.Error(p)
	}
	for _, p := range s.observe(t, resumed).leadersFirst() {
		// The resumed run evicts nothing in the first domain: what
		// terminates there is the drill's own deletions.
		if !strings.HasPrefix(p, "domain "+first+":") {
			t.Error(p)
		}
	}
	pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s after the resumed rollout", p.Name, p.Status.Phase)
		}
	}
}

// groupIn returns the index of the group whose leader runs in domain.
func groupIn(t *testing.T, s *scenario, domain string) int {
	t.Helper()
	pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(t.Context(), metav1.ListOptions{LabelSelector: s.lws.LeaderSelector().String()})
	if err != nil {
		t.Fatal(err)
	}
	udOf := s.domainOf()
	for _, p := range pods.Items {
		if udOf[p.Spec.NodeName] == domain {
			g, err := strconv.Atoi(p.Labels[fixture.LWSGroupIndexLabel])
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
	}
	t.Fatalf("no leader in %s", domain)
	return -1
}

// nodeOfflineAnnotation keeps kwok from making a node Ready again
// (hack/kwok/stages.yaml, node-initialize): a node whose kubelet stopped.
const nodeOfflineAnnotation = "udrain.dev/kwok-offline"

// setNodeOffline takes a node offline, as a GPU node whose kubelet stops:
// its Ready condition Unknown (what the node lifecycle controller writes
// when the heartbeats stop), and its pods' containers unready and held so
// (the controller marks the pods NotReady; kwok would otherwise make them
// Ready again). offline false brings it back: kwok makes it Ready, the
// pods start again.
func setNodeOffline(ctx context.Context, t *testing.T, s *scenario, node string, offline bool) {
	t.Helper()
	var ann any // null removes it
	if offline {
		ann = "true"
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{nodeOfflineAnnotation: ann}}})
	if _, err := s.tt.Client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if offline {
		n, err := s.tt.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n.Status.Conditions {
			if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady {
				c.Status, c.Reason, c.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
				c.LastTransitionTime = metav1.Now()
			}
		}
		if _, err := s.tt.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if err := fixture.HoldUnready(ctx, s.tt.Client, s.tt.Name, p.Name, offline); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGPUNodeOfflineBlocksTheBudget is issue 24's GPU node drill: once the
// first domain is done, a GPU node of the last domain (not being drained)
// goes offline, and its group is down. The budget over the leaders then
// allows no disruption: the rollout evicts nothing of the second domain,
// says in the block which pods the budget misses and that their node is
// NotReady, and goes on by itself once the node is back. The groups the
// rollout drains are disrupted once each; the offline group twice (by its
// node, then by its own domain's drain), and never more than one group is
// down because of the rollout.
func TestGPUNodeOfflineBlocksTheBudget(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	doms := s.domains()
	udOf := s.domainOf()
	// The last of the domain's nodes that runs a pod: a worker's, whose
	// group's leader (the pod the budget selects) stays on a Ready node.
	var offline string
	offlineGroup := -1
	var names []string
	for n, d := range udOf {
		if d == doms[2] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	slices.Reverse(names)
	for _, n := range names {
		pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			offline = n
			offlineGroup, _ = strconv.Atoi(pods.Items[0].Labels[fixture.LWSGroupIndexLabel])
			break
		}
	}
	if offline == "" {
		t.Fatalf("no pod runs in %s", doms[2])
	}
	events := &eventLog{}
	var offlineAt time.Time
	d := hookedDrainer(t, s, "udrain-events.txt", events, eviction.Options{}, func(e eviction.Event) {
		if e.Type != eviction.EventDomainDone || e.Domain != doms[0] || !offlineAt.IsZero() {
			return
		}
		// Between the domains: the node goes offline, and the disruption
		// controller sees its group down before the next domain's plan.
		setNodeOffline(ctx, t, s, offline, true)
		offlineAt = time.Now()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			pdb, err := s.tt.Client.PolicyV1().PodDisruptionBudgets(s.tt.Name).Get(ctx, s.pdbName(), metav1.GetOptions{})
			return err == nil && pdb.Status.DisruptionsAllowed == 0, nil
		})
		if err != nil {
			t.Errorf("the budget still allows a disruption a minute after node %s went offline", offline)
		}
	})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "gpu-offline", Domains: doms, RecoveryTimeout: 3 * time.Minute,
			Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) }})
		done <- err
	}()
	// The second domain's leader is refused, and the block says why.
	var blocked eviction.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		for _, e := range events.ofType(eviction.EventBlocked) {
			if e.Domain == doms[1] && e.Block != nil {
				blocked = e
				return true, nil
			}
		}
		select {
		case err := <-done:
			return false, fmt.Errorf("the rollout ended before a block in %s: %v", doms[1], err)
		default:
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(blocked.Block.String(), "on node "+offline+" (NotReady)") {
		t.Errorf("the block does not name node %s as NotReady: %s", offline, blocked.Block)
	}
	t.Logf("blocked %s after the node went offline: %s", blocked.Time.Sub(offlineAt).Round(time.Millisecond), blocked.Block)
	// Offline for a while: the rollout must not evict more meanwhile.
	time.Sleep(5 * time.Second)
	backAt := time.Now()
	setNodeOffline(ctx, t, s, offline, false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rollout: %v", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the rollout did not finish within 5 minutes of the node's return")
	}
	t.Logf("rollout %s; node offline %s", time.Since(start).Round(time.Millisecond), backAt.Sub(offlineAt).Round(time.Millisecond))
	o := s.observe(t, start)
	t.Logf("gpu node drill: %s", o)
	var resumed time.Time // the first eviction after the node's return
	for _, ev := range o.Evicted {
		if ev.At.After(offlineAt) && ev.At.Before(backAt) {
			t.Errorf("evicted %s (%s) at %s while node %s was offline", ev.Name, ev.Domain, ev.At.Format("15:04:05.000"), offline)
		}
		if ev.At.After(backAt) && (resumed.IsZero() || ev.At.Before(resumed)) {
			resumed = ev.At
		}
	}
	if resumed.IsZero() {
		t.Errorf("no eviction after node %s came back", offline)
	} else {
		t.Logf("first eviction %s after the node came back", resumed.Sub(backAt).Round(time.Millisecond))
	}
	for g := range s.groupCount() {
		want := 1
		if g == offlineGroup {
			want = 2 // its node, then its domain's drain
		}
		if o.Disruptions[g] != want {
			t.Errorf("group %d disrupted %d times, want %d", g, o.Disruptions[g], want)
		}
	}
	if want := s.groupCount() - 1; o.MinHealthy < want {
		t.Errorf("only %d groups healthy at %s; the PDB promises %d", o.MinHealthy, o.MinHealthyAt.Format("15:04:05.000"), want)
	}
}
