package report

import (
	"context"
	"errors"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// ReasonOf classifies an error of the module as ErrorInfo.Reason does:
//
//   - ReasonInterrupted when it is (or wraps) context.Canceled: nothing new
//     was started after the cancel; the same call again resumes;
//   - ReasonUsage for a *udrain.ConfigError or a
//     *topology.UnknownDomainError: the configuration must change;
//   - ReasonBlocked for an *eviction.RetryError with ReasonBlocked,
//     anywhere in err's tree: a PodDisruptionBudget still refused
//     evictions when the time ran out; retrying once its groups are
//     healthy usually succeeds;
//   - ReasonContractViolation for a *topology.ContractError, an
//     *eviction.ClusterError with ReasonMultiplePDBs or a
//     *topology.UnlabeledNodesError;
//   - ReasonError for any other error, "" for nil.
//
// The order matters: a drain interrupted while a budget blocked it is
// Interrupted.
func ReasonOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return ReasonInterrupted
	case errors.As(err, new(*udrain.ConfigError)), errors.As(err, new(*topology.UnknownDomainError)):
		return ReasonUsage
	case errors.Is(err, &eviction.RetryError{Reason: eviction.ReasonBlocked}):
		return ReasonBlocked
	case errors.As(err, new(*topology.ContractError)), errors.Is(err, &eviction.ClusterError{Reason: eviction.ReasonMultiplePDBs}), errors.As(err, new(*topology.UnlabeledNodesError)):
		return ReasonContractViolation
	}
	return ReasonError
}
