package testbed

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/e2e/fixture"
)

// A kustomization shaped like LWS's config/webhook: manifests with the pod
// webhook second, and JSON patches that replace it with one that has the
// objectSelector.
var webhookKustomization = map[string]string{
	"kustomization.yaml": `resources:
- manifests.yaml
patches:
- path: mutating-patch.yaml
  target:
    group: admissionregistration.k8s.io
    version: v1
    kind: MutatingWebhookConfiguration
    name: mutating-webhook-configuration
`,
	"manifests.yaml": `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- name: mlws.example
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-lws}
- name: mpod.example
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: vlws.example
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-lws}
`,
	"mutating-patch.yaml": `- op: replace
  path: /webhooks/1
  value:
    name: mpod.example
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig:
      service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
    objectSelector:
      matchExpressions:
      - {key: leaderworkerset.sigs.k8s.io/name, operator: Exists}
`,
}

func TestLWSWebhookConfigurations(t *testing.T) {
	dir := t.TempDir()
	for name, content := range webhookKustomization {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	configs, err := lwsWebhookConfigurations(dir, "https://127.0.0.1:1234", ca)
	if err != nil {
		t.Fatal(err)
	}
	type hook struct {
		Config, Webhook, URL string
		CABundle             bool
		ObjectSelector       string
		NamespaceSelector    string
	}
	var got []hook
	for _, c := range configs {
		hooks, _, _ := unstructured.NestedSlice(c.Object, "webhooks")
		for _, h := range hooks {
			wh := h.(map[string]any)
			url, _, _ := unstructured.NestedString(wh, "clientConfig", "url")
			_, hasService, _ := unstructured.NestedMap(wh, "clientConfig", "service")
			b64, _, _ := unstructured.NestedString(wh, "clientConfig", "caBundle")
			bundle, _ := base64.StdEncoding.DecodeString(b64)
			if hasService {
				t.Errorf("%s: clientConfig still names a Service", wh["name"])
			}
			sel, _, _ := unstructured.NestedFieldNoCopy(wh, "objectSelector")
			var selText string
			if sel != nil {
				b, _ := yaml.Marshal(sel)
				selText = strings.TrimSpace(string(b))
			}
			ns, _, _ := unstructured.NestedString(wh, "namespaceSelector", "matchLabels", fixture.LWSNamespaceLabel)
			got = append(got, hook{c.GetKind() + "/" + c.GetName(), wh["name"].(string), url, string(bundle) == string(ca), selText, ns})
		}
	}
	want := []hook{
		{"MutatingWebhookConfiguration/lws-mutating-webhook-configuration", "mlws.example", "https://127.0.0.1:1234/mutate-lws", true, "", "true"},
		{"MutatingWebhookConfiguration/lws-mutating-webhook-configuration", "mpod.example", "https://127.0.0.1:1234/mutate--v1-pod", true,
			"matchExpressions:\n- key: leaderworkerset.sigs.k8s.io/name\n  operator: Exists", "true"},
		{"ValidatingWebhookConfiguration/lws-validating-webhook-configuration", "vlws.example", "https://127.0.0.1:1234/validate-lws", true, "", "true"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}

	// A kustomization without a validating configuration is not LWS's.
	if err := os.WriteFile(filepath.Join(dir, "manifests.yaml"), []byte(strings.SplitN(webhookKustomization["manifests.yaml"], "---", 2)[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lwsWebhookConfigurations(dir, "https://127.0.0.1:1234", ca); err == nil || !strings.Contains(err.Error(), "want a mutating and a validating one") {
		t.Errorf("one configuration: %v, want an error", err)
	}
}

func TestNewLWSSetup(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	if _, err := NewLWSSetup(dir, work, "/kubeconfig"); err == nil || !strings.Contains(err.Error(), "hack/lws.sh") {
		t.Errorf("without a manager binary: %v, want an error naming hack/lws.sh", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lws-manager"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := NewLWSSetup(dir, work, "/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "lws-manager"), "--config", filepath.Join(work, "config.yaml"), "--kubeconfig", "/kubeconfig"}, s.Command()); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(filepath.Join(work, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		APIVersion     string `json:"apiVersion"`
		Kind           string `json:"kind"`
		LeaderElection struct {
			LeaderElect bool `json:"leaderElect"`
		} `json:"leaderElection"`
		InternalCertManagement struct {
			Enable bool `json:"enable"`
		} `json:"internalCertManagement"`
		Webhook struct {
			Host    string `json:"host"`
			Port    int    `json:"port"`
			CertDir string `json:"certDir"`
		} `json:"webhook"`
		Health struct {
			Addr string `json:"healthProbeBindAddress"`
		} `json:"health"`
		Metrics struct {
			Addr string `json:"bindAddress"`
		} `json:"metrics"`
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatalf("config.yaml: %v\n%s", err, data)
	}
	if cfg.APIVersion != "config.lws.x-k8s.io/v1alpha1" || cfg.Kind != "Configuration" || cfg.LeaderElection.LeaderElect ||
		cfg.InternalCertManagement.Enable || cfg.Webhook.Host != "127.0.0.1" || cfg.Webhook.Port != s.WebhookPort ||
		cfg.Webhook.CertDir != filepath.Join(work, "certs") || cfg.Health.Addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(s.HealthPort)) || cfg.Metrics.Addr != "0" {
		t.Errorf("config.yaml: %+v", cfg)
	}
	if s.WebhookPort == s.HealthPort || s.WebhookHost() != "https://127.0.0.1:"+strconv.Itoa(s.WebhookPort) {
		t.Errorf("ports %d, %d; host %s", s.WebhookPort, s.HealthPort, s.WebhookHost())
	}

	// The certificate in certs/ is served for 127.0.0.1 under the CA the
	// webhook configurations name.
	cert, err := tls.LoadX509KeyPair(filepath.Join(work, "certs", "tls.crt"), filepath.Join(work, "certs", "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Cert.CA) {
		t.Fatal("CA PEM does not parse")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("TLS to 127.0.0.1 under the setup's CA: %v", err)
	}
	resp.Body.Close()
}
