package testkit_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/udrain/udrain/internal/testkit"
)

func TestClosedAddrRefuses(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	conn, err := net.Dial("tcp", addr)
	if err == nil {
		conn.Close()
		t.Fatalf("dial %s: connected, want refused", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want connection refused", addr, err)
	}
}

// A server that requires a client certificate of the CA accepts the one
// it issued, and neither none nor one another CA issued; a client that
// trusts ServerCAFile trusts the server.
func TestCA(t *testing.T) {
	ca := testkit.NewCA(t, "client-ca")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = ca.RequireClientCert()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)

	roots := x509.NewCertPool()
	pemData, err := os.ReadFile(testkit.ServerCAFile(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if !roots.AppendCertsFromPEM(pemData) {
		t.Fatal("ServerCAFile holds no certificate")
	}
	get := func(certFile, keyFile string) error {
		cfg := &tls.Config{RootCAs: roots}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		defer client.CloseIdleConnections()
		resp, err := client.Get(srv.URL)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := get(ca.IssueClient(t, "worker")); err != nil {
		t.Errorf("with a certificate the CA issued: %v", err)
	}
	if err := get("", ""); err == nil {
		t.Error("without a client certificate: no error, want the handshake to fail")
	}
	if err := get(testkit.NewCA(t, "other-ca").IssueClient(t, "stranger")); err == nil {
		t.Error("with a certificate another CA issued: no error, want the handshake to fail")
	}
}

// The kubeconfig's current context reaches the server, with the token.
func TestKubeconfig(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Authorization"):
		default:
		}
		http.Error(w, "not a real API server", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	cfg, err := clientcmd.BuildConfigFromFlags("", testkit.Kubeconfig(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = client.Discovery().ServerVersion()
	select {
	case auth := <-got:
		if auth != "Bearer t" {
			t.Errorf("Authorization %q, want the kubeconfig's token", auth)
		}
	default:
		t.Fatalf("the server at %s got no request", srv.URL)
	}
}
