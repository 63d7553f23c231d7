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

// TestReaderAudit: the contract's findings over every domain, then the
// simulated rollout's destination findings (its own contract findings
// not twice); a rollout that cannot be planned is reported in the audit.
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
			Codes: []topology.FindingCode{topology.FindingDisruptedAgain}, Planned: true}},
		"steered strictly": {lwsCluster(3, 2, 2), SteerStrict, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2", "ud-3"}, Groups: 3, PDBs: 1,
			Planned: true}},
		"a group across two domains": {spanning, SteerPreferUpgraded, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2"}, Groups: 2, PDBs: 1,
			Codes: []topology.FindingCode{topology.FindingPack, topology.FindingDisruptedAgain}, Planned: true, ContractErrors: 1}},
		"a domain held by another rollout": {readerCluster(), SteerPreferUpgraded, summary{LabelKey: topology.DefaultDomainLabel, Domains: []string{"ud-1", "ud-2"}, Groups: 2, PDBs: 1,
			RolloutErr: true}},
	} {
		t.Run(name, func(t *testing.T) {
			rd, err := NewReader(fake.NewClientset(tc.objs...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := rd.Audit(t.Context(), RolloutOptions{Steering: tc.steering})
			if err != nil {
				t.Fatal(err)
			}
			got := summary{LabelKey: a.LabelKey, Domains: a.Domains, Groups: a.Groups, PDBs: a.PDBs, Planned: a.Rollout != nil, RolloutErr: a.RolloutErr != nil}
			for _, f := range a.Findings {
				got.Codes = append(got.Codes, f.Code)
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

func TestReaderAuditRefusesBadOptions(t *testing.T) {
	client := fake.NewClientset(lwsCluster(2, 2, 2)...)
	rd, err := NewReader(client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rd.Audit(t.Context(), RolloutOptions{Steering: "Sideways"})
	var ce *udrain.ConfigError
	if !errors.As(err, &ce) || ce.Field != "eviction.RolloutOptions.Steering" || a != nil {
		t.Errorf("Audit: %v, %v; want a ConfigError about eviction.RolloutOptions.Steering", a, err)
	}
	if n := len(client.Actions()); n > 0 {
		t.Errorf("%d requests before the refusal", n)
	}
}
