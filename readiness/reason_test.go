package readiness_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/readiness"
)

func TestReasonOf(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tt := range []struct {
		name string
		err  error
		want readiness.Reason
	}{
		{"passed", nil, ""},
		{"not checked yet", readiness.ErrNotCheckedYet, readiness.ReasonNotCheckedYet},
		{"gone, whatever the cause", readiness.Gone(refused), readiness.ReasonGone},
		{"bad URL", &udrain.ConfigError{Field: "readiness.HTTPCheck(rawURL)"}, readiness.ReasonInvalidConfiguration},
		{"status", &url.Error{Op: "Get", URL: "http://x", Err: &readiness.HTTPStatusError{StatusCode: 503}}, readiness.ReasonHTTPStatus},
		{"name not found", &net.DNSError{Err: "no such host", Name: "w-1", Server: "10.96.0.10:53", IsNotFound: true}, readiness.ReasonDNSNotFound},
		{"resolver timeout", &net.DNSError{Err: "i/o timeout", Name: "w-1", IsTimeout: true}, readiness.ReasonDNS},
		{"refused", &url.Error{Op: "Get", URL: "http://x", Err: refused}, readiness.ReasonRefused},
		{"unknown CA", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, readiness.ReasonTLS},
		{"TLS alert", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, readiness.ReasonTLS},
		{"member timeout", fmt.Errorf("no answer within 500ms: %w", context.DeadlineExceeded), readiness.ReasonTimeout},
		{"read deadline", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, readiness.ReasonTimeout},
		{"reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, readiness.ReasonOther},
		{"a check of your own", errors.New("model not loaded"), readiness.ReasonOther},
		{"verdict after failures", &readiness.DownError{Class: readiness.SoftFailure, Failures: 3, Threshold: 3, Err: context.DeadlineExceeded}, readiness.ReasonTimeout},
	} {
		if got := readiness.ReasonOf(tt.err); got != tt.want {
			t.Errorf("%s: ReasonOf(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}
