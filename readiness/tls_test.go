package readiness_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
)

// An https member whose certificate a private CA signs, and that requires a
// client certificate: it fails with the TLS reason without TLSOptions, and
// is healthy with them.
func TestHTTPSMemberWithPrivateCA(t *testing.T) {
	clientCA := testkit.NewCA(t, "client-ca")
	certFile, keyFile := clientCA.IssueClient(t, "udrain-readiness")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = clientCA.RequireClientCert()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := testkit.ServerCAFile(t, srv)
	url := srv.URL + "/health"
	// A deadline of its own: the default member timeout (1s) can pass in a
	// TLS handshake on a loaded machine, and the reason is then "timeout".
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()

	if got := readiness.ReasonOf(readiness.HTTPCheck(url)(ctx)); got != readiness.ReasonTLS {
		t.Errorf("without a CA: reason %q, want %q", got, readiness.ReasonTLS)
	}
	onlyCA, err := readiness.TLSOptions{CAFile: caFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if got := readiness.ReasonOf(readiness.HTTPCheck(url, readiness.WithTLSConfig(onlyCA))(ctx)); got != readiness.ReasonTLS {
		t.Errorf("without a client certificate: reason %q, want %q", got, readiness.ReasonTLS)
	}
	wrongName, err := readiness.TLSOptions{CAFile: caFile, ServerName: "w-1.g.ns", ClientCertFile: certFile, ClientKeyFile: keyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if got := readiness.ReasonOf(readiness.HTTPCheck(url, readiness.WithTLSConfig(wrongName))(ctx)); got != readiness.ReasonTLS {
		t.Errorf("with a server name the certificate is not for: reason %q, want %q", got, readiness.ReasonTLS)
	}
	full, err := readiness.TLSOptions{CAFile: caFile, ServerName: "example.com", ClientCertFile: certFile, ClientKeyFile: keyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := readiness.HTTPCheck(url, readiness.WithTLSConfig(full))(ctx); err != nil {
		t.Errorf("with CA, client certificate and server name: %v", err)
	}
	m, err := readiness.ParseMember("w-1="+url, readiness.WithTLSConfig(full))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(ctx); err != nil {
		t.Errorf("ParseMember with WithTLSConfig: %v", err)
	}
}

func TestTLSOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		opts      readiness.TLSOptions
		wantField string
	}{
		{"missing CA", readiness.TLSOptions{CAFile: filepath.Join(dir, "missing")}, "readiness.TLSOptions.CAFile"},
		{"CA not PEM", readiness.TLSOptions{CAFile: notPEM}, "readiness.TLSOptions.CAFile"},
		{"cert without key", readiness.TLSOptions{ClientCertFile: notPEM}, "readiness.TLSOptions.ClientCertFile"},
		{"key without cert", readiness.TLSOptions{ClientKeyFile: notPEM}, "readiness.TLSOptions.ClientCertFile"},
		{"bad pair", readiness.TLSOptions{ClientCertFile: notPEM, ClientKeyFile: notPEM}, "readiness.TLSOptions.ClientCertFile"},
	} {
		_, err := tt.opts.Config()
		var ce *udrain.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.wantField {
			t.Errorf("%s: %v, want a *udrain.ConfigError about %s", tt.name, err, tt.wantField)
		}
	}
	// A TLS configuration would be ignored by a client of the caller's own.
	check := readiness.HTTPCheck("https://w-1:8443/", readiness.WithHTTPClient(http.DefaultClient), readiness.WithTLSConfig(&tls.Config{}))
	var ce *udrain.ConfigError
	if err := check(t.Context()); !errors.As(err, &ce) || ce.Field != "readiness.WithTLSConfig(config)" {
		t.Errorf("WithTLSConfig with WithHTTPClient: %v, want a *udrain.ConfigError", err)
	}
}
