package app

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func TestWaitServer(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(nil)

	t.Run("reachable", func(t *testing.T) {
		r := run(t, t.Context(), cfg, "wait-server", srv.URL+"/healthz", "--bearer-token-file", token, "--body-contains", "ok", "-o", "json")
		if r.code != ExitOK {
			t.Fatalf("exit code %d: %s", r.code, r.stderr)
		}
		var res report.WaitServerResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatal(err)
		}
		if !res.Reachable || res.StatusCode != 200 || res.Attempts != 1 || res.Error != nil {
			t.Errorf("result %+v, want reachable at once with 200", res)
		}
	})
	t.Run("wrong status, classified", func(t *testing.T) {
		r := run(t, t.Context(), cfg, "wait-server", srv.URL+"/healthz", "--max-attempts", "1")
		if r.code != ExitError {
			t.Fatalf("exit code %d, want %d: %s", r.code, ExitError, r.stderr)
		}
		if !strings.Contains(r.stdout, "last failure: HTTPStatus") || !strings.Contains(r.stderr, "401") {
			t.Errorf("the failure is not classified:\nstdout %s\nstderr %s", r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, "s3cret") {
			t.Error("the token leaked into the output")
		}
	})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no scheme", []string{"wait-server", "example.com"}},
		{"ca file with http", []string{"wait-server", srv.URL, "--ca-file", token}},
		{"bad header file", []string{"wait-server", srv.URL, "--header-file", "Authorization"}},
		{"missing token file", []string{"wait-server", srv.URL, "--bearer-token-file", filepath.Join(dir, "nope")}},
		{"status out of range", []string{"wait-server", srv.URL, "--status", "999"}},
		{"negative timeout", []string{"wait-server", srv.URL, "--timeout=-1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := run(t, t.Context(), cfg, tc.args...); r.code != ExitUsage {
				t.Errorf("exit code %d, want %d: %s", r.code, ExitUsage, r.stderr)
			}
		})
	}
}

// TestServeReadiness serves a group of two members, checks /readyz and
// /healthz, then stops it as SIGTERM would (the context ends): exit code 0.
func TestServeReadiness(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer healthy.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(nil)
	var listenedOn string
	cfg.Listen = func(network, addr string) (net.Listener, error) { listenedOn = addr; return ln, nil }
	ctx, cancel := contextWithCancel(t)
	_, errOut, done := runInBackground(ctx, cfg, "serve-readiness", "--listen", ":9999", "--member", "leader="+healthy.URL, "--member", "worker-1=tcp://"+healthy.Listener.Addr().String())
	base := "http://" + ln.Addr().String()
	waitFor(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for path, want := range map[string]string{"/readyz?verbose": "[+]leader ok\n[+]worker-1 ok\nreadyz check passed\n", "/healthz": "ok", "/readyz/worker-1": "ok"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, body, want)
		}
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit code %d after the stop, want 0; stderr:\n%s", code, errOut.String())
	}
	if listenedOn != ":9999" {
		t.Errorf("listened on %q, want --listen's :9999", listenedOn)
	}
	if !strings.Contains(errOut.String(), "serving the readiness of 2 members on http://"+ln.Addr().String()+"/readyz") {
		t.Errorf("stderr does not say where it serves:\n%s", errOut.String())
	}
}

func TestServeReadinessUsage(t *testing.T) {
	lws := map[string]string{"LWS_LEADER_ADDRESS": "vllm-0.vllm.inference", "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "0"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no members", nil, []string{"serve-readiness"}, "no members"},
		{"both sources", lws, []string{"serve-readiness", "--from-lws-env", "--port", "8000", "--member", "a=http://a"}, "not both"},
		{"bad member", nil, []string{"serve-readiness", "--member", "no-url"}, "want NAME=URL"},
		{"lws flag without lws", nil, []string{"serve-readiness", "--member", "a=http://a:1", "--port", "8000"}, "go with --from-lws-env"},
		{"lws env missing", nil, []string{"serve-readiness", "--from-lws-env", "--port", "8000"}, "LWS_LEADER_ADDRESS"},
		{"lws port missing", lws, []string{"serve-readiness", "--from-lws-env"}, "invalid --port: 0"},
		{"member timeout above check timeout", nil, []string{"serve-readiness", "--member", "a=http://a:1", "--member-timeout", "2s", "--check-timeout", "1s"}, "--member-timeout: 2s is longer than the timeout of a round of checks (1s); make it shorter or raise that (see --check-timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := testConfig(nil)
			cfg.LookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			cfg.Listen = func(string, string) (net.Listener, error) { t.Fatal("listened despite bad flags"); return nil, nil }
			r := run(t, t.Context(), cfg, tc.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, tc.want)
			}
		})
	}
}

