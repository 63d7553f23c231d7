package readiness

import (
	"errors"
	"fmt"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/netclass"
)

// Reason is the class of a failed check in words that are safe to show to
// anyone who can reach the readiness endpoint: unlike the error itself, it
// names no URL, address, DNS resolver or answer body. /readyz/<member>
// shows it unless [Options.ExposeMemberErrors] is set.
type Reason string

// The reasons [ReasonOf] gives.
const (
	// ReasonNotCheckedYet: no check has finished yet ([ErrNotCheckedYet]).
	ReasonNotCheckedYet Reason = "not checked yet"
	// ReasonGone: the member is known to be gone ([Gone]).
	ReasonGone Reason = "gone"
	// ReasonInvalidConfiguration: the check can never succeed (a
	// *udrain.ConfigError, such as an invalid URL).
	ReasonInvalidConfiguration Reason = "invalid configuration"
	// ReasonDNSNotFound: the member's name does not resolve.
	ReasonDNSNotFound Reason = "DNS name not found"
	// ReasonDNS: the DNS lookup failed otherwise (timeout, server failure).
	ReasonDNS Reason = "DNS lookup failed"
	// ReasonRefused: nothing accepts connections on the member's port.
	ReasonRefused Reason = "connection refused"
	// ReasonTimeout: no answer within the member timeout.
	ReasonTimeout Reason = "timeout"
	// ReasonHTTPStatus: the member answered with a status outside 2xx; the
	// endpoint shows the code too ("HTTP status 503").
	ReasonHTTPStatus Reason = "HTTP status"
	// ReasonTLS: the TLS handshake failed (an unknown CA, a name mismatch,
	// a missing client certificate, plain HTTP behind https://).
	ReasonTLS Reason = "TLS handshake failed"
	// ReasonOther: anything else (a reset connection, a check of your own).
	ReasonOther Reason = "check failed"
)

// ReasonOf returns the class of a check's error or of a verdict ([Passed]
// errors, nil, give ""). A [*DownError] gives the reason of its last check.
func ReasonOf(err error) Reason {
	var (
		gone   *GoneError
		config *udrain.ConfigError
		status *HTTPStatusError
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotCheckedYet):
		return ReasonNotCheckedYet
	case errors.As(err, &gone):
		return ReasonGone
	case errors.As(err, &config):
		return ReasonInvalidConfiguration
	case errors.As(err, &status):
		return ReasonHTTPStatus
	}
	// The network failures are classified as bootstrap classifies a
	// server's: one set of rules for DNS, refused, TLS and timeouts.
	switch c := netclass.Of(err); {
	case c == netclass.DNSNotFound:
		return ReasonDNSNotFound
	case c == netclass.DNSTemporary:
		return ReasonDNS
	case c == netclass.ConnectionRefused:
		return ReasonRefused
	case c.IsTLS():
		return ReasonTLS
	case c == netclass.Timeout:
		return ReasonTimeout
	default:
		return ReasonOther
	}
}

// describe is what /readyz/<member> says of a verdict: its reason, with
// the status code and the count of consecutive failures where they apply,
// or, with expose, the whole error.
func describe(verdict error, expose bool) string {
	if expose {
		return verdict.Error()
	}
	text := string(ReasonOf(verdict))
	var status *HTTPStatusError
	if errors.As(verdict, &status) {
		text = fmt.Sprintf("%s %d", text, status.StatusCode)
	}
	var down *DownError
	if errors.As(verdict, &down) && down.Class == SoftFailure && down.Threshold > 1 {
		text = fmt.Sprintf("%d consecutive failures: %s", down.Failures, text)
	}
	return text
}
