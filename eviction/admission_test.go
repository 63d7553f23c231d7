package eviction

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// webhookRefusal is what the API server answers when admission webhook
// "evictions.example.com" refuses: a denial (400, its message) or a call
// that failed under failurePolicy Fail (500).
func webhookRefusal(denied bool) error {
	if denied {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `admission webhook "evictions.example.com" denied the request: llm-0 holds the KV cache of an unfinished batch`}}
	}
	return apierrors.NewInternalError(errors.New(`failed calling webhook "evictions.example.com": failed to call webhook: Post "https://127.0.0.1:9443/validate?timeout=2s": context deadline exceeded`))
}

func TestAdmissionWebhookRefusals(t *testing.T) {
	fast := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}
	for _, tc := range []struct {
		name         string
		denied       bool
		seesDryRuns  bool
		wantStage    Stage
		wantAttempts int
		wantCordoned bool
	}{
		{"denial of the eviction (a webhook that does not see dry runs)", true, false, StagePhase1, admissionAttempts, true},
		{"denial seen by the dry-run check", true, true, StageCordon, 1, false},
		{"a webhook that times out under failurePolicy Fail", false, false, StagePhase1, admissionAttempts, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			fc := newFakeCluster(t, lwsCluster(2, 1, 3)...)
			refusals := 0
			fc.onEvict = func(ns, name string, dryRun bool) error {
				if name != "llm-0" || dryRun && !tc.seesDryRuns {
					return nil
				}
				if !dryRun {
					refusals++
				}
				return webhookRefusal(tc.denied)
			}
			log := newEventLog()
			d, _ := New(fc.client, Options{Backoff: fast, OnEvent: log.add})
			_, _, err := d.Drain(ctx, "ud-1", DrainOptions{})
			var de *DomainError
			var ae *PermissionError
			if !errors.As(err, &de) || !errors.As(err, &ae) {
				t.Fatalf("err = %v, want a *DomainError unwrapping to a *PermissionError", err)
			}
			wantDryRun := tc.wantStage == StageCordon
			if de.Stage != tc.wantStage || ae.Pod.Name != "llm-0" || ae.Webhook != "evictions.example.com" || (ae.Reason == ReasonDenied) != tc.denied || (ae.Reason != ReasonDenied && ae.Reason != ReasonWebhookFailed) ||
				ae.Attempts != tc.wantAttempts || ae.DryRun != wantDryRun {
				t.Errorf("stage %s, admission error %+v; want stage %s, pod llm-0, webhook evictions.example.com, denied %v, dry run %v, %d attempt(s)",
					de.Stage, ae, tc.wantStage, tc.denied, wantDryRun, tc.wantAttempts)
			}
			if wantDryRun != strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("the error says whether anything changed wrongly (dry run %v): %v", wantDryRun, err)
			}
			if tc.denied && !strings.Contains(err.Error(), "KV cache of an unfinished batch") {
				t.Errorf("the error does not give the webhook's message: %v", err)
			}
			if refusals != tc.wantAttempts && tc.wantStage == StagePhase1 {
				t.Errorf("%d eviction requests refused, want %d (bounded)", refusals, tc.wantAttempts)
			}
			if got := fc.evicted(); len(got) != 0 {
				t.Errorf("evicted %v after the refusal, want nothing", got)
			}
			for _, a := range fc.attempts {
				if a != "inference/llm-0" {
					t.Errorf("eviction of %s attempted: phase 2 started after a phase-1 refusal", a)
				}
			}
			n, _ := fc.client.CoreV1().Nodes().Get(context.Background(), "node-1-1", metav1.GetOptions{})
			if n.Spec.Unschedulable != tc.wantCordoned {
				t.Errorf("node cordoned: %v, want %v", n.Spec.Unschedulable, tc.wantCordoned)
			}
			if tc.wantCordoned && !strings.Contains(err.Error(), "stay cordoned") {
				t.Errorf("the error does not say the domain stays cordoned: %v", err)
			}
			// The field a caller acts on says what the node shows.
			if de := (*DomainError)(nil); !errors.As(err, &de) || de.Cordoned() != tc.wantCordoned {
				t.Errorf("DomainError.Cordoned() of %v: want %v", err, tc.wantCordoned)
			}
			if tc.wantStage == StagePhase1 {
				if n := len(log.ofType(EventRetrying)); n != tc.wantAttempts-1 {
					t.Errorf("%d Retrying events, want %d", n, tc.wantAttempts-1)
				}
			}
		})
	}
}
