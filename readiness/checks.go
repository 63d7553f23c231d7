package readiness

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/redact"
)

// DefaultMaxBodyBytes is how much of an unhealthy member's answer
// [HTTPCheck] reads (to show it in the error) unless [WithMaxBodyBytes] says
// otherwise. A healthy answer's body is not read.
const DefaultMaxBodyBytes = 1024

// maxHeaderBytes bounds the response headers of a member.
const maxHeaderBytes = 64 << 10

// HTTPOption changes how [HTTPCheck] checks.
type HTTPOption func(*httpCheck)

// WithHTTPClient makes [HTTPCheck] use client (for a proxy or a transport of
// your own, say). The default client verifies certificates (against the
// system roots, or what [WithTLSConfig] says), ignores proxy environment
// variables, follows no redirects (a 3xx is unhealthy) and opens a fresh
// connection for every check, as the kubelet's probes do, so that a member
// that is gone is seen refusing connections rather than timing out on a
// stale one. A nil client keeps the default.
func WithHTTPClient(client *http.Client) HTTPOption {
	return func(c *httpCheck) {
		if client != nil {
			c.client = client
		}
	}
}

// WithTLSConfig makes the default client of [HTTPCheck] verify https
// members with config: a private CA, a client certificate, a server name
// (see [TLSOptions.Config]). It cannot be combined with [WithHTTPClient]:
// set the TLS configuration of that client's transport instead (the check
// then always fails with a *udrain.ConfigError). A nil config keeps the
// default.
func WithTLSConfig(config *tls.Config) HTTPOption {
	return func(c *httpCheck) {
		if config != nil {
			c.tlsConfig = config
		}
	}
}

// WithMaxBodyBytes sets how many bytes of an unhealthy answer [HTTPCheck]
// reads; n <= 0 reads none.
func WithMaxBodyBytes(n int64) HTTPOption {
	return func(c *httpCheck) { c.maxBody = max(n, 0) }
}

type httpCheck struct {
	client    *http.Client
	tlsConfig *tls.Config
	maxBody   int64
}

// HTTPCheck returns a check that GETs rawURL and counts any 2xx answer as
// healthy. An invalid URL gives a check that always fails with a
// *udrain.ConfigError. Each check ends by the context's deadline, or after
// [DefaultMemberTimeout] if the context has none.
//
// The check's errors never show the credentials rawURL may carry (user
// info, secret query values, the fragment; see package redact), neither in
// their text nor in a *url.Error or [*HTTPStatusError] that errors.As finds.
func HTTPCheck(rawURL string, opts ...HTTPOption) CheckFunc {
	u, err := parseURL(rawURL)
	if err == nil {
		err = checkHTTPURL(u)
	}
	if err != nil {
		config := &udrain.ConfigError{Field: "readiness.HTTPCheck(rawURL)", Problem: fmt.Sprintf("%s: %v", redact.URL(rawURL), err)}
		return func(context.Context) error { return config }
	}
	c := httpCheck{maxBody: DefaultMaxBodyBytes}
	for _, opt := range opts {
		opt(&c)
	}
	switch {
	case c.client != nil && c.tlsConfig != nil:
		config := &udrain.ConfigError{Field: "readiness.WithTLSConfig(config)", Problem: "has no effect together with WithHTTPClient: set the TLS configuration of that client's transport instead"}
		return func(context.Context) error { return config }
	case c.client == nil:
		c.client = newProbeClient(c.tlsConfig)
	}
	target := u.String()
	shown := redact.URL(rawURL)
	var secrets redact.Secrets
	secrets.AddURL(rawURL)
	return func(ctx context.Context) error {
		ctx, cancel := withFallbackDeadline(ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return secrets.Error(err)
		}
		req.Header.Set("User-Agent", "udrain-readiness")
		resp, err := c.client.Do(req)
		if err != nil {
			return secrets.Error(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return nil
		}
		// The body only serves the error message; a read error just shortens it.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, c.maxBody))
		return &HTTPStatusError{URL: shown, StatusCode: resp.StatusCode, Status: resp.Status, Body: secrets.Scrub(string(body))}
	}
}

// newProbeClient returns the default client of [HTTPCheck]; see
// [WithHTTPClient].
func newProbeClient(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: maxHeaderBytes,
			TLSClientConfig:        tlsConfig,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// HTTPStatusError reports a member that answered with a status outside 2xx.
type HTTPStatusError struct {
	// URL is the URL that was checked, with credentials redacted.
	URL string
	// StatusCode is the HTTP status code of the answer.
	StatusCode int
	// Status is the status line, e.g. "503 Service Unavailable".
	Status string
	// Body is the start of the answer's body (see [WithMaxBodyBytes]).
	Body string
}

// Error describes the problem.
func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("GET %s: %s", e.URL, e.Status)
	if e.Body != "" {
		msg += ": " + strconv.Quote(e.Body)
	}
	return msg
}

// parseURL parses raw as redact.Parse does; its error is the reason alone,
// for a message that quotes the URL redacted once.
func parseURL(raw string) (*url.URL, error) {
	u, err := redact.Parse(raw)
	var ue *url.Error
	if errors.As(err, &ue) {
		return nil, ue.Err
	}
	return u, err
}

// checkHTTPURL accepts only absolute http and https URLs with a host.
func checkHTTPURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: want http or https, e.g. http://worker-1.group.ns:8000/health", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("no host: want e.g. http://worker-1.group.ns:8000/health")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: want a number from 1 to 65535", port)
		}
	}
	return nil
}

// TCPOption changes how [TCPCheck] checks.
type TCPOption func(*tcpCheck)

// WithDialer makes [TCPCheck] connect with dialer (to set a local address or
// a control function, say). A nil dialer keeps the default.
func WithDialer(dialer *net.Dialer) TCPOption {
	return func(c *tcpCheck) {
		if dialer != nil {
			c.dialer = dialer
		}
	}
}

type tcpCheck struct {
	dialer *net.Dialer
}

// TCPCheck returns a check that opens a TCP connection to addr (HOST:PORT)
// and closes it at once: the member is healthy if it accepts. An invalid
// address gives a check that always fails with a *udrain.ConfigError. Each check
// ends by the context's deadline, or after [DefaultMemberTimeout] if the
// context has none.
func TCPCheck(addr string, opts ...TCPOption) CheckFunc {
	if err := validateHostPort(addr); err != nil {
		config := &udrain.ConfigError{Field: "readiness.TCPCheck(addr)", Problem: fmt.Sprintf("%q: %v", addr, err)}
		return func(context.Context) error { return config }
	}
	c := tcpCheck{dialer: &net.Dialer{}}
	for _, opt := range opts {
		opt(&c)
	}
	return func(ctx context.Context) error {
		ctx, cancel := withFallbackDeadline(ctx)
		defer cancel()
		conn, err := c.dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

func validateHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%v: want HOST:PORT, e.g. worker-1.group.ns:8000", err)
	}
	if host == "" {
		return errors.New("no host: want HOST:PORT, e.g. worker-1.group.ns:8000")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	return nil
}

// withFallbackDeadline gives ctx a deadline of DefaultMemberTimeout if it has
// none, so that no network call of a check can wait forever.
func withFallbackDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultMemberTimeout)
}

// timeoutError is the result of a check that did not return in time.
func timeoutError(after time.Duration) error {
	return fmt.Errorf("no answer within %v: %w", after, context.DeadlineExceeded)
}
