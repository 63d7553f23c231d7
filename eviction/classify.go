package eviction

import (
	"errors"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// outcomeKind is what an eviction attempt's answer means for udrain.
type outcomeKind int

const (
	outcomeAccepted  outcomeKind = iota // the pod is being deleted
	outcomeGone                         // 404, or 409 on the UID precondition: the pod we planned for is gone
	outcomeConflict                     // 409: gone if the UID changed, else retry
	outcomeBlocked                      // 429 or a budget-caused 403: wait for the budget
	outcomeMultiPDB                     // 500: the pod has more than one PDB
	outcomeTransient                    // the API was unreachable or overloaded: retry
	outcomeFatal                        // retrying cannot help (RBAC, invalid request)
)

const multiPDBMessage = "more than one PodDisruptionBudget"

func classifyEvictionError(err error) outcomeKind {
	if err == nil {
		return outcomeAccepted
	}
	switch {
	case apierrors.IsNotFound(err):
		return outcomeGone
	case apierrors.IsConflict(err):
		return outcomeConflict
	case apierrors.IsTooManyRequests(err):
		return outcomeBlocked
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		if st.Code == 500 && strings.Contains(st.Message, multiPDBMessage) {
			return outcomeMultiPDB
		}
		if st.Code == 403 && hasBudgetCause(err) {
			return outcomeBlocked
		}
		switch {
		case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err),
			apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
			return outcomeTransient
		case st.Code >= 500:
			return outcomeTransient
		}
		return outcomeFatal
	}
	// Not an API answer: the connection failed (an API server restarting,
	// a network blip). Retry; the caller's context bounds the retries.
	return outcomeTransient
}

func hasBudgetCause(err error) bool {
	causes, ok := apierrors.StatusCause(err, policyv1.DisruptionBudgetCause)
	return ok && causes.Message != ""
}

// budgetMessage returns the API server's explanation of a 429, if any.
func budgetMessage(err error) string {
	if cause, ok := apierrors.StatusCause(err, policyv1.DisruptionBudgetCause); ok {
		return cause.Message
	}
	return ""
}
