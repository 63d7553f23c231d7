package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
// and checks that the rollout stops within StuckAfter with a StuckError
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
	var stuck *eviction.StuckError
	var de *eviction.DomainError
	if !errors.As(err, &stuck) || !errors.As(err, &de) || de.Domain != first || de.Stage != eviction.StageRecovery {
		t.Fatalf("rollout: %v; want a StuckError in the recovery of %s", err, first)
	}
	t.Logf("stopped after %s: %v", took.Round(time.Millisecond), err)
	if len(stuck.Pods) == 0 || len(stuck.Pods) > s.lws.Size {
		t.Errorf("%d pods named stuck, want 1 to the group's %d: %v", len(stuck.Pods), s.lws.Size, err)
	}
	for _, p := range stuck.Pods {
		if !strings.Contains(err.Error(), p.Pod) {
			t.Errorf("the error does not name %s: %v", p.Pod, err)
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
		if dom.Status != eviction.DomainPending {
			t.Errorf("domain %s: %s after the stop, want Pending (untouched)", dom.Domain, dom.Status)
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
	for _, p := range stuck.Pods {
		if err := s.tt.Client.CoreV1().Pods(s.tt.Name).Delete(ctx, p.Pod, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
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
