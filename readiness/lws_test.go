package readiness_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/readiness"
)

// env returns a lookup function over vars, as os.LookupEnv would see them.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func lwsEnv(address, size, index string) map[string]string {
	return map[string]string{
		readiness.EnvLeaderAddress: address,
		readiness.EnvGroupSize:     size,
		readiness.EnvWorkerIndex:   index,
	}
}

func TestMembersFromLWSEnvNames(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		opts readiness.LWSOptions
		want []string
	}{
		{"leader and workers", lwsEnv("web-0.web.prod", "4", "0"), readiness.LWSOptions{Port: 8000}, []string{"web-0", "web-0-1", "web-0-2", "web-0-3"}},
		{"without the leader", lwsEnv("web-0.web.prod", "3", "0"), readiness.LWSOptions{Port: 8000, ExcludeLeader: true}, []string{"web-0-1", "web-0-2"}},
		{"group of one", lwsEnv("web-0.web.prod", "1", "0"), readiness.LWSOptions{Port: 8000}, []string{"web-0"}},
		{"longer domain", lwsEnv("web-0.web.prod.svc.cluster.local", "2", "0"), readiness.LWSOptions{Port: 8000, Scheme: "tcp"}, []string{"web-0", "web-0-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members, err := readiness.MembersFromLWSEnv(env(tt.vars), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range members {
				got = append(got, m.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("member names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMembersFromLWSEnvTargets checks which URL each member's check asks
// for, by sending every connection to one local server whatever the host.
func TestMembersFromLWSEnvTargets(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Host+r.URL.Path)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	local := srv.Listener.Addr().String()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, local)
		},
	}}

	members, err := readiness.MembersFromLWSEnv(env(lwsEnv("web-0.web.prod", "3", "0")), readiness.LWSOptions{
		Port: 8000, Path: "/v1/health", HTTPOptions: []readiness.HTTPOption{readiness.WithHTTPClient(client)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if err := m.Check(t.Context()); err != nil {
			t.Errorf("member %s: %v", m.Name, err)
		}
	}
	want := []string{"web-0.web.prod:8000/v1/health", "web-0-1.web.prod:8000/v1/health", "web-0-2.web.prod:8000/v1/health"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requested (-want +got):\n%s", diff)
	}
}

func TestMembersFromLWSEnvErrors(t *testing.T) {
	valid := lwsEnv("web-0.web.prod", "3", "0")
	without := func(name string) map[string]string {
		vars := lwsEnv("web-0.web.prod", "3", "0")
		delete(vars, name)
		return vars
	}
	tests := []struct {
		name        string
		vars        map[string]string
		opts        readiness.LWSOptions
		wantEnvVar  string // "" for a *ConfigError
		wantProblem string
	}{
		{"no leader address", without(readiness.EnvLeaderAddress), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, "not set"},
		{"empty leader address", lwsEnv("", "3", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, "not set"},
		{"leader address too short", lwsEnv("web-0.web", "3", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, "want <leader-name>.<subdomain>.<namespace>"},
		{"leader address with upper case", lwsEnv("Web-0.web.prod", "3", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, `"Web-0" is not a DNS label`},
		{"leader address with empty label", lwsEnv("web-0..prod", "3", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, `"" is not a DNS label`},
		{"leader address with a port", lwsEnv("web-0.web.prod:80", "3", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, "not a DNS label"},
		{"no group size", without(readiness.EnvGroupSize), readiness.LWSOptions{Port: 8000}, readiness.EnvGroupSize, "not set"},
		{"group size not a number", lwsEnv("web-0.web.prod", "three", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvGroupSize, "want a whole number from 1 to 4096"},
		{"group size zero", lwsEnv("web-0.web.prod", "0", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvGroupSize, "want a whole number from 1 to 4096"},
		{"group size huge", lwsEnv("web-0.web.prod", "1000000000", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvGroupSize, "want a whole number from 1 to 4096"},
		{"no worker index", without(readiness.EnvWorkerIndex), readiness.LWSOptions{Port: 8000}, readiness.EnvWorkerIndex, "downward API"},
		{"worker index out of range", lwsEnv("web-0.web.prod", "3", "3"), readiness.LWSOptions{Port: 8000}, readiness.EnvWorkerIndex, "want a whole number from 0 to 2"},
		{"runs in a worker", lwsEnv("web-0.web.prod", "3", "1"), readiness.LWSOptions{Port: 8000}, readiness.EnvWorkerIndex, "serve group readiness in the leader only"},
		{"worker name too long", lwsEnv(strings.Repeat("a", 62)+".web.prod", "10", "0"), readiness.LWSOptions{Port: 8000}, readiness.EnvLeaderAddress, "longer than 63"},
		{"no port", valid, readiness.LWSOptions{}, "", "readiness.LWSOptions.Port"},
		{"bad scheme", valid, readiness.LWSOptions{Port: 8000, Scheme: "grpc"}, "", "readiness.LWSOptions.Scheme"},
		{"relative path", valid, readiness.LWSOptions{Port: 8000, Path: "health"}, "", "readiness.LWSOptions.Path"},
		{"nothing left to check", lwsEnv("web-0.web.prod", "1", "0"), readiness.LWSOptions{Port: 8000, ExcludeLeader: true}, "", "readiness.LWSOptions.ExcludeLeader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readiness.MembersFromLWSEnv(env(tt.vars), tt.opts)
			if tt.wantEnvVar == "" {
				var config *udrain.ConfigError
				if !errors.As(err, &config) || !strings.Contains(err.Error(), tt.wantProblem) {
					t.Fatalf("error %v, want a *ConfigError about %q", err, tt.wantProblem)
				}
				return
			}
			var envErr *readiness.EnvError
			if !errors.As(err, &envErr) {
				t.Fatalf("error %v, want an *EnvError", err)
			}
			if envErr.Name != tt.wantEnvVar || !strings.Contains(envErr.Problem, tt.wantProblem) {
				t.Errorf("error about %s: %q, want about %s: %q", envErr.Name, envErr.Problem, tt.wantEnvVar, tt.wantProblem)
			}
		})
	}
}
