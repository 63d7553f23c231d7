package bootstrap

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
)

// outcome is the result of one attempt.
type outcome struct {
	remoteAddr string
	statusCode int
	err        error // nil on success; not yet redacted
}

// probe makes one attempt.
type probe func(ctx context.Context) outcome

// newProbe returns the probe for t and a function that releases what it
// holds.
func newProbe(t *target, s *settings) (probe, func()) {
	if t.isTCP() {
		return func(ctx context.Context) outcome {
			conn, err := s.dial(ctx, "tcp", t.address)
			if err != nil {
				return outcome{err: err}
			}
			addr := conn.RemoteAddr().String()
			_ = conn.Close()
			return outcome{remoteAddr: addr}
		}, func() {}
	}

	transport := &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		DialContext:     s.dial,
		TLSClientConfig: s.tlsConfig,
		// Every attempt resolves and connects afresh: a kept-alive
		// connection would hide exactly the failures being waited out.
		DisableKeepAlives: true,
	}
	client := &http.Client{
		Transport: transport,
		// A redirect (to a login page, say) is an answer, not readiness.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	url := t.u.String()
	return func(ctx context.Context) outcome {
		var out outcome
		// The transport runs the lookup in another goroutine.
		var lookups atomic.Int32
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			DNSStart: func(httptrace.DNSStartInfo) { lookups.Add(1) },
			DNSDone:  func(httptrace.DNSDoneInfo) { lookups.Add(-1) },
			GotConn:  func(info httptrace.GotConnInfo) { out.remoteAddr = info.Conn.RemoteAddr().String() },
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			out.err = err
			return out
		}
		req.Header = s.header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			out.err = err
			if lookups.Load() > 0 && ctx.Err() != nil {
				out.err = lookupTimedOut(err, t.u.Hostname())
			}
			return out
		}
		defer resp.Body.Close()
		out.statusCode = resp.StatusCode
		if !s.statusOK(resp.StatusCode) {
			out.err = &statusError{code: resp.StatusCode, status: resp.Status, want: s.wantStatus}
			return out
		}
		if s.checkBody == nil {
			// The status is the answer; the body is not waited for.
			return out
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
		if err != nil {
			out.err = err
			return out
		}
		if err := s.checkBody(body); err != nil {
			out.err = &bodyError{err: err}
		}
		return out
	}, transport.CloseIdleConnections
}

// lookupTimedOut turns the bare context error that net/http returns when
// the attempt times out during the DNS lookup into a *net.DNSError, so that
// it is classified as a DNS failure rather than a slow server. The
// *url.Error stays outermost and the context error stays in the chain.
func lookupTimedOut(err error, host string) error {
	dnsErr := &net.DNSError{Err: "no answer before the attempt timed out", Name: host, IsTimeout: true, IsTemporary: true}
	if ue, ok := err.(*url.Error); ok {
		dnsErr.UnwrapErr = ue.Err
		return &url.Error{Op: ue.Op, URL: ue.URL, Err: dnsErr}
	}
	dnsErr.UnwrapErr = err
	return dnsErr
}

func (s *settings) statusOK(code int) bool {
	if s.statusCodes != nil {
		return s.statusCodes[code]
	}
	return code >= 200 && code <= 299
}
