package bootstrap

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		raw          string
		wantRedacted string
		wantAddress  string
		wantErr      string // substring; "" means valid
	}{
		{raw: "http://gpustack-server.gpustack.svc:80/healthz", wantRedacted: "http://gpustack-server.gpustack.svc:80/healthz"},
		{raw: "  HTTPS://gpustack-server/readyz?verbose ", wantRedacted: "https://gpustack-server/readyz?verbose"},
		{raw: "tcp://ray-head.ray.svc:6379", wantRedacted: "tcp://ray-head.ray.svc:6379", wantAddress: "ray-head.ray.svc:6379"},
		{raw: "tcp://[::1]:6379/", wantRedacted: "tcp://[::1]:6379/", wantAddress: "[::1]:6379"},
		{raw: "", wantErr: "no target given: pass the server's URL"},
		{raw: "gpustack-server:80", wantErr: `has no scheme: write http://gpustack-server:80, https://gpustack-server:80 or tcp://gpustack-server:80`},
		{raw: "admin:hunter22@gpustack-server:80", wantErr: `"xxxxx@gpustack-server:80" has no scheme`},
		{raw: "ftp://gpustack-server/", wantErr: `has scheme "ftp": use http://, https:// or tcp://`},
		{raw: "http:///healthz", wantErr: "has no host"},
		{raw: "http://gpustack-server:http/", wantErr: `"http://gpustack-server:http/": invalid port`},
		{raw: "http://gpustack-server:0/", wantErr: `has port "0": use a number from 1 to 65535`},
		{raw: "http://gpustack-server:99999/", wantErr: `has port "99999"`},
		{raw: "http://gpustack-server:/", wantErr: "has an empty port"},
		{raw: "tcp://gpustack-server", wantErr: "has no port: tcp targets need one, e.g. tcp://gpustack-server:80"},
		{raw: "tcp://u:p@gpustack-server:80", wantErr: "tcp targets cannot carry credentials"},
		{raw: "tcp://gpustack-server:80/healthz", wantErr: "use http:// to check a path"},
		{raw: "http://admin:hunter22@gpustack-server:bad/", wantErr: `"http://xxxxx@gpustack-server:bad/": invalid port ":bad" after host`},
		// A password with an unescaped '/': net/url reads a port "hunter".
		{raw: "http://admin:hunter/22@gpustack-server/", wantErr: `"http://xxxxx@gpustack-server/": the user info is not escaped`},
		// One that net/url reads without error, taking the password's start
		// for a port and a token for a tcp host: neither is quoted.
		{raw: "http://admin:99999/hunter22@gpustack-server/", wantErr: `"http://xxxxx@gpustack-server/": the user info is not escaped`},
		{raw: "tcp://hunter22/x@redis:6379", wantErr: `"tcp://xxxxx@redis:6379": the user info is not escaped`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := parseTarget(tt.raw)
			if tt.wantErr != "" {
				var ce *udrain.ConfigError
				if !errors.As(err, &ce) || ce.Field != "bootstrap.WaitForServer(target)" || !strings.Contains(ce.Problem, tt.wantErr) {
					t.Fatalf("err = %v, want a *udrain.ConfigError about the target containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "99999") && !strings.Contains(tt.raw, "server:99999") {
					t.Errorf("error %q leaks the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tt.wantRedacted, tt.wantAddress}, []string{got.redacted, got.address}); diff != "" {
				t.Errorf("[redacted address] (-want +got):\n%s", diff)
			}
		})
	}
}
