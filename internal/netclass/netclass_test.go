package netclass

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func TestOf(t *testing.T) {
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "https://svc:8443/ready", Err: err} }
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, None},
		{"no such host", urlErr(opErr(&net.DNSError{Err: "no such host", Name: "svc", IsNotFound: true})), DNSNotFound},
		{"resolver timeout", urlErr(opErr(&net.DNSError{Err: "i/o timeout", Name: "svc", IsTimeout: true})), DNSTemporary},
		{"refused", urlErr(opErr(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED})), ConnectionRefused},
		{"unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), TLSUnknownAuthority},
		{"name mismatch", urlErr(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "svc"}), TLSNameMismatch},
		{"expired", urlErr(x509.CertificateInvalidError{Reason: x509.Expired}), TLSHandshake},
		{"plain HTTP behind https", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), TLSHandshake},
		{"an alert read after the handshake", urlErr(fmt.Errorf("read: %w", errors.New("tls: certificate required"))), TLSHandshake},
		{"https to an http server", http.ErrSchemeMismatch, TLSHandshake},
		{"deadline", urlErr(context.DeadlineExceeded), Timeout},
		{"i/o timeout", urlErr(opErr(os.ErrDeadlineExceeded)), Timeout},
		{"reset", urlErr(opErr(&os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET})), Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.err); got != tc.want {
				t.Errorf("Of(%v) = %q, want %q", tc.err, got, tc.want)
			}
			if got, want := Of(tc.err).IsTLS(), tc.want == TLSUnknownAuthority || tc.want == TLSNameMismatch || tc.want == TLSHandshake; got != want {
				t.Errorf("IsTLS = %t, want %t", got, want)
			}
		})
	}
}