// TestReadinessGateController runs the controller on a fake cluster: a
// leader that declares the gate gets the condition True while its group is
// whole and Ready; the controller stops with exit code 0.
func TestReadinessGateController(t *testing.T) {
	leader := lwsPod("vllm", 0, 0, "gpu-1")
	leader.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate.ConditionType}}
	worker := lwsPod("vllm", 0, 1, "gpu-2")
	client := fake.NewClientset(leader, worker)
	cfg, _ := testConfig(client)
	ctx, cancel := contextWithCancel(t)
	_, errOut, done := runInBackground(ctx, cfg, "readiness-gate-controller", "-n", testNS, "-l", topology.LWSNameLabel+"=vllm")
	waitFor(t, func() bool {
		p, err := client.CoreV1().Pods(testNS).Get(context.Background(), "vllm-0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == gate.ConditionType && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "Condition written") {
		t.Errorf("the write was not logged:\n%s", errOut.String())
	}
}

// readiness-gate-controller serves its health checks with
// --health-address: the leader is alive and ready, and says how old its
// last sync is.
func TestReadinessGateControllerHealth(t *testing.T) {
	leader := lwsPod("vllm", 0, 0, "gpu-1")
	leader.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate.ConditionType}}
	client := fake.NewClientset(leader, lwsPod("vllm", 0, 1, "gpu-2"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(client)
	var asked string
	cfg.Listen = func(network, addr string) (net.Listener, error) { asked = addr; return ln, nil }
	ctx, cancel := contextWithCancel(t)
	_, errOut, done := runInBackground(ctx, cfg, "readiness-gate-controller", "-n", testNS, "--health-address", ":8081", "--max-sync-age", "30s")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var body string
	waitFor(t, func() bool {
		var code int
		code, body = get("/readyz")
		return code == http.StatusOK && strings.Contains(body, "last successful sync")
	})
	if !strings.HasPrefix(body, "ok\nleading for ") {
		t.Errorf("/readyz: %q, want ok and the leader's state", body)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %q, want 200", code, body)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	if asked != ":8081" || !strings.Contains(errOut.String(), "serving health checks on http://"+ln.Addr().String()+"/healthz") {
		t.Errorf("listened on %q; stderr:\n%s", asked, errOut.String())
	}
}

func TestReadinessGateControllerUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad selector", []string{"readiness-gate-controller", "-l", "a in (b"}, "invalid --selector"},
		{"lease name without namespace", []string{"readiness-gate-controller", "--lease-name", "x"}, "go with --lease-namespace"},
		{"bad lease durations", []string{"readiness-gate-controller", "--lease-namespace", "udrain", "--lease-duration", "5s", "--renew-deadline", "10s"}, "--lease-duration: 5s is not longer than the renew deadline (10s); a leader must give up before others may take over (see --renew-deadline)"},
		{"negative max sync age", []string{"readiness-gate-controller", "--max-sync-age=-1s"}, "invalid --max-sync-age: -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := testConfig(fake.NewClientset())
			r := run(t, t.Context(), cfg, tc.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, tc.want)
			}
		})
	}
}

// serve-readiness serves /metrics on its own listener with
// --metrics-address, and none without it.
func TestServeReadinessMetrics(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer healthy.Close()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scrape, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(nil)
	cfg.Listen = func(network, addr string) (net.Listener, error) {
		if addr == ":9100" {
			return scrape, nil
		}
		return probe, nil
	}
	ctx, cancel := contextWithCancel(t)
	_, errOut, done := runInBackground(ctx, cfg, "serve-readiness", "--listen", ":9999", "--metrics-address", ":9100", "--member", "leader="+healthy.URL)
	// A probe makes the checker judge the member.
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + probe.Addr().String() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var body string
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + scrape.Addr().String() + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return strings.Contains(body, `udrain_readiness_member_healthy{member="leader"} 1`)
	})
	if !strings.Contains(body, "go_goroutines") {
		t.Errorf("the scrape lacks the Go runtime's metrics:\n%s", body)
	}
	if resp, err := http.Get("http://" + probe.Addr().String() + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the probe port serves /metrics too")
		}
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit code %d after the stop, want 0; stderr:\n%s", code, errOut.String())
	}
}
