package readiness_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/readiness"
)

// TestMembersOptions: the members come from NAME=URL or from
// LeaderWorkerSet's variables, one or the other; TLS settings need an
// https member.
func TestMembersOptions(t *testing.T) {
	group := env(lwsEnv("web-0.web.prod", "3", "0"))
	specs := []string{"w-1=http://w1.g.ns:8000/health", "w-2=tcp://w2.g.ns:8000"}
	for name, tc := range map[string]struct {
		opts      readiness.MembersOptions
		wantNames []string
		wantErr   *udrain.ConfigError
		wantEnv   string // the name of an *EnvError's variable
	}{
		"specs": {opts: readiness.MembersOptions{Specs: specs}, wantNames: []string{"w-1", "w-2"}},
		"LeaderWorkerSet": {opts: readiness.MembersOptions{LWS: &readiness.LWSOptions{Port: 8000}, LookupEnv: group},
			wantNames: []string{"web-0", "web-0-1", "web-0-2"}},
		"https specs with TLS": {opts: readiness.MembersOptions{Specs: []string{"w-1=HTTPS://w1.g.ns:8443/"}, TLS: readiness.TLSOptions{ServerName: "g.ns"}},
			wantNames: []string{"w-1"}},
		"https LeaderWorkerSet with TLS": {opts: readiness.MembersOptions{LWS: &readiness.LWSOptions{Port: 8443, Scheme: "https"}, LookupEnv: group, TLS: readiness.TLSOptions{ServerName: "g.ns"}},
			wantNames: []string{"web-0", "web-0-1", "web-0-2"}},
		"none": {opts: readiness.MembersOptions{},
			wantErr: &udrain.ConfigError{Field: "readiness.MembersOptions.Specs", See: []string{"readiness.MembersOptions.LWS"}}},
		"both": {opts: readiness.MembersOptions{Specs: specs, LWS: &readiness.LWSOptions{Port: 8000}, LookupEnv: group},
			wantErr: &udrain.ConfigError{Field: "readiness.MembersOptions.Specs", See: []string{"readiness.MembersOptions.LWS"}}},
		"TLS without an https spec": {opts: readiness.MembersOptions{Specs: specs, TLS: readiness.TLSOptions{CAFile: "ca.crt"}},
			wantErr: &udrain.ConfigError{Field: "readiness.TLSOptions.CAFile"}},
		"TLS without https from LeaderWorkerSet": {opts: readiness.MembersOptions{LWS: &readiness.LWSOptions{Port: 8000}, LookupEnv: group, TLS: readiness.TLSOptions{ClientKeyFile: "c.key"}},
			wantErr: &udrain.ConfigError{Field: "readiness.TLSOptions.ClientKeyFile"}},
		"a server name without https": {opts: readiness.MembersOptions{Specs: specs, TLS: readiness.TLSOptions{ServerName: "g.ns", ClientKeyFile: "c.key"}},
			wantErr: &udrain.ConfigError{Field: "readiness.TLSOptions.ServerName"}},
		"a client certificate without https": {opts: readiness.MembersOptions{Specs: specs, TLS: readiness.TLSOptions{ClientCertFile: "c.crt", ClientKeyFile: "c.key"}},
			wantErr: &udrain.ConfigError{Field: "readiness.TLSOptions.ClientCertFile"}},
		"TLS that cannot load": {opts: readiness.MembersOptions{Specs: []string{"w-1=https://w1.g.ns:8443/"}, TLS: readiness.TLSOptions{CAFile: "/nonexistent/ca.crt"}},
			wantErr: &udrain.ConfigError{Field: "readiness.TLSOptions.CAFile"}},
		"a bad spec": {opts: readiness.MembersOptions{Specs: []string{"w-1=ftp://h/"}},
			wantErr: &udrain.ConfigError{Field: "readiness.ParseMember(spec)"}},
		"a bad LeaderWorkerSet option": {opts: readiness.MembersOptions{LWS: &readiness.LWSOptions{}, LookupEnv: group},
			wantErr: &udrain.ConfigError{Field: "readiness.LWSOptions.Port"}},
		"not in a LeaderWorkerSet": {opts: readiness.MembersOptions{LWS: &readiness.LWSOptions{Port: 8000}, LookupEnv: env(nil)},
			wantEnv: readiness.EnvLeaderAddress},
	} {
		t.Run(name, func(t *testing.T) {
			members, err := tc.opts.Members()
			var env *readiness.EnvError
			if tc.wantEnv != "" {
				if !errors.As(err, &env) || env.Name != tc.wantEnv {
					t.Errorf("Members: %v, want an EnvError about %s", err, tc.wantEnv)
				}
				return
			}
			var got *udrain.ConfigError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Members: %v (%T), want nil or a ConfigError", err, err)
			}
			if diff := cmp.Diff(tc.wantErr, got, cmpopts.IgnoreFields(udrain.ConfigError{}, "Problem")); diff != "" {
				t.Errorf("Members' error (-want +got):\n%s", diff)
			}
			var names []string
			for _, m := range members {
				names = append(names, m.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("member names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMembersOptionsTLS: the https members get the TLS settings: a member
// whose certificate a private CA signs is healthy with the CA, and fails
// the TLS handshake without.
func TestMembersOptionsTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	caFile := testkit.ServerCAFile(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for name, tc := range map[string]struct {
		tls  readiness.TLSOptions
		want readiness.Reason
	}{
		"with the CA":    {readiness.TLSOptions{CAFile: caFile}, ""},
		"without the CA": {readiness.TLSOptions{}, readiness.ReasonTLS},
	} {
		t.Run(name, func(t *testing.T) {
			members, err := readiness.MembersOptions{Specs: []string{"w-1=" + srv.URL + "/health"}, TLS: tc.tls}.Members()
			if err != nil {
				t.Fatal(err)
			}
			if got := readiness.ReasonOf(members[0].Check(ctx)); got != tc.want {
				t.Errorf("reason %q, want %q", got, tc.want)
			}
		})
	}
}

func TestServeOptionsMemory(t *testing.T) {
	for _, tc := range []struct {
		opts    readiness.ServeOptions
		members int
		want    int64
	}{
		{readiness.ServeOptions{}, 0, 2*readiness.ServeOptions{}.ConnectionMemory() + 8<<20},
		{readiness.ServeOptions{}, 256, 256*readiness.MemberCheckMemory + 2*readiness.ServeOptions{}.ConnectionMemory() + 8<<20},
		{readiness.ServeOptions{MaxConnections: 2, MaxHeaderBytes: 1024}, 4, 4*96<<10 + 2*2*(1024+32<<10) + 8<<20},
	} {
		if diff := cmp.Diff(tc.want, tc.opts.Memory(tc.members)); diff != "" {
			t.Errorf("%+v.Memory(%d) (-want +got):\n%s", tc.opts, tc.members, diff)
		}
	}
}

// TestMembersOptionsNilLookupEnv: a nil LookupEnv reads the process's
// own environment, as a sidecar in the leader pod has it, both through
// MembersOptions and MembersFromLWSEnv.
func TestMembersOptionsNilLookupEnv(t *testing.T) {
	for k, v := range lwsEnv("web-0.web.prod", "2", "0") {
		t.Setenv(k, v)
	}
	want := []string{"web-0", "web-0-1"}
	members, err := readiness.MembersOptions{LWS: &readiness.LWSOptions{Port: 8000}}.Members()
	if err != nil {
		t.Fatal(err)
	}
	direct, err := readiness.MembersFromLWSEnv(nil, readiness.LWSOptions{Port: 8000})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range [][]readiness.Member{members, direct} {
		var names []string
		for _, m := range got {
			names = append(names, m.Name)
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("members from the environment (-want +got):\n%s", diff)
		}
	}
}
