package eviction

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// TestReaderAudit: the audit's report is the contract's findings over
// every domain, with what it looked at; the rollout over every domain
// that "udrain audit" simulates beside it (PlanRollout) adds the
// destination findings, or cannot be planned while a domain is held by
// another rollout, which does not stop the audit.
func TestReaderAudit(t *testing.T) {
	spanning := lwsCluster(2, 2, 2)
	for _, o := range spanning {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "llm-0-1" {
			p.Spec.NodeName = "node-2-1"
		}
	}
	type summary struct {
		LabelKey       string
		Domains        []string
		Groups, PDBs   int
		Codes          []topology.FindingCode
		PlanCodes      []topology.FindingCode // the plan's destination findings
		Planned        bool
		RolloutErr     bool
		ContractErrors int
	}
	for name, tc := range map[string]struct {
		objs     []runtime.Object
		steering Steering
		want     summary
	}{
		"every group full in its domain": {lwsCluster(2, 2, 2), SteerPreferUpgraded, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2"}, Groups: 2, PDBs: 1,
			PlanCodes: []topology.FindingCode{topology.FindingDisruptedAgain}, Planned: true}},
		"steered strictly": {lwsCluster(3, 2, 2), SteerStrict, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2", "ud-3"}, Groups: 3, PDBs: 1,
			Planned: true}},
		"a group across two domains": {spanning, SteerPreferUpgraded, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2"}, Groups: 2, PDBs: 1,
			Codes: []topology.FindingCode{topology.FindingPack}, PlanCodes: []topology.FindingCode{topology.FindingDisruptedAgain}, Planned: true, ContractErrors: 1}},
		"a domain held by another rollout": {readerCluster(), SteerPreferUpgraded, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2"}, Groups: 2, PDBs: 1,
			RolloutErr: true}},
	} {
		t.Run(name, func(t *testing.T) {
			rd, err := NewReader(fake.NewClientset(tc.objs...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := rd.Audit(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// A plan with contract errors comes with a ContractError: the
			// audit's already.
			plan, planErr := rd.PlanRollout(t.Context(), RolloutOptions{Steering: tc.steering})
			got := summary{LabelKey: a.LabelKey, Domains: a.Domains, Groups: a.Groups, PDBs: a.PDBs, Planned: plan != nil, RolloutErr: plan == nil && planErr != nil}
			for _, f := range a.Findings {
				got.Codes = append(got.Codes, f.Code)
			}
			if plan != nil {
				for _, f := range plan.Findings {
					if f.Code == topology.FindingDisruptedAgain || f.Code == topology.FindingNoRoom || f.Code == topology.FindingParallelLimited {
						got.PlanCodes = append(got.PlanCodes, f.Code)
					}
				}
			}
			var ce *topology.ContractError
			if errors.As(a.Err(), &ce) {
				got.ContractErrors = len(ce.Findings)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("audit (-want +got):\n%s", diff)
			}
		})
	}
}

// The rollout "udrain audit" simulates refuses options that cannot work
// before any request.
func TestReaderPlanRolloutRefusesBadOptions(t *testing.T) {
	client := fake.NewClientset(lwsCluster(2, 2, 2)...)
	rd, err := NewReader(client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := rd.PlanRollout(t.Context(), RolloutOptions{Steering: "Sideways"})
	var ce *udrain.ConfigError
	if !errors.As(err, &ce) || ce.Field != "eviction.RolloutOptions.Steering" || plan != nil {
		t.Errorf("PlanRollout: %v, %v; want a ConfigError about eviction.RolloutOptions.Steering", plan, err)
	}
	if n := len(client.Actions()); n > 0 {
		t.Errorf("%d requests before the refusal", n)
	}
}
