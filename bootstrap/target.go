package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/redact"
)

// targetField is the Field of a *udrain.ConfigError about the target.
const targetField = "bootstrap.WaitForServer(target)"

// target is a parsed, validated WaitForServer target.
type target struct {
	raw      string   // the URL as given; never printed
	u        *url.URL // raw parsed, with credentials; never printed
	address  string   // host:port to dial (tcp targets)
	redacted string   // safe to log: redact.URL of the target as given
}

func (t *target) isTCP() bool   { return t.u.Scheme == "tcp" }
func (t *target) isHTTPS() bool { return t.u.Scheme == "https" }

// targetErrorf returns a *udrain.ConfigError about the target. Its
// arguments must not hold the target unless redacted.
func targetErrorf(format string, args ...any) error {
	return &udrain.ConfigError{Field: targetField, Problem: fmt.Sprintf(format, args...)}
}

// parseTarget validates raw and returns the target. Errors are
// *udrain.ConfigError, say what to write instead and never echo credentials
// (see package redact).
func parseTarget(raw string) (*target, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, targetErrorf("no target given: pass the server's URL, e.g. http://gpustack-server.default.svc:80/healthz or tcp://gpustack-server.default.svc:80")
	}
	redacted := redact.URL(raw)
	if !strings.Contains(raw, "://") {
		return nil, targetErrorf("%q has no scheme: write http://%s, https://%s or tcp://%s", redacted, redacted, redacted, redacted)
	}
	u, err := redact.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, targetErrorf("%q: %v", redacted, err)
	}
	// The scheme is the start of raw; lower-case it in what is shown too.
	raw = strings.ToLower(u.Scheme) + raw[len(u.Scheme):]
	u.Scheme = strings.ToLower(u.Scheme)
	t := &target{raw: raw, u: u, redacted: redact.URL(raw)}
	switch u.Scheme {
	case "http", "https", "tcp":
	default:
		return nil, targetErrorf("%s has scheme %q: use http://, https:// or tcp://", t.redacted, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, targetErrorf("%s has no host: write e.g. %s://gpustack-server.default.svc:80", t.redacted, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, targetErrorf("%s has port %q: use a number from 1 to 65535", t.redacted, p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, targetErrorf("%s has an empty port: drop the colon or add the port", t.redacted)
	}
	if t.isTCP() {
		switch {
		case u.Port() == "":
			return nil, targetErrorf("%s has no port: tcp targets need one, e.g. tcp://%s:80", t.redacted, u.Hostname())
		case u.User != nil:
			return nil, targetErrorf("%s has user info: tcp targets cannot carry credentials", t.redacted)
		case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
			return nil, targetErrorf("%s has a path or query: tcp targets are host:port only; use http:// to check a path", t.redacted)
		}
		t.address = net.JoinHostPort(u.Hostname(), u.Port())
	}
	return t, nil
}
