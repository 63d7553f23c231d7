package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/internal/errtree"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// Exit codes of every command. Scripts may rely on them; docs/CLI.md lists
// them.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: any other failure (API errors, pods kubectl drain would
	// refuse, an upgrade command that failed, a timeout that is not a
	// blocked budget, a server never reachable).
	ExitError = 1
	// ExitUsage: the command line must change: an unknown command or flag,
	// a bad argument or option value, an unknown upgrade domain.
	ExitUsage = 2
	// ExitBlocked: a drain hit its --timeout while a PodDisruptionBudget
	// refused evictions. Retrying later, once the budget's groups are
	// healthy, usually succeeds.
	ExitBlocked = 3
	// ExitContract: the placement contract is violated (udrain audit
	// explains how): a group spans domains, groups of a workload share a
	// domain, a leader has no PDB, a pod has two PDBs, a domain holds etcd
	// quorum, or nodes lack the domain label.
	ExitContract = 4
	// ExitInterrupted: SIGINT or SIGTERM stopped the command; nothing new
	// was started after it. Run the same command again to resume.
	ExitInterrupted = 130
)

// UsageError is a mistake in the command line. Its exit code is ExitUsage.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake.
func (e *UsageError) Unwrap() error { return e.Err }

// usageErrorf returns a *UsageError with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// exitCodes are the exit codes of the classes of report.ReasonOf.
var exitCodes = map[string]int{report.ReasonUsage: ExitUsage, report.ReasonBlocked: ExitBlocked,
	report.ReasonContractViolation: ExitContract, report.ReasonInterrupted: ExitInterrupted, report.ReasonError: ExitError}

// ExitCode maps an error returned by a command to the exit code of its
// class (reasonOf).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	return exitCodes[reasonOf(err)]
}

// reasonOf is err's class: the library's (report.ReasonOf), and Usage for
// a mistake of the command line (a UsageError, LeaderWorkerSet's variables
// missing for --from-lws-env) unless it was interrupted.
func reasonOf(err error) string {
	r := report.ReasonOf(err)
	if r != report.ReasonInterrupted && (errors.As(err, new(*UsageError)) || errors.As(err, new(*readiness.EnvError))) {
		return report.ReasonUsage
	}
	return r
}

// errorInfo is the error object of a report: err's class, exit code and
// message in terms of flags; nil without an error.
func errorInfo(err error) *report.ErrorInfo {
	if err == nil {
		return nil
	}
	r := reasonOf(err)
	return &report.ErrorInfo{Reason: r, ExitCode: exitCodes[r], Message: describe(err)}
}

// hint says what to do about err, in one line, or "" when the error's own
// message says it. program is the root command's name ("udrain", "kubectl
// udrain"), cmdPath the command's ("udrain drain").
func hint(err error, program, cmdPath string) string {
	var (
		contract  *topology.ContractError
		unlabeled *topology.UnlabeledNodesError
		stopped   *eviction.DomainError
	)
	held, isHeld := retryError(err, eviction.ReasonInProgress)
	lockNS, isLockNS := clusterError(err, eviction.ReasonNoLockNamespace)
	_, isUpdating := retryError(err, eviction.ReasonWorkloadUpdating)
	_, isBlocked := retryError(err, eviction.ReasonBlocked)
	_, isRefused := clusterError(err, eviction.ReasonRefusedPods)
	// release is how to give back the nodes of a domain that stopped
	// cordoned, instead of resuming it.
	release := func() string {
		if errors.As(err, &stopped) && stopped.Cordoned() {
			return fmt.Sprintf("; or release its nodes with '%s uncordon %s'", program, stopped.Domain)
		}
		return ""
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted: nothing new was started after the signal; run the same command again to resume" + release()
	case isUpdating:
		return "nothing of the domain was touched: wait for the workloads' updates to finish (or fix what holds them), then run the same command again (a longer --workload-update-timeout, or --ignore-workload-updates to start domains regardless)"
	case isLockNS:
		return fmt.Sprintf("create it ('kubectl create namespace %s'), or choose another with --lock-namespace", lockNS.Namespace)
	case isHeld:
		return fmt.Sprintf("resume %q first (the command that started it, with --id %s), or release the domain with '%s uncordon %s' and run this command again", held.By, held.By, program, held.Domain)
	case isBlocked:
		return fmt.Sprintf("a PodDisruptionBudget still refuses evictions; wait until its groups are healthy ('%s wait-healthy') and run the same command again", program) + release()
	case errors.As(err, &contract) && cmdPath == program+" audit":
		return "each finding says what to fix"
	case errors.As(err, &contract):
		return fmt.Sprintf("'%s audit' lists every finding; fix the placement, or pass --allow-violations to drain anyway", program)
	case isRefused:
		return "pass the flag the message names (as with kubectl drain), or remove those pods first"
	case errors.As(err, &unlabeled):
		return "or pass --unlabeled=skip (leave them out) or --unlabeled=own-domain (one domain per node)"
	case errors.As(err, &stopped) && stopped.Timeout > 0 && stopped.Stage == eviction.StageRecovery:
		return "the rollout is resumable: see why the groups are not healthy above, then run the same command again (with a longer --recovery-timeout if they need it)"
	case errors.As(err, &stopped) && stopped.Timeout > 0:
		return "the drain is resumable: run the same command again, with a longer --timeout if the pods need it" + release()
	case errors.As(err, &stopped) && stopped.Cordoned():
		return fmt.Sprintf("the domain's nodes stay cordoned: run the same command again to resume, or release them with '%s uncordon %s'", program, stopped.Domain)
	}
	var usage *UsageError
	if errors.As(err, &usage) {
		return fmt.Sprintf("See '%s --help' for usage.", cmdPath)
	}
	return ""
}

// retryError is the *eviction.RetryError with reason r in err's tree.
func retryError(err error, r eviction.ErrorReason) (*eviction.RetryError, bool) {
	return errtree.Find(err, func(e *eviction.RetryError) bool { return e.Reason == r })
}

// clusterError is the *eviction.ClusterError with reason r in err's tree.
func clusterError(err error, r eviction.ErrorReason) (*eviction.ClusterError, bool) {
	return errtree.Find(err, func(e *eviction.ClusterError) bool { return e.Reason == r })
}
