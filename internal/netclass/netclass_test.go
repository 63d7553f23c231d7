package netclass

import (
	"errors"
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
