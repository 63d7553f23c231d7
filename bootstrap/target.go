package bootstrap

import (
	"errors"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// redactedText replaces every secret in logs and errors, as in
// net/url.URL.Redacted.
const redactedText = "xxxxx"

// target is a parsed, validated WaitForServer target.
type target struct {
	u        *url.URL // the URL as given, with credentials; never printed
	address  string   // host:port to dial (tcp targets)
	redacted string   // safe to log
}

func (t *target) isTCP() bool   { return t.u.Scheme == "tcp" }
func (t *target) isHTTPS() bool { return t.u.Scheme == "https" }

// parseTarget validates raw and returns the target. Errors wrap
// ErrInvalidInput, say what to write instead and never echo credentials.
func parseTarget(raw string) (*target, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, inputErrorf("no target given: pass the server's URL, e.g. http://gpustack-server.default.svc:80/healthz or tcp://gpustack-server.default.svc:80")
	}
	if !strings.Contains(raw, "://") {
		return nil, inputErrorf("target %q has no scheme: write http://%s, https://%s or tcp://%s", redactLoose(raw), redactLoose(raw), redactLoose(raw), redactLoose(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse errors quote the whole input, credentials included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, inputErrorf("target %q is not a valid URL: %v", redactLoose(raw), err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	t := &target{u: u, redacted: redactURL(u)}
	switch u.Scheme {
	case "http", "https", "tcp":
	default:
		return nil, inputErrorf("target %s has scheme %q: use http://, https:// or tcp://", t.redacted, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, inputErrorf("target %s has no host: write e.g. %s://gpustack-server.default.svc:80", t.redacted, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, inputErrorf("target %s has port %q: use a number from 1 to 65535", t.redacted, p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, inputErrorf("target %s has an empty port: drop the colon or add the port", t.redacted)
	}
	if t.isTCP() {
		switch {
		case u.Port() == "":
			return nil, inputErrorf("target %s has no port: tcp targets need one, e.g. tcp://%s:80", t.redacted, u.Hostname())
		case u.User != nil:
			return nil, inputErrorf("target %s has user info: tcp targets cannot carry credentials", t.redacted)
		case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
			return nil, inputErrorf("target %s has a path or query: tcp targets are host:port only; use http:// to check a path", t.redacted)
		}
		t.address = net.JoinHostPort(u.Hostname(), u.Port())
	}
	return t, nil
}

// sensitiveQueryKeys are substrings of query parameter names whose values
// are treated as credentials.
var sensitiveQueryKeys = [...]string{
	"token", "secret", "password", "passwd", "pwd", "key", "auth",
	"sig", "credential", "session", "jwt", "bearer", "code",
}

// isSensitiveQuery reports whether a query value should be hidden: its key
// looks like a credential's name, or the value looks like a token.
func isSensitiveQuery(key, value string) bool {
	if value == "" {
		return false
	}
	k := strings.ToLower(key)
	for _, s := range sensitiveQueryKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return looksLikeToken(value)
}

// looksLikeToken reports a value of at least 20 characters from a token
// alphabet (base64, base64url, JWT) that mixes upper case, lower case and
// digits, or a hex string of at least 32 digits. Names such as
// "gpustack-worker-gpu-node-07" do not qualify.
func looksLikeToken(v string) bool {
	if len(v) < 20 {
		return false
	}
	var upper, lower, digit, nonHex bool
	for _, r := range v {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
			nonHex = nonHex || r > 'F'
		case r >= 'a' && r <= 'z':
			lower = true
			nonHex = nonHex || r > 'f'
		case r >= '0' && r <= '9':
			digit = true
		case strings.ContainsRune("-_.~+/=%", r):
			nonHex = true
		default:
			return false
		}
	}
	return (upper && lower && digit) || (!nonHex && len(v) >= 32)
}

// redactURL renders u without user info (the whole of it: a user name can be
// a token) and with sensitive query values replaced. Query order is kept.
func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(redactedText)
	}
	if c.RawQuery != "" {
		c.RawQuery = redactQuery(c.RawQuery)
	}
	return c.String()
}

func redactQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			val = v
		}
		if isSensitiveQuery(key, val) {
			parts[i] = k + "=" + redactedText
		}
	}
	return strings.Join(parts, "&")
}

// redactLoose hides credentials in a string that did not parse as a URL:
// everything between "://" and the last "@" of the authority, and the whole
// query.
func redactLoose(raw string) string {
	rest, scheme := raw, ""
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = redactedText + authority[i:]
	}
	if i := strings.Index(tail, "?"); i >= 0 {
		tail = tail[:i+1] + redactedText
	}
	return scheme + authority + tail
}

// secrets collects strings that must never appear in a log line or an error
// message: the URL's user info and sensitive query values (raw and
// unescaped), and the values of credential headers.
type secrets []string

func newSecrets(u *url.URL, headerValues []string) secrets {
	var s secrets
	add := func(v string) {
		// Very short values would garble messages if replaced everywhere;
		// the structural redaction of the URL already covers them.
		if len(v) >= 4 {
			s = append(s, v)
		}
	}
	if u.User != nil {
		add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		add(u.User.String())
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		key, _ := url.QueryUnescape(k)
		val, err := url.QueryUnescape(v)
		if err != nil {
			val = v
		}
		if isSensitiveQuery(key, val) {
			add(v)
			add(val)
		}
	}
	for _, v := range headerValues {
		add(v)
		// "Bearer abc": the token alone may show up too.
		if _, tok, ok := strings.Cut(v, " "); ok {
			add(strings.TrimSpace(tok))
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return s
}

// scrub replaces every secret in text.
func (s secrets) scrub(text string) string {
	for _, v := range s {
		text = strings.ReplaceAll(text, v, redactedText)
	}
	return text
}

// redactedError is an attempt's error with credentials removed from its
// message. url.Error values in the chain get the redacted URL so that
// errors.As callers cannot find the credentials either.
type redactedError struct {
	err     error
	secrets secrets
}

func (e *redactedError) Error() string { return e.secrets.scrub(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }

func redactError(err error, t *target, s secrets) error {
	if err == nil {
		return nil
	}
	if ue, ok := err.(*url.Error); ok {
		// net/http returns a *url.Error quoting the URL; replace it.
		err = &url.Error{Op: ue.Op, URL: t.redacted, Err: ue.Err}
	}
	return &redactedError{err: err, secrets: s}
}
