package bootstrap

import (
	"errors"
	"fmt"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/netclass"
)

// FailureClass names why one attempt to reach the server failed. The classes
// follow what a worker typically sees while its server starts: first the
// Service's DNS record is missing, then nothing listens, then the server
// answers but is not ready.
type FailureClass string

const (
	// ClassNone is the class of an attempt that succeeded, or of a WaitError
	// whose wait ended before any attempt completed.
	ClassNone = FailureClass(netclass.None)
	// ClassDNSNotFound: the name does not exist ("no such host", glibc's
	// "Name or service not known"). In a cluster this is usually a Service
	// that does not exist yet, or a wrong name or namespace.
	ClassDNSNotFound = FailureClass(netclass.DNSNotFound)
	// ClassDNSTemporary: the resolver did not give an answer (timeout,
	// SERVFAIL, "Temporary failure in name resolution").
	ClassDNSTemporary = FailureClass(netclass.DNSTemporary)
	// ClassConnectionRefused: the address exists but nothing listens on the
	// port, or the Service has no ready endpoints.
	ClassConnectionRefused = FailureClass(netclass.ConnectionRefused)
	// ClassTimeout: the attempt did not finish within the per-attempt timeout
	// (or before the overall deadline).
	ClassTimeout = FailureClass(netclass.Timeout)
	// ClassTLSUnknownAuthority: the server's certificate is not signed by a
	// trusted CA.
	ClassTLSUnknownAuthority = FailureClass(netclass.TLSUnknownAuthority)
	// ClassTLSNameMismatch: the server's certificate is not valid for the name
	// the client expects.
	ClassTLSNameMismatch = FailureClass(netclass.TLSNameMismatch)
	// ClassTLSHandshake: any other TLS failure: a plain-HTTP server behind an
	// https:// URL, a rejected or missing client certificate, an expired
	// certificate.
	ClassTLSHandshake = FailureClass(netclass.TLSHandshake)
	// ClassHTTPStatus: the server answered with a status code that does not
	// count as ready (the code is in WaitError.StatusCode and
	// Attempt.StatusCode).
	ClassHTTPStatus FailureClass = "HTTPStatus"
	// ClassUnexpectedBody: the status was accepted but Options.CheckBody
	// rejected the body.
	ClassUnexpectedBody FailureClass = "UnexpectedBody"
	// ClassOther: anything else (connection reset, no route to host, a
	// malformed response).
	ClassOther = FailureClass(netclass.Other)
)

// Hint says, in one sentence, what a class usually means and what to check.
// It returns "" for ClassNone. It names no setting: the Options field that
// fixes the failure, if one does, is Setting.
func (c FailureClass) Hint() string {
	switch c {
	case ClassNone:
		return ""
	case ClassDNSNotFound:
		return "the name does not resolve: the server's Service may not exist yet; check its name and namespace"
	case ClassDNSTemporary:
		return "the DNS resolver did not answer: check that cluster DNS is running and reachable"
	case ClassConnectionRefused:
		return "nothing accepts connections on that port yet: the server may still be starting, or the port or the Service's targetPort is wrong"
	case ClassTimeout:
		return "the server did not answer in time: it may be overloaded or hung, or a network policy drops the traffic"
	case ClassTLSUnknownAuthority:
		return "the server certificate is signed by an unknown CA: give the CA bundle that signed it"
	case ClassTLSNameMismatch:
		return "the server certificate is not valid for this name: use a name it was issued for, or set the name to verify"
	case ClassTLSHandshake:
		return "the TLS handshake failed: check the scheme (http:// vs https://) and the client certificate"
	case ClassHTTPStatus:
		return "the server answers but is not ready yet; if this status means ready, accept it"
	case ClassUnexpectedBody:
		return "the server answers but its body fails the body check"
	default:
		return "unexpected failure: see the error"
	}
}

// Setting names, in udrain.ConfigError.Field's form, the Options field
// that the class's Hint says to set ("bootstrap.Options.CAFile"), or ""
// when no setting fixes it.
func (c FailureClass) Setting() string {
	switch c {
	case ClassTLSUnknownAuthority:
		return "bootstrap.Options.CAFile"
	case ClassTLSNameMismatch:
		return "bootstrap.Options.ServerName"
	case ClassHTTPStatus:
		return "bootstrap.Options.StatusCodes"
	case ClassUnexpectedBody:
		return "bootstrap.Options.CheckBody"
	}
	return ""
}

// Advice is Hint followed by the setting that fixes the failure, named by
// name (nil keeps the Go name): "...; if this status means ready, accept
// it (bootstrap.Options.StatusCodes)".
func (c FailureClass) Advice(name func(setting string) string) string {
	h := c.Hint()
	if s := c.Setting(); s != "" && h != "" {
		h += " (" + udrain.NameSetting(name, s) + ")"
	}
	return h
}

// statusError is the failure of an attempt whose HTTP status is not accepted.
type statusError struct {
	code   int
	status string // e.g. "503 Service Unavailable"
	want   string // e.g. "2xx" or "200, 204"
}

func (e *statusError) Error() string {
	return fmt.Sprintf("server answered %s, want %s", e.status, e.want)
}

// bodyError is the failure of an attempt whose body Options.CheckBody
// rejected.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "unexpected response body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// Classify returns the class of an attempt's error. It is a pure function of
// the error chain (errors.As and errors.Is), so it also classifies errors a
// caller got from its own net or net/http calls. A nil error is ClassNone.
//
// A DNS lookup that times out is ClassDNSTemporary rather than ClassTimeout:
// the resolver, not the server, is what did not answer. The network
// failures are classified as package readiness classifies a member's (one
// set of rules, internal/netclass).
func Classify(err error) FailureClass {
	if err == nil {
		return ClassNone
	}
	if _, ok := errors.AsType[*statusError](err); ok {
		return ClassHTTPStatus
	}
	if _, ok := errors.AsType[*bodyError](err); ok {
		return ClassUnexpectedBody
	}
	return FailureClass(netclass.Of(err))
}
