package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/udrain/udrain/redact"
)

func TestSecretsScrub(t *testing.T) {
	var s redact.Secrets
	s.AddURL("http://worker-user:p4ss/w0rd@gpustack:80/x?token=q-token-abcdef&a=1#frag-secret")
	s.Add("Bearer eyJhbGciOiJSUzI1NiJ9.c2VjcmV0", "ab")
	for _, tt := range []struct{ in, want string }{
		{`dial "worker-user:p4ss/w0rd@gpustack"`, `dial "xxxxx@gpustack"`},
		{"user worker-user", "user xxxxx"},
		{"p4ss%2Fw0rd", "xxxxx"},
		{"token q-token-abcdef", "token xxxxx"},
		{"token " + strconv.Quote("q-token-abcdef"), `token "xxxxx"`},
		{"fragment frag-secret", "fragment xxxxx"},
		{"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.c2VjcmV0", "Authorization: xxxxx"},
		{"eyJhbGciOiJSUzI1NiJ9.c2VjcmV0", "xxxxx"},
		// Too short to scrub everywhere without garbling the message.
		{"tab", "tab"},
		// Host, path and other parameters are no secrets.
		{"gpustack:80/x?a=1", "gpustack:80/x?a=1"},
	} {
		if got := s.Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var empty redact.Secrets
	if got := empty.Scrub("p4ss"); got != "p4ss" {
		t.Errorf("the zero Secrets scrubbed %q", got)
	}
}

func TestSecretsError(t *testing.T) {
	const raw = "http://admin:hunter22@s:80/x?token=t0k3n-value"
	var s redact.Secrets
	s.AddURL(raw)
	cause := errors.New("connection refused")
	err := s.Error(&url.Error{Op: "Get", URL: raw, Err: cause})
	if got, want := err.Error(), `Get "http://xxxxx@s:80/x?token=xxxxx": connection refused`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || ue.URL != "http://xxxxx@s:80/x?token=xxxxx" {
		t.Errorf("errors.As found %v, want a *url.Error with the URL redacted", ue)
	}
	if !errors.Is(err, cause) {
		t.Error("the cause is lost")
	}
	wrapped := s.Error(fmt.Errorf("checking: %w", errors.New("hunter22 rejected")))
	if got := wrapped.Error(); got != "checking: xxxxx rejected" {
		t.Errorf("Error() = %q", got)
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}
