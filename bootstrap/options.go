package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/redact"
)

const (
	// DefaultAttemptTimeout bounds one attempt (DNS lookup, connect, TLS
	// handshake, request and body) when Options.AttemptTimeout is zero.
	DefaultAttemptTimeout = 5 * time.Second
	// DefaultLogEvery is how often, in attempts, a still-failing wait logs a
	// progress line when Options.LogEvery is zero.
	DefaultLogEvery = 10
	// maxBodyBytes is how much of a response body is read (and given to
	// Options.CheckBody); the rest is discarded.
	maxBodyBytes = 64 << 10
)

// DefaultBackoff returns the backoff used when Options.Backoff is the zero
// value: 250ms, doubling to a cap of 2s, each delay stretched by up to 20% at
// random so that many workers started together spread out. Attempts are
// then at most 2.4s apart, so a recovered server is noticed within 2.4s (a
// fixed "sleep 5" loop takes up to 5s), at the cost of about one attempt
// every 2s while the server is down. Measured side by side after a 30s
// outage (hack/bench/bootstrap-outage), it noticed recovery about 1.9 to 2.5
// times sooner than the loop and sent about 2.5 times as many requests. Raise
// Cap to send fewer.
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{
		Duration: 250 * time.Millisecond,
		Factor:   2,
		Jitter:   0.2,
		Cap:      2 * time.Second,
	}
}

