package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rootsChildEnv marks the run of this test binary, with an empty system
// root store, that checks the roots it got.
const rootsChildEnv = "UDRAIN_TEST_EMPTY_ROOT_STORE"

// TestFallbackRootsWithEmptySystemStore runs this package's test binary
// (main.go and its imports, as in the udrain binary) again with
// SSL_CERT_FILE an empty file and SSL_CERT_DIR an empty directory: a system
// with no CA certificates, as udrain's image. There, the system pool must
// be the fallback roots that main.go imports: a real public chain
// (www.google.com, GTS CA 1C3, from Go's own crypto/x509 tests) verifies
// against x509.SystemCertPool(), which is also the pool crypto/tls uses
// when a tls.Config has no RootCAs (every https client of udrain). A
// local TLS server cannot be signed by a public CA, so the proof is this
// offline verification, at a time within the certificate's validity.
func TestFallbackRootsWithEmptySystemStore(t *testing.T) {
	if os.Getenv(rootsChildEnv) != "" {
		checkPublicChain(t)
		return
	}
	dir := t.TempDir()
	emptyFile := filepath.Join(dir, "empty.pem")
	emptyDir := filepath.Join(dir, "certs")
	if err := os.WriteFile(emptyFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(emptyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFallbackRootsWithEmptySystemStore$", "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSL_CERT_") && !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, rootsChildEnv+"=1", "SSL_CERT_FILE="+emptyFile, "SSL_CERT_DIR="+emptyDir)
	out, err := cmd.CombinedOutput()
	t.Logf("the run with an empty root store:\n%s", out)
	if err != nil {
		t.Fatalf("with an empty system root store: %v", err)
	}
}

func checkPublicChain(t *testing.T) {
	data, err := os.ReadFile("testdata/public-chain.pem")
	if err != nil {
		t.Fatal(err)
	}
	var certs []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	if len(certs) != 2 {
		t.Fatalf("%d certificates in testdata/public-chain.pem, want the leaf and its intermediate", len(certs))
	}
	// The store is really empty: only the fallback can answer.
	for _, f := range []string{os.Getenv("SSL_CERT_FILE")} {
		if b, err := os.ReadFile(f); err != nil || len(b) != 0 {
			t.Fatalf("SSL_CERT_FILE %s is not an empty file (%d bytes, %v)", f, len(b), err)
		}
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		t.Fatalf("SystemCertPool: %v", err)
	}
	inter := x509.NewCertPool()
	inter.AddCert(certs[1])
	chains, err := certs[0].Verify(x509.VerifyOptions{
		DNSName:       "www.google.com",
		Intermediates: inter,
		CurrentTime:   time.Unix(1677615892, 0), // 2023-02-28, within the leaf's validity
	})
	if err != nil {
		t.Fatalf("a public chain does not verify against the system pool with an empty store (no fallback roots?): %v", err)
	}
	root := chains[0][len(chains[0])-1]
	if root.Subject.CommonName != "GTS Root R1" {
		t.Errorf("verified up to %q, want GTS Root R1", root.Subject)
	}
	t.Logf("verified %s -> %s -> %s against a system pool of %d roots (the fallback bundle)", certs[0].Subject.CommonName, certs[1].Subject.CommonName, root.Subject.CommonName, poolSize(pool))
}

// poolSize counts a pool's certificates.
func poolSize(p *x509.CertPool) int {
	//lint:ignore SA1019 the pool is not a macOS or Windows system pool here
	return len(p.Subjects()) //nolint:staticcheck
}
