package eviction

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/udrain/udrain/internal/netclass"
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
// server restarting, overloaded or unreachable (ServerProblemOf: refused
// or reset connections, timeouts, 5xx, 429).
func transient(err error) bool {
	problem, _ := ServerProblemOf(err)
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

// ServerProblemOf classifies an error of a request to the API server: how
// the server failed (and the HTTP status it answered with), or "" when
// err says nothing about the server's health (nil, NotFound, Forbidden, a
// conflict, ...). A request that ran out of time, or whose context's
// deadline passed, is ServerNoAnswer; an error that is neither an API
// status nor a network failure (internal/netclass), one of the client's
// own making, is "". It is udrain's one judgment of a failed request: of
// a write's errors that are no answer udrain expects (a budget's refusal,
// a pod gone), a server problem is retried (an eviction, a node patch),
// and anything else stops the write at once. Callers that make requests
// of their own before calling a Drainer (the CLI lists nodes) use it to
// report the same *UnreachableError.
func ServerProblemOf(err error) (ServerProblem, int) {
	if err == nil {
		return "", 0
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		switch {
		case code == http.StatusTooManyRequests:
			return ServerThrottled, code
		case code >= 500 && code != http.StatusNotImplemented:
			if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
				return ServerNoAnswer, code
			}
			return ServerFailing, code
		}
		return "", 0
	}
	var opErr *net.OpError
	switch class := netclass.Of(err); {
	case class == netclass.ConnectionRefused:
		return ServerRefused, 0
	case class == netclass.Timeout:
		return ServerNoAnswer, 0
	case errors.Is(err, context.Canceled):
		return "", 0
	case class != netclass.Other, netclass.ConnectionLost(err), errors.As(err, &opErr):
		// DNS, TLS, a connection reset or closed under the request, a
		// host or network that cannot be reached.
		return ServerUnreachable, 0
	}
	// An error of the client's own making (a transport that fails a
	// request before sending it, a credential plugin that fails): it
	// says nothing of the server.
	return "", 0
}

// unreachableError returns the *UnreachableError of a request's err, or
// nil when err is not about the server's health. server is used when err
// names none.
func unreachableError(server string, err error, waited time.Duration) *UnreachableError {
	problem, code := ServerProblemOf(err)
	if problem == "" {
		return nil
	}
	if s := serverOf(err); s != "" {
		server = s
	}
	return &UnreachableError{Server: server, Problem: problem, Status: code, Waited: waited.Round(time.Millisecond), Err: err}
}
