package readiness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// DefaultMaxBodyBytes is how much of an unhealthy member's answer
// [HTTPCheck] reads (to show it in the error) unless [WithMaxBodyBytes] says
// otherwise. A healthy answer's body is not read.
const DefaultMaxBodyBytes = 1024

// maxHeaderBytes bounds the response headers of a member.
const maxHeaderBytes = 64 << 10

// HTTPOption changes how [HTTPCheck] checks.
type HTTPOption func(*httpCheck)

// WithHTTPClient makes [HTTPCheck] use client (for custom TLS settings, say).
// The default client verifies certificates, ignores proxy environment
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

// WithMaxBodyBytes sets how many bytes of an unhealthy answer [HTTPCheck]
// reads; n <= 0 reads none.
func WithMaxBodyBytes(n int64) HTTPOption {
	return func(c *httpCheck) { c.maxBody = max(n, 0) }
}

type httpCheck struct {
	client  *http.Client
	maxBody int64
}

// HTTPCheck returns a check that GETs rawURL and counts any 2xx answer as
// healthy. An invalid URL gives a check that always fails with a
// [*ConfigError]. Each check ends by the context's deadline, or after
// [DefaultMemberTimeout] if the context has none.
func HTTPCheck(rawURL string, opts ...HTTPOption) CheckFunc {
	u, err := parseHTTPURL(rawURL)
	if err != nil {
		config := &ConfigError{Field: fmt.Sprintf("URL %q", rawURL), Problem: err.Error()}
		return func(context.Context) error { return config }
	}
	target := u.String()
	c := httpCheck{maxBody: DefaultMaxBodyBytes}
	for _, opt := range opts {
		opt(&c)
	}
	if c.client == nil {
		c.client = newProbeClient()
	}
	return func(ctx context.Context) error {
		ctx, cancel := withFallbackDeadline(ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "udrain-readiness")
		resp, err := c.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return nil
		}
		// The body only serves the error message; a read error just shortens it.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, c.maxBody))
		return &HTTPStatusError{URL: target, StatusCode: resp.StatusCode, Status: resp.Status, Body: string(body)}
	}
}

// newProbeClient returns the default client of [HTTPCheck]; see
// [WithHTTPClient].
func newProbeClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: maxHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// HTTPStatusError reports a member that answered with a status outside 2xx.
type HTTPStatusError struct {
	// URL is the URL that was checked.
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

// parseHTTPURL accepts only absolute http and https URLs with a host.
func parseHTTPURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q: want http or https, e.g. http://worker-1.group.ns:8000/health", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("no host: want e.g. http://worker-1.group.ns:8000/health")
	}
	return u, nil
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
// address gives a check that always fails with a [*ConfigError]. Each check
// ends by the context's deadline, or after [DefaultMemberTimeout] if the
// context has none.
func TCPCheck(addr string, opts ...TCPOption) CheckFunc {
	if err := validateHostPort(addr); err != nil {
		config := &ConfigError{Field: fmt.Sprintf("address %q", addr), Problem: err.Error()}
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
