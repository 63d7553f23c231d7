package bootstrap

import (
	"context"
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain"
)

// Bad input is refused before any attempt, with an error that says what to
// do and names the option (a *udrain.ConfigError).
func TestWaitForServerInvalidInput(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty", "\n")
	notPEM := writeFile(t, dir, "not.pem", "hello")
	twoLines := writeFile(t, dir, "two-lines", "Bearer a\nBearer b\n")
	tokenWithSpace := writeFile(t, dir, "token", "Bearer abc")
	missing := filepath.Join(dir, "missing")
	const https = "https://gpustack-server/healthz"
	const http_ = "http://gpustack-server/healthz"
	const tcp = "tcp://gpustack-server:80"

	tests := []struct {
		name      string
		target    string
		opts      Options
		wantField string
		wantErr   string // in Problem
	}{
		{"no scheme", "gpustack-server:80", Options{}, "bootstrap.WaitForServer(target)", "has no scheme"},
		{"negative timeout", http_, Options{Timeout: -time.Second}, "bootstrap.Options.Timeout", "-1s is negative: use 0 for no bound"},
		{"negative attempt timeout", http_, Options{AttemptTimeout: -time.Second}, "bootstrap.Options.AttemptTimeout", "-1s is negative: use 0 for the default (5s)"},
		{"negative attempts", http_, Options{MaxAttempts: -1}, "bootstrap.Options.MaxAttempts", "-1 is negative"},
		{"backoff without duration", http_, Options{Backoff: wait.Backoff{Factor: 2}}, "bootstrap.Options.Backoff", "Duration 0s must be positive"},
		{"shrinking backoff", http_, Options{Backoff: wait.Backoff{Duration: time.Second, Factor: 0.5}}, "bootstrap.Options.Backoff", "Factor 0.5 must be 0 (constant delay) or at least 1"},
		{"negative jitter", http_, Options{Backoff: wait.Backoff{Duration: time.Second, Jitter: -1}}, "bootstrap.Options.Backoff", "Jitter -1 is negative"},
		{"unbounded growth", http_, Options{Backoff: wait.Backoff{Duration: time.Second, Factor: 2}}, "bootstrap.Options.Backoff", "Cap must be set when Factor > 1"},
		{"status codes on tcp", tcp, Options{StatusCodes: []int{200}}, "bootstrap.Options.StatusCodes", "is set but target tcp://gpustack-server:80 is not http:// or https://"},
		{"body check on tcp", tcp, Options{CheckBody: BodyContains("ok")}, "bootstrap.Options.CheckBody", "is set but target"},
		{"headers on tcp", tcp, Options{Header: http.Header{"X-A": {"b"}}}, "bootstrap.Options.Header", "is set but target"},
		{"token on tcp", tcp, Options{BearerTokenFile: empty}, "bootstrap.Options.BearerTokenFile", "is set but target"},
		{"CA on http", http_, Options{CAFile: notPEM}, "bootstrap.Options.CAFile", "is set but target http://gpustack-server/healthz is not https://"},
		{"server name on tcp", tcp, Options{ServerName: "x"}, "bootstrap.Options.ServerName", "is set but target"},
		{"client cert on http", http_, Options{ClientCertFile: "c"}, "bootstrap.Options.ClientCertFile", "is set but target"},
		{"bad status code", http_, Options{StatusCodes: []int{200, 1000}}, "bootstrap.Options.StatusCodes", "holds 1000: HTTP status codes are 100 to 599"},
		{"missing CA file", https, Options{CAFile: missing}, "bootstrap.Options.CAFile", "cannot read " + missing},
		{"CA file not PEM", https, Options{CAFile: notPEM}, "bootstrap.Options.CAFile", "holds no PEM certificate"},
		{"cert without key", https, Options{ClientCertFile: notPEM}, "bootstrap.Options.ClientCertFile", "set it and the client key for https://gpustack-server/healthz, or neither"},
		{"bad key pair", https, Options{ClientCertFile: notPEM, ClientKeyFile: notPEM}, "bootstrap.Options.ClientCertFile", "cannot load the client certificate"},
		{"missing token file", http_, Options{BearerTokenFile: missing}, "bootstrap.Options.BearerTokenFile", "cannot read"},
		{"empty token file", http_, Options{BearerTokenFile: empty}, "bootstrap.Options.BearerTokenFile", "is empty"},
		{"token with a space", http_, Options{BearerTokenFile: tokenWithSpace}, "bootstrap.Options.BearerTokenFile", "does not hold a single token"},
		{"header file with two lines", http_, Options{HeaderFiles: map[string]string{"Authorization": twoLines}}, "bootstrap.Options.HeaderFiles", "header Authorization: file " + twoLines + " holds more than one line"},
		{"bad header name", http_, Options{Header: http.Header{"X Bad": {"v"}}}, "bootstrap.Options.Header", `header name "X Bad" is not valid`},
		{"header value with newline", http_, Options{Header: http.Header{"Authorization": {"Bearer s3cr3t\nX-Evil: 1"}}}, "bootstrap.Options.Header", "header Authorization has a value with a line break"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempted := false
			opts := tt.opts
			opts.OnAttempt = func(Attempt) { attempted = true }
			_, err := WaitForServer(context.Background(), tt.target, opts)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.wantField || !strings.Contains(ce.Problem, tt.wantErr) {
				t.Fatalf("err = %v, want a *udrain.ConfigError about %s containing %q", err, tt.wantField, tt.wantErr)
			}
			var we *WaitError
			if errors.As(err, &we) || attempted {
				t.Errorf("bad input led to an attempt: %v", err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q quotes a header value", err)
			}
		})
	}
}

