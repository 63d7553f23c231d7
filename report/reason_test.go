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
		{"blocked", &eviction.RetryError{Reason: eviction.ReasonBlocked}, report.ReasonBlocked},
		{"blocked beside another retry error", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{PDB: "p"}},
			Err: &eviction.RetryError{Reason: eviction.ReasonUnreachable, Err: errors.New("connection refused")}}, report.ReasonBlocked},
		{"another retry error", &eviction.RetryError{Reason: eviction.ReasonLocked}, report.ReasonError},
		{"domain stopped while blocked", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{PDB: "p"}}, Err: context.DeadlineExceeded}, report.ReasonBlocked},
		{"domain interrupted while blocked", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{PDB: "p"}}, Err: context.Canceled}, report.ReasonInterrupted},
		{"contract", &topology.ContractError{}, report.ReasonContractViolation},
		{"multiple PDBs", &eviction.ClusterError{Reason: eviction.ReasonMultiplePDBs, Pod: topology.PodRef{Name: "p"}}, report.ReasonContractViolation},
		{"domain stopped on multiple PDBs", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Err: &eviction.ClusterError{Reason: eviction.ReasonMultiplePDBs}}, report.ReasonContractViolation},
		{"GPUs lost", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageGPUCheck, Err: &eviction.ClusterError{Reason: eviction.ReasonGPUsLost}}, report.ReasonError},
		{"denied by a webhook", &eviction.PermissionError{Reason: eviction.ReasonDenied}, report.ReasonError},
		{"domain refused for a contract", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePlan, Err: &topology.ContractError{}}, report.ReasonContractViolation},
		{"unlabeled nodes", &topology.UnlabeledNodesError{Nodes: []string{"n"}}, report.ReasonContractViolation},
		{"canceled", context.Canceled, report.ReasonInterrupted},
		{"canceled wrapped", fmt.Errorf("upgrade: %w", context.Canceled), report.ReasonInterrupted},
		{"timeout", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageWaitGone, Timeout: time.Minute, Err: context.DeadlineExceeded}, report.ReasonError},
		{"not recovered", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageRecovery, Timeout: time.Minute, Err: context.DeadlineExceeded}, report.ReasonError},
		{"refused pods", &eviction.ClusterError{Reason: eviction.ReasonRefusedPods}, report.ReasonError},
		{"unreachable", &eviction.RetryError{Reason: eviction.ReasonUnreachable, Server: "https://127.0.0.1:1", Err: errors.New("connection refused")}, report.ReasonError},
		{"wait error", &bootstrap.WaitError{Cause: context.DeadlineExceeded}, report.ReasonError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, report.ReasonOf(tc.err)); diff != "" {
				t.Errorf("ReasonOf(%v) (-want +got):\n%s", tc.err, diff)
			}
		})
	}
}
