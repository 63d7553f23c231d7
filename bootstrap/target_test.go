package bootstrap

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{raw: "http://gpustack-server:http/", wantErr: "is not a valid URL"},
		{raw: "http://gpustack-server:0/", wantErr: `has port "0": use a number from 1 to 65535`},
		{raw: "http://gpustack-server:99999/", wantErr: `has port "99999"`},
		{raw: "http://gpustack-server:/", wantErr: "has an empty port"},
		{raw: "tcp://gpustack-server", wantErr: "has no port: tcp targets need one, e.g. tcp://gpustack-server:80"},
		{raw: "tcp://u:p@gpustack-server:80", wantErr: "tcp targets cannot carry credentials"},
		{raw: "tcp://gpustack-server:80/healthz", wantErr: "use http:// to check a path"},
		{raw: "http://admin:hunter22@gpustack-server:bad/", wantErr: "is not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := parseTarget(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidInput) {
					t.Fatalf("err = %v, want ErrInvalidInput containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter22") {
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

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://gpustack-server/healthz", "http://gpustack-server/healthz"},
		{"http://admin:hunter22@gpustack-server/healthz", "http://xxxxx@gpustack-server/healthz"},
		// A bare user name can be a token.
		{"https://ghp_0123456789abcdef@gpustack-server/", "https://xxxxx@gpustack-server/"},
		{"http://s/healthz?verbose&exclude=etcd", "http://s/healthz?verbose&exclude=etcd"},
		{"http://s/?token=abc&b=1", "http://s/?token=xxxxx&b=1"},
		{"http://s/?Access_Token=abc&API_KEY=k&sig=s&X-Amz-Credential=c", "http://s/?Access_Token=xxxxx&API_KEY=xxxxx&sig=xxxxx&X-Amz-Credential=xxxxx"},
		{"http://s/?registration=eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo", "http://s/?registration=xxxxx"},
		{"http://s/?name=gpustack-worker-gpu-node-07", "http://s/?name=gpustack-worker-gpu-node-07"},
		{"http://s/?id=0123456789abcdef0123456789abcdef", "http://s/?id=xxxxx"},
		{"http://s/?id=0123456789abcdef", "http://s/?id=0123456789abcdef"},
		{"http://s/?token=", "http://s/?token="},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := url.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := redactURL(u); got != tt.want {
				t.Errorf("redactURL = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSecretsScrub(t *testing.T) {
	u, err := url.Parse("http://admin:hunter22@s/?token=tok%2Fen-123&verbose")
	if err != nil {
		t.Fatal(err)
	}
	s := newSecrets(u, []string{"Bearer sa-token-value", "abc"})
	tests := []struct{ in, want string }{
		{"auth admin:hunter22 failed", "auth xxxxx failed"},
		{"escaped tok%2Fen-123 and raw tok/en-123", "escaped xxxxx and raw xxxxx"},
		{"header Bearer sa-token-value", "header xxxxx"},
		{"token sa-token-value alone", "token xxxxx alone"},
		// Too short to scrub everywhere without garbling the message.
		{"abc and verbose stay", "abc and verbose stay"},
	}
	for _, tt := range tests {
		if got := s.scrub(tt.in); got != tt.want {
			t.Errorf("scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