// Options configures WaitForServer. The zero value waits for a 2xx (HTTP) or
// a connect (TCP) with DefaultBackoff and DefaultAttemptTimeout, until the
// context ends.
type Options struct {
	// Timeout bounds the whole wait, on top of any deadline of the context.
	// Zero means no bound beyond the context. Attempts go on until the
	// deadline: when the backoff's delay would pass it, a last attempt
	// starts the first delay (Backoff.Duration, or AttemptTimeout if
	// shorter) before it, and WaitForServer returns once that one fails,
	// at most that long before the deadline.
	Timeout time.Duration
	// AttemptTimeout bounds one attempt. Zero means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// MaxAttempts bounds the number of attempts. Zero means no bound.
	MaxAttempts int
	// Backoff spaces the attempts: wait.Backoff.Step gives the delay after
	// each failure. The zero value means DefaultBackoff. Steps, if positive,
	// bounds how many times the delay grows (as in wait.Backoff); zero means
	// it grows until Cap, which is then required when Factor > 1. Steps does
	// not bound the attempts: use MaxAttempts. With Jitter, a delay at the cap
	// may exceed Cap by up to Jitter*Cap.
	Backoff wait.Backoff

	// StatusCodes are the HTTP status codes that count as ready. Empty means
	// any 2xx. Redirects are not followed: list a 3xx here to accept it.
	StatusCodes []int
	// CheckBody, if set, is called with the first 64 KiB of the body of a
	// response whose status was accepted; an error fails the attempt with
	// ClassUnexpectedBody. See BodyContains.
	CheckBody func(body []byte) error
	// Header is added to every HTTP request. Values are never logged.
	Header http.Header
	// HeaderFiles maps a header name to a file holding its value (surrounding
	// whitespace trimmed), e.g. "Authorization" to a file containing
	// "Bearer <token>". Files are read once, when WaitForServer starts.
	// Values are never logged and are scrubbed from error messages.
	HeaderFiles map[string]string
	// BearerTokenFile, if set, names a file holding a bearer token (for
	// example a projected service account token); requests carry
	// "Authorization: Bearer <token>". Read once, never logged.
	BearerTokenFile string

	// CAFile is a PEM bundle of the CAs that may sign the server certificate
	// (https targets). Empty means the system roots.
	CAFile string
	// ServerName is the name the server certificate must be valid for
	// (https targets). Empty means the target's host.
	ServerName string
	// ClientCertFile and ClientKeyFile are a PEM client certificate and key
	// for servers that require one (https targets). Set both or neither.
	ClientCertFile string
	ClientKeyFile  string

	// LogEvery is how often, in attempts, a still-failing wait logs a
	// progress line, besides the lines on the first failure and on every
	// change of failure. Zero means DefaultLogEvery; negative means never.
	LogEvery int
	// OnAttempt, if set, is called after every attempt, successful or not,
	// from the goroutine running WaitForServer. It must not block for long:
	// the next attempt waits for it.
	OnAttempt func(Attempt)
	// Clock drives the elapsed time, the overall Timeout and the delays
	// between attempts; nil means the real clock. The timeouts of the
	// network calls themselves are real time.
	Clock clock.Clock

	// Test hook: dial replaces the dialer of TCP targets and of the HTTP
	// transport.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// BodyContains returns a CheckBody function that accepts a body containing
// s, e.g. BodyContains("ok") for a healthz endpoint.
func BodyContains(s string) func(body []byte) error {
	return func(body []byte) error {
		if strings.Contains(string(body), s) {
			return nil
		}
		const show = 80
		got := string(body)
		if len(got) > show {
			got = got[:show] + "..."
		}
		return fmt.Errorf("body does not contain %q (got %q)", s, got)
	}
}

// ParseHeaderFiles parses headers for Options.HeaderFiles, each
// "NAME=PATH" (a command line, an init container's arguments). Its errors
// are *udrain.ConfigError about Options.HeaderFiles; nil specs give nil.
func ParseHeaderFiles(specs []string) (map[string]string, error) {
	var files map[string]string
	for _, spec := range specs {
		name, path, ok := strings.Cut(spec, "=")
		if !ok || name == "" || path == "" {
			return nil, &udrain.ConfigError{Field: "bootstrap.Options.HeaderFiles", Problem: fmt.Sprintf("%q: want NAME=PATH, e.g. Authorization=/etc/token/header", spec)}
		}
		if files == nil {
			files = map[string]string{}
		}
		files[name] = path
	}
	return files, nil
}

// settings are the validated Options with defaults applied.
type settings struct {
	timeout        time.Duration
	attemptTimeout time.Duration
	maxAttempts    int
	backoff        wait.Backoff
	statusCodes    map[int]bool
	wantStatus     string
	checkBody      func([]byte) error
	header         http.Header
	tlsConfig      *tls.Config
	logEvery       int
	onAttempt      func(Attempt)
	clock          clock.Clock
	dial           func(ctx context.Context, network, address string) (net.Conn, error)
	secrets        *redact.Secrets
}

// settings validates o against t and applies the defaults. Files are read
// here, so a missing file is reported before the first attempt.
func (o Options) settings(t *target) (*settings, error) {
	s := &settings{
		timeout:        o.Timeout,
		attemptTimeout: o.AttemptTimeout,
		maxAttempts:    o.MaxAttempts,
		checkBody:      o.CheckBody,
		logEvery:       o.LogEvery,
		onAttempt:      o.OnAttempt,
		clock:          o.Clock,
		dial:           o.dial,
	}
	switch {
	case o.Timeout < 0:
		return nil, optionErrorf("Timeout", "%v is negative: use 0 for no bound", o.Timeout)
	case o.AttemptTimeout < 0:
		return nil, optionErrorf("AttemptTimeout", "%v is negative: use 0 for the default (%v)", o.AttemptTimeout, DefaultAttemptTimeout)
	case o.MaxAttempts < 0:
		return nil, optionErrorf("MaxAttempts", "%d is negative: use 0 for no bound", o.MaxAttempts)
	}
	if s.attemptTimeout == 0 {
		s.attemptTimeout = DefaultAttemptTimeout
	}
	if s.logEvery == 0 {
		s.logEvery = DefaultLogEvery
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.dial == nil {
		s.dial = (&net.Dialer{}).DialContext
	}
	b, err := normalizeBackoff(o.Backoff)
	if err != nil {
		return nil, err
	}
	s.backoff = b

	if err := o.checkScheme(t); err != nil {
		return nil, err
	}
	if err := s.setStatusCodes(o.StatusCodes); err != nil {
		return nil, err
	}

	header, secretValues, err := o.buildHeader()
	if err != nil {
		return nil, err
	}
	s.header = header
	s.secrets = &redact.Secrets{}
	s.secrets.AddURL(t.raw)
	s.secrets.Add(secretValues...)

	if t.isHTTPS() {
		if s.tlsConfig, err = o.buildTLSConfig(t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// checkScheme refuses options the target's scheme does not use: HTTP
// options for a tcp:// target, TLS options for a target that is not
// https://.
func (o Options) checkScheme(t *target) error {
	httpOnly := func(field string) error {
		return optionErrorf(field, "is set but target %s is not http:// or https://: drop it or use an http(s) target", t.redacted)
	}
	httpsOnly := func(field string) error {
		return optionErrorf(field, "is set but target %s is not https://: drop it or use an https:// target", t.redacted)
	}
	if t.isTCP() {
		switch {
		case len(o.StatusCodes) > 0:
			return httpOnly("StatusCodes")
		case o.CheckBody != nil:
			return httpOnly("CheckBody")
		case len(o.Header) > 0:
			return httpOnly("Header")
		case len(o.HeaderFiles) > 0:
			return httpOnly("HeaderFiles")
		case o.BearerTokenFile != "":
			return httpOnly("BearerTokenFile")
		}
	}
	if !t.isHTTPS() {
		switch {
		case o.CAFile != "":
			return httpsOnly("CAFile")
		case o.ServerName != "":
			return httpsOnly("ServerName")
		case o.ClientCertFile != "" || o.ClientKeyFile != "":
			return httpsOnly("ClientCertFile")
		}
	}
	return nil
}

// setStatusCodes sets the status codes that mean ready (any 2xx when
// none are given).
func (s *settings) setStatusCodes(codes []int) error {
	if len(codes) == 0 {
		s.wantStatus = "2xx"
		return nil
	}
	s.statusCodes = make(map[int]bool, len(codes))
	var want []string
	for _, c := range codes {
		if c < 100 || c > 599 {
			return optionErrorf("StatusCodes", "holds %d: HTTP status codes are 100 to 599", c)
		}
		if !s.statusCodes[c] {
			want = append(want, fmt.Sprint(c))
		}
		s.statusCodes[c] = true
	}
	sort.Strings(want)
	s.wantStatus = strings.Join(want, ", ")
	return nil
}

// normalizeBackoff applies the default and checks the fields, see
// Options.Backoff.
func normalizeBackoff(b wait.Backoff) (wait.Backoff, error) {
	if b == (wait.Backoff{}) {
		b = DefaultBackoff()
	}
	switch {
	case b.Duration <= 0:
		return b, optionErrorf("Backoff", "Duration %v must be positive, e.g. 250ms (or leave Backoff zero for the default)", b.Duration)
	case b.Factor < 0 || (b.Factor > 0 && b.Factor < 1):
		return b, optionErrorf("Backoff", "Factor %v must be 0 (constant delay) or at least 1", b.Factor)
	case b.Jitter < 0:
		return b, optionErrorf("Backoff", "Jitter %v is negative: use 0 for none or e.g. 0.2", b.Jitter)
	case b.Cap < 0:
		return b, optionErrorf("Backoff", "Cap %v is negative", b.Cap)
	case b.Steps < 0:
		return b, optionErrorf("Backoff", "Steps %d is negative: use 0 to grow until Cap", b.Steps)
	}
	if b.Steps == 0 && b.Factor > 1 {
		if b.Cap == 0 {
			return b, optionErrorf("Backoff", "Cap must be set when Factor > 1, or the delay grows without bound: e.g. Cap: 5*time.Second")
		}
		// wait.Backoff only grows the delay while Steps > 0.
		b.Steps = math.MaxInt32
	}
	return b, nil
}

// buildHeader merges Header, HeaderFiles and BearerTokenFile. It returns the
// values to scrub from messages: every value read from a file, and the values
// of headers whose names look like credentials.
func (o Options) buildHeader() (http.Header, []string, error) {
	h := make(http.Header)
	var secretValues []string
	for name, values := range o.Header {
		for _, v := range values {
			if err := checkHeader("Header", name, v); err != nil {
				return nil, nil, err
			}
			h.Add(name, v)
			if redact.IsSecretKey(name) {
				secretValues = append(secretValues, v)
			}
		}
	}
	names := make([]string, 0, len(o.HeaderFiles))
	for name := range o.HeaderFiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v, err := readValueFile("HeaderFiles", "header "+name+": ", o.HeaderFiles[name])
		if err != nil {
			return nil, nil, err
		}
		if err := checkHeader("HeaderFiles", name, "(from file)"); err != nil {
			return nil, nil, err
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, nil, optionErrorf("HeaderFiles", "header %s: file %s holds more than one line: a header value must be one line", name, o.HeaderFiles[name])
		}
		h.Set(name, v)
		secretValues = append(secretValues, v)
	}
	if o.BearerTokenFile != "" {
		tok, err := readValueFile("BearerTokenFile", "", o.BearerTokenFile)
		if err != nil {
			return nil, nil, err
		}
		if strings.ContainsAny(tok, " \r\n\x00") {
			return nil, nil, optionErrorf("BearerTokenFile", "%s does not hold a single token (it has spaces or several lines)", o.BearerTokenFile)
		}
		h.Set("Authorization", "Bearer "+tok)
		secretValues = append(secretValues, tok)
	}
	return h, secretValues, nil
}

func readValueFile(field, label, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", optionErrorf(field, "%scannot read %s: %v", label, path, err)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", optionErrorf(field, "%sfile %s is empty", label, path)
	}
	return v, nil
}

func checkHeader(field, name, value string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n:") {
		return optionErrorf(field, "header name %q is not valid: use a token like Authorization or X-Api-Key", name)
	}
	// The value is not quoted here: it may be a credential.
	if strings.ContainsAny(value, "\r\n\x00") {
		return optionErrorf(field, "header %s has a value with a line break: a header value must be one line", textproto.CanonicalMIMEHeaderKey(name))
	}
	return nil
}

func (o Options) buildTLSConfig(t *target) (*tls.Config, error) {
	c := &tls.Config{ServerName: o.ServerName, MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, optionErrorf("CAFile", "cannot read %s: %v", o.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, optionErrorf("CAFile", "%s holds no PEM certificate: give a PEM bundle (-----BEGIN CERTIFICATE-----)", o.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case o.ClientCertFile != "" && o.ClientKeyFile != "":
		cert, err := tls.LoadX509KeyPair(o.ClientCertFile, o.ClientKeyFile)
		if err != nil {
			return nil, optionErrorf("ClientCertFile", "cannot load the client certificate %s with key %s: %v", o.ClientCertFile, o.ClientKeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	case o.ClientCertFile != "" || o.ClientKeyFile != "":
		return nil, &udrain.ConfigError{Field: "bootstrap.Options.ClientCertFile", Problem: fmt.Sprintf("set it and the client key for %s, or neither", t.redacted), See: []string{"bootstrap.Options.ClientKeyFile"}}
	}
	return c, nil
}
