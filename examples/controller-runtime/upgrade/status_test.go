package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]string
		want    Request
		wantErr []string
	}{
		{"defaults", map[string]string{KeyTargetVersion: "1.37.2"}, Request{ID: "kubelet-1.37.2", TargetVersion: "1.37.2"}, nil},
		{"every key", map[string]string{KeyID: "k-1.37.2", KeyDomains: "ud-2, ud-1\nud-3", KeyTargetVersion: "1.37.2"},
			Request{ID: "k-1.37.2", Domains: []string{"ud-2", "ud-1", "ud-3"}, TargetVersion: "1.37.2"}, nil},
		{"no version", map[string]string{KeyDomains: "ud-1"}, Request{ID: "kubelet", Domains: []string{"ud-1"}},
			[]string{"data.targetVersion is missing"}},
		{"bad id and version", map[string]string{KeyID: "to 1.37", KeyTargetVersion: "1.37 beta"},
			Request{ID: "to 1.37", TargetVersion: "1.37 beta"}, []string{`data.id "to 1.37"`, `data.targetVersion "1.37 beta" cannot be a label value`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequest(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubelet"}, Data: tc.data})
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if (err != nil) != (len(tc.wantErr) > 0) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestHealthCondition(t *testing.T) {
	group := func(name string, reason health.Reason, msg string) health.GroupStatus {
		return health.GroupStatus{ID: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "serving", Name: name},
			Healthy: reason == health.ReasonGroupReady, Reason: reason, Message: msg}
	}
	budget := func(reason health.BudgetReason, msg string) health.BudgetStatus {
		return health.BudgetStatus{Namespace: "serving", Name: "llm-leaders", Healthy: reason == health.BudgetCaughtUp, Reason: reason, Message: msg}
	}
	tests := []struct {
		name string
		h    health.DomainStatus
		want []string // status, reason, message
	}{
		{"healthy", health.DomainStatus{Domain: "ud-1", Healthy: true,
			Groups: []health.GroupStatus{group("llm-0", health.ReasonGroupReady, "")}, Budgets: []health.BudgetStatus{budget(health.BudgetCaughtUp, "")}},
			[]string{"True", "GroupReady", "domain ud-1: 1 group(s) healthy, 1 budget(s) caught up"}},
		{"a group first", health.DomainStatus{Domain: "ud-1",
			Groups:  []health.GroupStatus{group("llm-0", health.ReasonGroupReady, ""), group("llm-1", health.ReasonMemberNotReady, "llm-1-1 not ready")},
			Budgets: []health.BudgetStatus{budget(health.BudgetBehind, "counts 1 healthy, 2 pods are Ready")}},
			[]string{"False", "MemberNotReady",
				"domain ud-1: group serving/llm-1: llm-1-1 not ready; PodDisruptionBudget serving/llm-leaders: counts 1 healthy, 2 pods are Ready"}},
		{"only a budget", health.DomainStatus{Domain: "ud-2",
			Groups: []health.GroupStatus{group("llm-0", health.ReasonGroupReady, "")}, Budgets: []health.BudgetStatus{budget(health.BudgetNotObserved, "not observed")}},
			[]string{"False", "BudgetNotObserved", "domain ud-2: PodDisruptionBudget serving/llm-leaders: not observed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, reason, msg := healthCondition(&tc.h)
			if diff := cmp.Diff(tc.want, []string{string(status), reason, msg}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStopReason(t *testing.T) {
	domainErr := func(stage eviction.Stage, cause error) error {
		return &eviction.DomainError{ID: "r", Domain: "ud-1", Stage: stage, Err: cause}
	}
	tests := []struct {
		err  error
		want string
	}{
		{domainErr(eviction.StageRecovery, context.DeadlineExceeded), "StoppedAtRecovery"},
		{domainErr(eviction.StageUpgrade, errors.New("webhook answered 500")), "StoppedAtUpgrade"},
		{domainErr(eviction.StagePhase2, context.Canceled), "Interrupted"},
		{fmt.Errorf("upgrade: %w", domainErr(eviction.StageUpgrade, fmt.Errorf("post: %w", context.Canceled))), "Interrupted"},
		{&udrain.ConfigError{Field: "eviction.RolloutOptions.Domains", Problem: "named twice"}, "InvalidConfiguration"},
		{&topology.ContractError{}, "ContractViolated"},
		{&topology.UnknownDomainError{Domain: "ud-9"}, "UnknownDomain"},
		{errors.New("connection refused"), "Failed"},
	}
	for _, tc := range tests {
		if got := stopReason(tc.err); got != tc.want {
			t.Errorf("stopReason(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestRequestChanged(t *testing.T) {
	base := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{RequestLabel: ""}}, Data: map[string]string{KeyTargetVersion: "1.37.2"}}
	status := base.DeepCopy()
	status.Annotations = map[string]string{StatusAnnotation: "{}"}
	data := base.DeepCopy()
	data.Data[KeyTargetVersion] = "1.37.3"
	unlabelled := base.DeepCopy()
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name string
		cur  *corev1.ConfigMap
		want bool
	}{{"status written", status, false}, {"data changed", data, true}, {"label removed", unlabelled, true}} {
		if got := requestChanged(base, tc.cur); got != tc.want {
			t.Errorf("%s: requestChanged = %t, want %t", tc.name, got, tc.want)
		}
	}
}
