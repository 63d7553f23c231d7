package readiness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/udrain/udrain"
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
		dns    *net.DNSError
		status *HTTPStatusError
		netErr net.Error
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
	case errors.As(err, &dns) && dns.IsNotFound:
		return ReasonDNSNotFound
	case errors.As(err, &dns):
		return ReasonDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case isTLSError(err):
		return ReasonTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	default:
		return ReasonOther
	}
}

// isTLSError reports the failures of a TLS handshake: the typed ones of
// crypto/tls and crypto/x509, an https:// URL answered in plain HTTP, and
// the alerts crypto/tls reports as plain errors ("remote error: tls: ...").
func isTLSError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.Is(err, http.ErrSchemeMismatch) || strings.HasPrefix(innermost(err).Error(), "tls: ")
}

// innermost follows a chain of single wrapped errors to its end.
func innermost(err error) error {
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return err
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
