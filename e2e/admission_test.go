package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// TestRolloutStopsOnAdmissionWebhook is the drill "eviction denied by an
// admission webhook": a real ValidatingWebhookConfiguration on
// pods/eviction, served by the test over TLS (its own CA in caBundle,
// clientConfig.url on 127.0.0.1, where the testbed's kube-apiserver
// runs), refuses the eviction of the first domain's leader. Three
// webhooks, each in turn:
//
//   - one that sees dry runs (sideEffects None) and denies: udrain's
//     dry-run check of the domain meets the denial and the rollout stops
//     before the cordon (stage Cordon), having changed nothing;
//   - one that does not see dry runs (a matchCondition !request.dryRun)
//     and denies: the domain is cordoned, the leader's eviction is denied
//     3 times, and the rollout stops in phase 1 with an
//     *eviction.PermissionError (ReasonDenied, ReasonWebhookFailed) naming the pod, the webhook, its message
//     and the attempts; nothing else is evicted, the domain stays
//     cordoned;
//   - one that times out under failurePolicy Fail: the same stop, the
//     error saying the webhook could not be called.
//
// Then the webhook is removed and the last rollout, run again with its
// ID, resumes and completes: each group disrupted exactly once.
func TestRolloutStopsOnAdmissionWebhook(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	c := s.tt.Client
	first := s.nodes.UD(0)
	leader := s.groupIn(t, first).Leader
	hook := startEvictionWebhook(t, s.tt, leader)
	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	start := time.Now()
	const message = "holds the KV cache of an unfinished batch; drain it first"

	for _, tc := range []struct {
		name     string
		webhook  evictionWebhook
		stage    eviction.Stage
		denied   bool
		attempts int
		cordoned bool
		// What the webhook must have seen of the leader: evictions and
		// dry-run evictions (udrain's permission check).
		evictions, dryRuns int
	}{
		{"a denial seen by the dry run", evictionWebhook{name: "deny-dry-run.udrain.dev", deny: message, dryRuns: true},
			eviction.StageCordon, true, 1, false, 0, 1},
		{"a denial the dry run does not see", evictionWebhook{name: "deny.udrain.dev", deny: message},
			eviction.StagePhase1, true, 3, true, 3, 0},
		// Its dry run times out too; udrain's check lets the real
		// eviction decide what a dry run could not.
		{"a webhook that times out (failurePolicy Fail)", evictionWebhook{name: "slow.udrain.dev", hang: true, dryRuns: true},
			eviction.StagePhase1, false, 3, true, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook.install(t, tc.webhook)
			id := "e2e-admission-" + strings.Split(tc.webhook.name, ".")[0]
			before := len(events.all())
			t0 := time.Now()
			_, err := d.Rollout(ctx, eviction.RolloutOptions{ID: id, Domains: s.domains(), RecoveryTimeout: 3 * time.Minute})
			took := time.Since(t0)
			var de *eviction.DomainError
			var ae *eviction.PermissionError
			if !errors.As(err, &de) || !errors.As(err, &ae) {
				t.Fatalf("rollout: err = %v (%T), want a *eviction.DomainError unwrapping to an *eviction.PermissionError", err, err)
			}
			t.Logf("rollout stopped after %s: %v", took.Round(time.Millisecond), err)
			if de.Domain != first || de.Stage != tc.stage {
				t.Errorf("stopped in domain %s at %s, want %s at %s", de.Domain, de.Stage, first, tc.stage)
			}
			dryRun := tc.stage == eviction.StageCordon
			if ae.Pod.Name != leader || ae.Webhook != tc.webhook.name || (ae.Reason == eviction.ReasonDenied) != tc.denied || (ae.Reason != eviction.ReasonDenied && ae.Reason != eviction.ReasonWebhookFailed) || ae.Attempts != tc.attempts || ae.DryRun != dryRun {
				t.Errorf("PermissionError{pod %s, webhook %q, reason %s, attempts %d, dry run %t}, want {%s, %q, denied %t, %d, %t}",
					ae.Pod, ae.Webhook, ae.Reason, ae.Attempts, ae.DryRun, leader, tc.webhook.name, tc.denied, tc.attempts, dryRun)
			}
			want := []string{leader, tc.webhook.name}
			if dryRun {
				want = append(want, "nothing was changed")
			} else {
				want = append(want, fmt.Sprintf("on %d attempt(s)", tc.attempts), "stay cordoned")
			}
			if tc.denied {
				want = append(want, message)
			} else {
				want = append(want, "failed calling webhook")
			}
			checkNames(t, "the error", err, want)
			// The webhook saw what udrain sent, and no more.
			if real, dry := hook.calls(leader); real != tc.evictions || dry != tc.dryRuns {
				t.Errorf("the webhook saw %d eviction(s) and %d dry run(s) of %s, want %d and %d", real, dry, leader, tc.evictions, tc.dryRuns)
			}
			for _, e := range events.all()[before:] {
				if e.Type == eviction.EventEvicted || (e.Type == eviction.EventEvicting && e.Stage == eviction.StagePhase2) {
					t.Errorf("udrain went on after the refusal: %s %v", e.Type, e.Pod)
				}
				if e.Domain != "" && e.Domain != first {
					t.Errorf("udrain touched another domain: %s %s", e.Type, e.Domain)
				}
			}
			nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes.Items {
				want := tc.cordoned && n.Labels[fixture.UpgradeDomainLabel] == first
				if n.Spec.Unschedulable != want {
					t.Errorf("node %s cordoned %t, want %t", n.Name, n.Spec.Unschedulable, want)
				}
			}
			if o := s.observe(t, start); len(o.Evicted) != 0 {
				t.Errorf("pods evicted: %+v", o.Evicted)
			}
			// Release the domain for the next webhook, as an operator
			// giving up on this rollout would.
			if tc.cordoned {
				if _, err := d.Uncordon(ctx, first); err != nil {
					t.Fatal(err)
				}
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}

	// The webhook gone, the last rollout resumes and completes.
	hook.remove(t)
	id := "e2e-admission-slow"
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: id, Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleepCtx(ctx, upgradeStep) }})
	if err != nil {
		t.Fatalf("rollout %s after the webhook was removed: %v", id, err)
	}
	t.Logf("without the webhook, rollout %s completed in %s", id, res.Duration.Duration().Round(time.Millisecond))
	checkWholeRollout(t, s, start, "all rollouts")
	checkUpgradedAndUncordoned(t, s, id)
}

