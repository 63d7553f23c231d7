package netclass

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// The error shapes Of classifies (DNS, refused, TLS, timeouts, as net,
// net/http and crypto/tls return them) are tested through its callers, one
// table each: bootstrap's classifyCases (with real sockets producing them)
// and readiness's ReasonOf cases. Here: what those do not reach.

func TestOfNil(t *testing.T) {
	if got := Of(nil); got != None {
		t.Errorf("Of(nil) = %q, want None", got)
	}
	if got := Of(errors.New("boom")); got != Other {
		t.Errorf("Of(an error of no network kind) = %q, want Other", got)
	}
}

func TestIsTLS(t *testing.T) {
	for c, want := range map[Class]bool{
		None: false, TLSUnknownAuthority: true, TLSNameMismatch: true, DNSNotFound: false, DNSTemporary: false,
		ConnectionRefused: false, TLSHandshake: true, Timeout: false, Other: false,
	} {
		if got := c.IsTLS(); got != want {
			t.Errorf("%q.IsTLS() = %t, want %t", c, got, want)
		}
	}
}

// TestConnectionLost: a connection that broke under a request (what an API
// server that restarts leaves) is lost; a refused connection, a timeout
// and an error of no network kind (a client-side failure) are not.
func TestConnectionLost(t *testing.T) {
	post := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/a/pods/p/eviction", Err: err}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"reset", post(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), true},
		{"broken pipe", post(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), true},
		{"EOF", post(io.EOF), true},
		{"unexpected EOF", fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF), true},
		{"closed connection", post(net.ErrClosed), true},
		{"GOAWAY", post(errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=5")), true},
		{"HTTP/2 connection lost", post(errors.New("http2: client connection lost")), true},
		{"refused", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), false},
		{"timeout", post(context.DeadlineExceeded), false},
		{"a client-side failure", post(errors.New("request failed")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConnectionLost(tc.err); got != tc.want {
				t.Errorf("ConnectionLost(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}
