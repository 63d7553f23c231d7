package eviction

import (
	"errors"
	"strings"
	"time"

	"github.com/udrain/udrain/kubeclient"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// outcomeKind is what an eviction attempt's answer means for udrain.
type outcomeKind int

const (
	outcomeAccepted             outcomeKind = iota // the pod is being deleted
	outcomeGone                                    // 404, or 409 on the UID precondition: the pod we planned for is gone
	outcomeConflict                                // 409: gone if the UID changed, else retry
	outcomeBlocked                                 // 429 or a budget-caused 403: wait for the budget
	outcomeMultiPDB                                // 500: the pod has more than one PDB
	outcomeTransient                               // the API was unreachable or overloaded: retry
	outcomeFatal                                   // retrying cannot help (RBAC, invalid request)
	outcomeAdmission                               // an admission webhook denied it or could not be called: retry a few times
	outcomeNamespaceTerminating                    // 403 NamespaceTerminating: the pod goes with its namespace; retry until it does
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
		if st.Code == 403 && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return outcomeNamespaceTerminating
		}
	}
	if transient(err) {
		return outcomeTransient
	}
	// Retrying cannot help: RBAC, an invalid request, or an error of the
	// client's own making.
	return outcomeFatal
}

// transient reports an error that retrying the request can end: the API
// server restarting, overloaded or unreachable (kubeclient.ServerProblemOf: refused
// or reset connections, timeouts, 5xx, 429).
func transient(err error) bool {
	problem, _ := kubeclient.ServerProblemOf(err)
	return problem != ""
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

// unreachableError returns the *RetryError (ReasonUnreachable) of a request's err, or
// nil when err is not about the server's health. server is used when err
// names none.
func unreachableError(server string, err error, waited time.Duration) *RetryError {
	problem, code := kubeclient.ServerProblemOf(err)
	if problem == "" {
		return nil
	}
	if s := serverOf(err); s != "" {
		server = s
	}
	return &RetryError{Reason: ReasonUnreachable, Server: server, Problem: problem, Status: code, Waited: waited.Round(time.Millisecond), Err: err}
}
