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
	outcomeAdmission                    // an admission webhook denied it or could not be called: retry a few times
)

// admissionAttempts bounds the attempts at an eviction that admission
// webhooks refuse: a webhook may deny for a moment (its own state
// catching up) or time out once, but one that keeps refusing stops the
// domain instead of holding it forever.
const admissionAttempts = 3

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
		if _, denied := webhookDenial(st.Message); denied || strings.Contains(st.Message, webhookCallFailed) {
			return outcomeAdmission
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

// The API server's words for admission webhooks (k8s.io/apiserver's
// webhook errors): a denial, and a call that failed under failurePolicy
// Fail (a timeout, a refused connection, a bad answer).
const (
	webhookDenied     = `" denied the request`
	webhookCallFailed = "failed calling webhook"
)

// webhookDenial returns the name of the admission webhook a message says
// denied the request, and whether it says so.
func webhookDenial(msg string) (string, bool) {
	const prefix = `admission webhook "`
	i := strings.Index(msg, prefix)
	if i < 0 {
		return "", false
	}
	rest := msg[i+len(prefix):]
	j := strings.Index(rest, webhookDenied)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// webhookName returns the webhook a call failure names ("failed calling
// webhook \"name\": ..."), or "".
func webhookName(msg string) string {
	if name, ok := webhookDenial(msg); ok {
		return name
	}
	i := strings.Index(msg, webhookCallFailed+` "`)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(webhookCallFailed)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}
