package kubeclient

import (
	"context"
	"errors"
	"net"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/udrain/udrain/internal/netclass"
)

// ServerProblem says how an API server failed a client (eviction's
// RetryError with ReasonUnreachable carries it).
type ServerProblem string

// The ways an API server fails.
const (
	// ServerRefused: nothing listens at its address (connection refused).
	ServerRefused ServerProblem = "Refused"
	// ServerNoAnswer: it accepted the connection but did not answer in
	// time, or stalled in the middle of an answer (a black hole: a dead
	// load balancer, a firewall that drops).
	ServerNoAnswer ServerProblem = "NoAnswer"
	// ServerFailing: it answers every request with a 5xx status.
	ServerFailing ServerProblem = "ServerError"
	// ServerThrottled: it answers every request with 429 Too Many
	// Requests (API Priority and Fairness rejecting udrain).
	ServerThrottled ServerProblem = "Throttled"
	// ServerUnreachable: any other network failure (DNS, TLS, a reset).
	ServerUnreachable ServerProblem = "Unreachable"
)

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
// report the same eviction.RetryError (ReasonUnreachable).
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
