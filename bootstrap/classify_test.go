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
	"strings"
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

// A hint names no setting; the setting that fixes the failure is a field
// of its own, which Advice and WaitError.Describe name as the caller asks.
func TestFailureClassSetting(t *testing.T) {
	flags := func(s string) string { return map[string]string{"bootstrap.Options.StatusCodes": "--status"}[s] }
	for _, tc := range []struct {
		class      FailureClass
		setting    string
		wantAdvice string
	}{
		{ClassTLSUnknownAuthority, "bootstrap.Options.CAFile", "the server certificate is signed by an unknown CA: give the CA bundle that signed it (bootstrap.Options.CAFile)"},
		{ClassTLSNameMismatch, "bootstrap.Options.ServerName", "the server certificate is not valid for this name: use a name it was issued for, or set the name to verify (bootstrap.Options.ServerName)"},
		{ClassHTTPStatus, "bootstrap.Options.StatusCodes", "the server answers but is not ready yet; if this status means ready, accept it (--status)"},
		{ClassUnexpectedBody, "bootstrap.Options.CheckBody", "the server answers but its body fails the body check (bootstrap.Options.CheckBody)"},
		{ClassConnectionRefused, "", "nothing accepts connections on that port yet: the server may still be starting, or the port or the Service's targetPort is wrong"},
		{ClassNone, "", ""},
	} {
		if got := tc.class.Setting(); got != tc.setting {
			t.Errorf("%s: Setting() = %q, want %q", tc.class, got, tc.setting)
		}
		if got := tc.class.Advice(flags); got != tc.wantAdvice {
			t.Errorf("%s: Advice = %q, want %q", tc.class, got, tc.wantAdvice)
		}
		if strings.Contains(tc.class.Hint(), "Options.") {
			t.Errorf("%s: Hint %q names a setting", tc.class, tc.class.Hint())
		}
	}
	we := &WaitError{Target: "http://h", Class: ClassHTTPStatus, Attempts: 1, Last: errors.New("server answered 503"), Cause: ErrAttemptsExhausted}
	if got := we.Describe(flags); !strings.HasSuffix(got, "(the server answers but is not ready yet; if this status means ready, accept it (--status))") {
		t.Errorf("Describe = %q, want the hint with the flag", got)
	}
	if got := we.Error(); !strings.HasSuffix(got, "accept it (bootstrap.Options.StatusCodes))") {
		t.Errorf("Error = %q, want the hint with the Go setting", got)
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
