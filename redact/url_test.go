package redact_test

import (
	"strings"
	"testing"

	"github.com/udrain/udrain/redact"
)

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
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
		{"http://s/?eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiIxMjM0NTY3ODkwIn0", "http://s/?xxxxx"},
		// What the issue found in clear.
		{"http://s/?pw=hunter22", "http://s/?pw=xxxxx"},
		{"http://s/?PassPhrase=correct-horse", "http://s/?PassPhrase=xxxxx"},
		{"http://s/cb#access_token=abc&token_type=bearer", "http://s/cb#xxxxx"},
		{"http://user:pa/ss@s/healthz", "http://xxxxx@s/healthz"},
		{"http://user:pa#ss@s/healthz", "http://xxxxx"},
		{"http://user:pa?ss@s/healthz", "http://xxxxx"},
		{"http://user:p@ss@s/healthz", "http://xxxxx@s/healthz"},
		// Escaped names and ';' as a separator.
		{"http://s/?pass%77ord=x&a=1", "http://s/?pass%77ord=xxxxx&a=1"},
		{"http://s/?%70w=x", "http://s/?%70w=xxxxx"},
		{"http://s/?a=1;token=x", "http://s/?a=1;token=xxxxx"},
		// An empty fragment has nothing to hide.
		{"http://s/#", "http://s/#"},
		// Not valid URLs, and no URL at all.
		{"admin:hunter22@gpustack-server:80", "xxxxx@gpustack-server:80"},
		{"http://admin:hunter22@gpustack-server:bad/", "http://xxxxx@gpustack-server:bad/"},
		{"http://s/\x00?token=t", "http://s/\x00?token=xxxxx"},
		{"ud-1", "ud-1"},
		{"", ""},
		// An '@' after a '?': it may sit in a query value; hide it all.
		{"http://s/?email=a@example.com", "http://xxxxx"},
	} {
		if got := redact.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsSecretKey(t *testing.T) {
	for _, key := range []string{"password", "passwd", "passphrase", "pw", "pwd", "PW", "secret", "client_secret", "token", "access_token",
		"key", "api_key", "apikey", "auth", "Authorization", "sig", "X-Amz-Signature", "X-Amz-Credential", "session", "sessionid",
		"jwt", "bearer", "code", "otp", "private", "cookie", "ticket"} {
		if !redact.IsSecretKey(key) {
			t.Errorf("IsSecretKey(%q) = false, want true", key)
		}
	}
	for _, key := range []string{"", "verbose", "exclude", "name", "id", "page", "limit", "watch"} {
		if redact.IsSecretKey(key) {
			t.Errorf("IsSecretKey(%q) = true, want false", key)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		raw      string
		wantHost string // "" means an error
		wantErr  string
	}{
		{raw: "http://gpustack-server:80/healthz", wantHost: "gpustack-server:80"},
		{raw: "http://admin:hunter22@gpustack-server/", wantHost: "gpustack-server"},
		{raw: "http://s/cb?email=a%40b.example", wantHost: "s"},
		// url.Parse fails and quotes a piece of the password.
		{raw: "http://admin:hunter/22@gpustack-server/", wantErr: `parse "http://xxxxx@gpustack-server/": the user info is not escaped`},
		// url.Parse succeeds and reads a secret as the host and port: the
		// password's start as port 99999, a token as a tcp host.
		{raw: "http://u:99999/pw@gpustack-server/", wantErr: `parse "http://xxxxx@gpustack-server/": the user info is not escaped`},
		{raw: "tcp://t0kenSecret/x@redis:6379", wantErr: `parse "tcp://xxxxx@redis:6379": the user info is not escaped`},
		{raw: "https://t0kenSecret#pw@gpustack-server/", wantErr: `parse "https://xxxxx": the user info is not escaped`},
		// So does an '@' in a path, query or fragment (which [URL] cannot
		// tell from user info), which must be written %40.
		{raw: "http://s/users/@me", wantErr: "an '@' in a path, query or fragment as %40"},
		{raw: "http://s/cb?email=a@b.example", wantErr: "an '@' in a path, query or fragment as %40"},
		{raw: "http://s/cb#a@b", wantErr: "an '@' in a path, query or fragment as %40"},
		{raw: "http://s/users/%40me", wantHost: "s"},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := redact.Parse(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) = %v, %v; want an error containing %q", tt.raw, u, err, tt.wantErr)
				}
				for _, secret := range []string{"99999", "pw", "t0kenSecret", "hunter"} {
					if strings.Contains(tt.raw, secret) && strings.Contains(err.Error(), secret) {
						t.Errorf("error %q quotes %q", err, secret)
					}
				}
				return
			}
			if err != nil || u.Host != tt.wantHost {
				t.Fatalf("Parse(%q) = host %v, err %v; want host %q", tt.raw, u, err, tt.wantHost)
			}
		})
	}
}
