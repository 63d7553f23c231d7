package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// classifyCases are errors shaped as net, net/http and crypto/tls return
// them (wrapped in *url.Error by the HTTP client). The real-socket tests
// check that real failures produce these shapes.
func classifyCases() []struct {
	name string
	err  error
	want FailureClass
} {
	get := func(err error) error { return &url.Error{Op: "Get", URL: "http://gpustack-server/healthz", Err: err} }
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	return []struct {
		name string
		err  error
		want FailureClass
	}{
		{"nil", nil, ClassNone},
		{"no such host", get(dial(&net.DNSError{Err: "no such host", Name: "gpustack-server", IsNotFound: true})), ClassDNSNotFound},
		{"temporary DNS failure", get(dial(&net.DNSError{Err: "server misbehaving", Name: "gpustack-server", IsTemporary: true})), ClassDNSTemporary},
		{"DNS timeout", dial(&net.DNSError{Err: "i/o timeout", Name: "gpustack-server", IsTimeout: true}), ClassDNSTemporary},
		{"refused", get(dial(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED})), ClassConnectionRefused},
		{"context deadline", get(context.DeadlineExceeded), ClassTimeout},
		{"i/o timeout", get(dial(os.ErrDeadlineExceeded)), ClassTimeout},
		{"unknown authority", get(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), ClassTLSUnknownAuthority},
		{"name mismatch", get(&tls.CertificateVerificationError{Err: x509.HostnameError{Host: "gpustack-server"}}), ClassTLSNameMismatch},
		{"expired certificate", get(&tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired}}), ClassTLSHandshake},
		{"plain HTTP server", get(http.ErrSchemeMismatch), ClassTLSHandshake},
		{"not a TLS record", get(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), ClassTLSHandshake},
		{"remote alert", get(&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}), ClassTLSHandshake},
		{"HTTP status", &statusError{code: 503, status: "503 Service Unavailable", want: "2xx"}, ClassHTTPStatus},
		{"body", &bodyError{err: errors.New("no ok")}, ClassUnexpectedBody},
		{"reset", get(dial(&os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET})), ClassOther},
		{"EOF", get(io.EOF), ClassOther},
		{"wrapped twice", fmt.Errorf("register: %w", get(dial(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}))), ClassConnectionRefused},
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range classifyCases() {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestFailureClassHint(t *testing.T) {
	all := []FailureClass{ClassDNSNotFound, ClassDNSTemporary, ClassConnectionRefused, ClassTimeout, ClassTLSUnknownAuthority, ClassTLSNameMismatch, ClassTLSHandshake, ClassHTTPStatus, ClassUnexpectedBody, ClassOther}
	seen := map[string]FailureClass{}
	for _, c := range all {
		h := c.Hint()
		if h == "" {
			t.Errorf("%s has no hint", c)
		}
		if other, dup := seen[h]; dup {
			t.Errorf("%s and %s share the hint %q", c, other, h)
		}
		seen[h] = c
	}
	if h := ClassNone.Hint(); h != "" {
		t.Errorf("ClassNone.Hint() = %q, want empty", h)
	}
}

// go test -run '^$' -bench Classify -benchmem ./bootstrap/
func BenchmarkClassify(b *testing.B) {
	for _, tt := range classifyCases() {
		if tt.err == nil {
			continue
		}
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if Classify(tt.err) != tt.want {
					b.Fatal("wrong class")
				}
			}
		})
	}
}
