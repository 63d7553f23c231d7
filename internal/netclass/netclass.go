// Package netclass is udrain's one classification of network failures:
// why a dial, a TLS handshake or a request did not reach a server. bootstrap
// (waiting for a server) and readiness (checking a group's members) both
// classify with it, so that a name that does not resolve, a refused
// connection, a TLS failure and a timeout mean the same in both.
package netclass

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
)

// Class names why a network operation failed. Its values are the names of
// bootstrap.FailureClass.
type Class string

// The classes, in the order Of tries them.
const (
	None                Class = ""
	TLSUnknownAuthority Class = "TLSUnknownAuthority"
	TLSNameMismatch     Class = "TLSNameMismatch"
	DNSNotFound         Class = "DNSNotFound"
	DNSTemporary        Class = "DNSTemporary"
	ConnectionRefused   Class = "ConnectionRefused"
	TLSHandshake        Class = "TLSHandshake"
	Timeout             Class = "Timeout"
	Other               Class = "Other"
)

// Of returns the class of err. It is a pure function of the error chain
// (errors.As and errors.Is). A nil error is None.
//
// A DNS lookup that times out is DNSTemporary rather than Timeout: the
// resolver, not the server, is what did not answer.
func Of(err error) Class {
	if err == nil {
		return None
	}
	// TLS verification errors first: they carry no DNS or errno cause.
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return TLSUnknownAuthority
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return TLSNameMismatch
	}
	if dnsErr, ok := errors.AsType[*net.DNSError](err); ok {
		if dnsErr.IsNotFound {
			return DNSNotFound
		}
		return DNSTemporary
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return ConnectionRefused
	}
	if isTLSFailure(err) {
		return TLSHandshake
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return Timeout
	}
	if netErr, ok := errors.AsType[net.Error](err); ok && netErr.Timeout() {
		return Timeout
	}
	// crypto/tls reports some handshake failures as plain errors whose text
	// starts with "tls: ", e.g. an alert from the server read after a TLS 1.3
	// handshake ("remote error: tls: certificate required").
	if strings.HasPrefix(innermost(err).Error(), "tls: ") {
		return TLSHandshake
	}
	return Other
}

// ConnectionLost says whether err is a connection that broke under a
// request: reset by the server, closed in the middle of an answer (EOF),
// or an HTTP/2 connection lost or ended by the server (GOAWAY), as an API
// server that restarts leaves its clients' requests. It is client-go's own
// rule for a request it may retry (k8s.io/client-go/rest, with
// k8s.io/apimachinery/pkg/util/net's IsConnectionReset, IsProbableEOF and
// IsHTTP2ConnectionLost), written over the standard library so that
// readiness, which classifies with this package, imports no Kubernetes
// module. Of calls these Other: they say nothing of why the server went
// away.
func ConnectionLost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	// The words of the errors net/http returns, as plain strings, for a
	// connection that broke (client-go matches the same).
	msg := strings.ToLower(err.Error())
	for _, lost := range []string{
		"connection reset by peer",
		"broken pipe",
		"use of closed network connection",
		"can't write http request on broken connection",
		"http2: server sent goaway and closed the connection",
		"http2: client connection lost",
	} {
		if strings.Contains(msg, lost) {
			return true
		}
	}
	return false
}

// IsTLS says whether c is one of the TLS classes.
func (c Class) IsTLS() bool {
	return c == TLSUnknownAuthority || c == TLSNameMismatch || c == TLSHandshake
}

// isTLSFailure reports the typed TLS failures other than the two
// verification errors Of names on their own.
func isTLSFailure(err error) bool {
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	return errors.Is(err, http.ErrSchemeMismatch)
}

// innermost follows a single-error Unwrap chain to its end.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