// evictionWebhook is one ValidatingWebhookConfiguration of the test's
// webhook server: it refuses the eviction of the server's target pod,
// denying it with the message deny, or hanging past the API server's
// timeout (failurePolicy Fail); dryRuns says whether it is called for dry
// runs (sideEffects None without a condition) or not (a matchCondition
// !request.dryRun).
type evictionWebhook struct {
	name    string
	deny    string
	hang    bool
	dryRuns bool
}

// webhookServer serves the test's admission webhooks over TLS on
// 127.0.0.1 and records the evictions it was asked about.
type webhookServer struct {
	tt     *testbed.Test
	target string
	url    string
	ca     []byte
	// sentinel names no pod: every webhook denies its eviction, which the
	// API server admits before it looks the pod up (404), so that a
	// probe sees whether the webhook is called.
	sentinel string

	mu     sync.Mutex
	active evictionWebhook
	seen   map[string][2]int // by pod: evictions, dry runs
	config string
}

// startEvictionWebhook starts the server, for evictions of pod target in
// the test's namespace, until the test ends.
func startEvictionWebhook(t *testing.T, tt *testbed.Test, target string) *webhookServer {
	t.Helper()
	sc, err := testbed.NewServingCert(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := sc.TLS()
	if err != nil {
		t.Fatal(err)
	}
	w := &webhookServer{tt: tt, target: target, ca: sc.CA, sentinel: "webhook-sentinel", seen: map[string][2]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "https://" + l.Addr().String() + "/validate"
	srv := &http.Server{Handler: http.HandlerFunc(w.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() {
		w.remove(t)
		_ = srv.Close()
	})
	return w
}

func (w *webhookServer) serve(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("bad AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	req := review.Request
	w.mu.Lock()
	hook := w.active
	if req.Name == w.target {
		n := w.seen[req.Name]
		if req.DryRun != nil && *req.DryRun {
			n[1]++
		} else {
			n[0]++
		}
		w.seen[req.Name] = n
	}
	w.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	switch {
	case req.Name == w.sentinel:
		resp.Allowed, resp.Result = false, &metav1.Status{Message: "sentinel"}
	case req.Name != w.target:
	case hook.hang:
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	default:
		resp.Allowed, resp.Result = false, &metav1.Status{Message: hook.deny}
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// calls returns how many evictions and dry-run evictions of pod the
// webhooks saw since the last install.
func (w *webhookServer) calls(pod string) (real, dry int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.seen[pod]
	return n[0], n[1]
}

// install replaces the webhook configuration with hook's and waits until
// the API server calls it.
func (w *webhookServer) install(t *testing.T, hook evictionWebhook) {
	t.Helper()
	w.remove(t)
	ctx := t.Context()
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	timeout := int32(1)
	wh := admissionregistrationv1.ValidatingWebhook{
		Name:                    hook.name,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &w.url, CABundle: w.ca},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}}}},
		NamespaceSelector:       metav1.SetAsLabelSelector(map[string]string{corev1.LabelMetadataName: w.tt.Name}),
		SideEffects:             &none,
		FailurePolicy:           &fail,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
	}
	if !hook.dryRuns {
		wh.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-dry-run", Expression: "!request.dryRun"}}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.tt.Name + "-evictions"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{wh},
	}
	if _, err := w.tt.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.active, w.config, w.seen = hook, cfg.Name, map[string][2]int{}
	w.mu.Unlock()
	// The API server picks the configuration up from a watch: probe it.
	denied := fmt.Sprintf("admission webhook %q denied the request: sentinel", hook.name)
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = w.tt.Client.CoreV1().Pods(w.tt.Name).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: w.sentinel, Namespace: w.tt.Name}})
		return last != nil && strings.Contains(last.Error(), denied), nil
	})
	if err != nil {
		t.Fatalf("the API server does not call webhook %s: the sentinel's eviction says %v", hook.name, last)
	}
}

// remove deletes the webhook configuration, if any, and waits until the
// API server no longer calls it.
func (w *webhookServer) remove(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	name := w.config
	w.config = ""
	w.mu.Unlock()
	if name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
	defer cancel()
	if err := w.tt.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete ValidatingWebhookConfiguration %s: %v", name, err)
		return
	}
	// The sentinel's eviction no longer meets a webhook.
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := w.tt.Client.CoreV1().Pods(w.tt.Name).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: w.sentinel, Namespace: w.tt.Name}})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the API server still calls the webhook of %s", name)
	}
}