func TestNormalizeBackoff(t *testing.T) {
	tests := []struct {
		name string
		in   wait.Backoff
		want wait.Backoff
	}{
		{"zero means default", wait.Backoff{}, wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.2, Cap: 2 * time.Second, Steps: math.MaxInt32}},
		{"constant kept", wait.Backoff{Duration: time.Second}, wait.Backoff{Duration: time.Second}},
		{"steps kept", wait.Backoff{Duration: time.Second, Factor: 2, Steps: 3}, wait.Backoff{Duration: time.Second, Factor: 2, Steps: 3}},
		{"grows to the cap", wait.Backoff{Duration: time.Second, Factor: 1.5, Cap: 10 * time.Second}, wait.Backoff{Duration: time.Second, Factor: 1.5, Cap: 10 * time.Second, Steps: math.MaxInt32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := normalizeBackoff(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBodyContains(t *testing.T) {
	check := BodyContains("ok")
	if err := check([]byte(`{"status":"ok"}`)); err != nil {
		t.Errorf("matching body: %v", err)
	}
	err := check([]byte(strings.Repeat("loading ", 50)))
	if err == nil || !strings.Contains(err.Error(), `does not contain "ok"`) || len(err.Error()) > 150 {
		t.Errorf("non-matching long body: err = %v, want a short error naming the missing text", err)
	}
}

func TestParseHeaderFiles(t *testing.T) {
	for _, tc := range []struct {
		specs       []string
		want        map[string]string
		wantProblem string
	}{
		{nil, nil, ""},
		{[]string{"Authorization=/etc/token/header", "X-Team=/etc/team", "X-Team=/etc/team2"}, map[string]string{"Authorization": "/etc/token/header", "X-Team": "/etc/team2"}, ""},
		{[]string{"X-Eq=/etc/a=b"}, map[string]string{"X-Eq": "/etc/a=b"}, ""},
		{[]string{"Authorization"}, nil, `"Authorization": want NAME=PATH, e.g. Authorization=/etc/token/header`},
		{[]string{"=/etc/token"}, nil, `"=/etc/token": want NAME=PATH, e.g. Authorization=/etc/token/header`},
		{[]string{"Authorization="}, nil, `"Authorization=": want NAME=PATH, e.g. Authorization=/etc/token/header`},
	} {
		got, err := ParseHeaderFiles(tc.specs)
		var problem string
		if ce, ok := errors.AsType[*udrain.ConfigError](err); ok && ce.Field == "bootstrap.Options.HeaderFiles" {
			problem = ce.Problem
		} else if err != nil {
			t.Errorf("ParseHeaderFiles(%q): %v, want a ConfigError about bootstrap.Options.HeaderFiles", tc.specs, err)
		}
		if diff := cmp.Diff(tc.wantProblem, problem); diff != "" {
			t.Errorf("ParseHeaderFiles(%q) problem (-want +got):\n%s", tc.specs, diff)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseHeaderFiles(%q) (-want +got):\n%s", tc.specs, diff)
		}
	}
}
