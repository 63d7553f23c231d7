package report_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/bootstrap"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func TestReasonOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom"), report.ReasonError},
		{"config", &udrain.ConfigError{Field: "eviction.Options.Concurrency"}, report.ReasonUsage},
		{"unknown domain", &topology.UnknownDomainError{Domain: "x"}, report.ReasonUsage},
		{"config wrapped", fmt.Errorf("wrapped: %w", &udrain.ConfigError{Field: "bootstrap.Options.CAFile"}), report.ReasonUsage},
		{"blocked", &eviction.BlockedError{}, report.ReasonBlocked},
		{"domain stopped while blocked", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{PDB: "p"}}, Err: context.DeadlineExceeded}, report.ReasonBlocked},
		{"domain interrupted while blocked", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{PDB: "p"}}, Err: context.Canceled}, report.ReasonInterrupted},
		{"contract", &topology.ContractError{}, report.ReasonContractViolation},
		{"multiple PDBs", &eviction.MultiplePDBsError{Pod: topology.PodRef{Name: "p"}}, report.ReasonContractViolation},
		{"domain refused for a contract", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePlan, Err: &topology.ContractError{}}, report.ReasonContractViolation},
		{"unlabeled nodes", &topology.UnlabeledNodesError{Nodes: []string{"n"}}, report.ReasonContractViolation},
		{"canceled", context.Canceled, report.ReasonInterrupted},
		{"canceled wrapped", fmt.Errorf("upgrade: %w", context.Canceled), report.ReasonInterrupted},
		{"timeout", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageWaitGone, Timeout: time.Minute, Err: context.DeadlineExceeded}, report.ReasonError},
		{"not recovered", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageRecovery, Timeout: time.Minute, Err: context.DeadlineExceeded}, report.ReasonError},
		{"refused pods", &eviction.RefusedPodsError{}, report.ReasonError},
		{"unreachable", &eviction.UnreachableError{Server: "https://127.0.0.1:1", Err: errors.New("connection refused")}, report.ReasonError},
		{"wait error", &bootstrap.WaitError{Cause: context.DeadlineExceeded}, report.ReasonError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, report.ReasonOf(tc.err)); diff != "" {
				t.Errorf("ReasonOf(%v) (-want +got):\n%s", tc.err, diff)
			}
		})
	}
}
