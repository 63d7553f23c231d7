package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/examples/controller-runtime/upgrade"
	"github.com/udrain/udrain/topology"
)

// TestControllerRuntimeUpgradeRequest runs the reconciler of
// examples/controller-runtime on a controller-runtime manager against the
// testbed: an upgrade request (a ConfigMap) over the test's three domains
// becomes a rollout that reads the cluster through the manager's cache.
// The manager is stopped while the second domain's groups recover (its
// status says so) and a new one started: the request is reconciled again
// and the rollout resumes. Across both managers the CLI scenario's
// guarantees hold (each group disrupted once, never two down, leaders
// first, every node labelled, marked upgraded and uncordoned); the status
// ends Succeeded with healthy groups, and every evicted pod has an
// events.k8s.io Event that names its UID and the request.
func TestControllerRuntimeUpgradeRequest(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	domains := s.domains()
	const version, id = "1.37.2", "e2e-controller-runtime"

	var mu sync.Mutex
	var upgraded []string
	opts := upgrade.Options{
		Drainer:         eviction.Options{Helper: eviction.KubectlDefaults()},
		RecoveryTimeout: 3 * time.Minute,
		RetryAfter:      5 * time.Second,
		Upgrade: func(ctx context.Context, dom topology.Domain, req upgrade.Request) error {
			mu.Lock()
			upgraded = append(upgraded, dom.Name)
			mu.Unlock()
			return sleepCtx(ctx, upgradeStep)
		},
	}
	request := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.tt.Name, Name: "kubelet-1-37", Labels: map[string]string{upgrade.RequestLabel: ""}},
		Data:       map[string]string{upgrade.KeyID: id, upgrade.KeyDomains: strings.Join(domains, ", "), upgrade.KeyTargetVersion: version},
	}
	request, err := s.tt.Client.CoreV1().ConfigMaps(s.tt.Name).Create(ctx, request, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: request.Namespace, Name: request.Name}

	start := time.Now()
	stop := startUpgradeManager(t, opts)
	st := waitRequest(t, key, 3*time.Minute, func(st upgrade.Status) bool {
		c := st.Condition(upgrade.ConditionProgressing)
		return c != nil && c.Reason == "WaitingRecovery" && slices.Contains(st.Domains, upgrade.DomainState{Domain: domains[1], Status: upgrade.DomainRunning})
	})
	t.Logf("stopping the manager: %s", st.Condition(upgrade.ConditionProgressing).Message)
	stop()
	st = requestStatus(t, key)
	if st.Phase != upgrade.PhaseInterrupted || !slices.Contains(st.Domains, upgrade.DomainState{Domain: domains[1], Status: eviction.StateInterrupted}) {
		t.Errorf("after the manager stopped: %+v, want Interrupted in %s", st, domains[1])
	}

	stop = startUpgradeManager(t, opts)
	defer stop()
	st = waitRequest(t, key, 5*time.Minute, func(st upgrade.Status) bool { return st.Phase == upgrade.PhaseSucceeded })
	t.Logf("request succeeded %s after it was made: %s", time.Since(start).Round(time.Millisecond), st.Condition(upgrade.ConditionSucceeded).Message)
	for _, c := range []struct{ typ, reason string }{{upgrade.ConditionSucceeded, "RolloutDone"}, {upgrade.ConditionGroupsHealthy, "GroupReady"}} {
		if got := st.Condition(c.typ); got == nil || got.Status != metav1.ConditionTrue || got.Reason != c.reason {
			t.Errorf("condition %s = %+v, want True (%s)", c.typ, got, c.reason)
		}
	}
	// The second manager skipped the domains the first had upgraded.
	wantDomains := []upgrade.DomainState{{Domain: domains[0], Status: eviction.StateSkipped}, {Domain: domains[1], Status: eviction.StateSkipped},
		{Domain: domains[2], Status: eviction.StateDone}}
	if !slices.Equal(st.Domains, wantDomains) {
		t.Errorf("domains %+v, want %+v", st.Domains, wantDomains)
	}
	mu.Lock()
	if !slices.Equal(upgraded, domains) {
		t.Errorf("upgrade step ran for %q, want once for each of %q", upgraded, domains)
	}
	mu.Unlock()

	o := checkWholeRollout(t, s, start, "both managers")
	checkUpgradedAndUncordoned(t, s, id)
	checkTargetVersion(t, s, upgrade.TargetVersionLabel, version)

	// An Evicted event per evicted pod (by UID), related to the request.
	events, err := s.tt.Client.EventsV1().Events(s.tt.Name).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evicted"})
	if err != nil {
		t.Fatal(err)
	}
	var named []types.UID
	for _, e := range events.Items {
		if e.ReportingController != upgrade.ControllerName {
			continue
		}
		named = append(named, e.Regarding.UID)
		if e.Related == nil || e.Related.UID != request.UID {
			t.Errorf("event %s about pod %s is not related to the request: %+v", e.Name, e.Regarding.Name, e.Related)
		}
	}
	checkEvictionEvents(t, o, "Evicted", named)
}

// startUpgradeManager starts a controller-runtime manager with the upgrade
// requests' reconciler on the testbed; the returned function stops it and
// waits until it has.
func startUpgradeManager(t *testing.T, opts upgrade.Options) func() {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0)))
	mgr, err := ctrl.NewManager(bed.Config(), ctrl.Options{
		Cache:                  upgrade.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logger,
		// The test starts a second manager with the same controller.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(t.Context()), logger))
	if _, err := upgrade.SetupWithManager(ctx, mgr, opts); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
}

// requestStatus reads the status the reconciler wrote on the request.
func requestStatus(t *testing.T, key types.NamespacedName) upgrade.Status {
	t.Helper()
	cm, err := bed.Client().CoreV1().ConfigMaps(key.Namespace).Get(t.Context(), key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := upgrade.StatusOf(cm)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitRequest polls the request's status until ok.
func waitRequest(t *testing.T, key types.NamespacedName, timeout time.Duration, ok func(upgrade.Status) bool) upgrade.Status {
	t.Helper()
	var last upgrade.Status
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = requestStatus(t, key)
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("request %s: %v; last status %s", key, err, statusString(last))
	}
	return last
}

func statusString(st upgrade.Status) string {
	var conds []string
	for _, c := range st.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("phase %s, domains %+v, conditions %s", st.Phase, st.Domains, strings.Join(conds, "; "))
}
