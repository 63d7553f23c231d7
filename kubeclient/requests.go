package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/udrain/udrain"
)

// requestDeadline bounds every request to the API server: one that is not
// a watch must be answered in full within timeout (a server that stalls in
// the middle of an answer fails it too); a watch must start (its headers)
// within timeout, and then streams for as long as it lasts. It replaces
// client-go's rest.Config.Timeout, which would also cut every watch of a
// long drain after timeout.
type requestDeadline struct {
	rt      http.RoundTripper
	timeout time.Duration
}

// RequestTimeoutError is a request the API server did not answer within
// the bound of BoundRequests (Options.RequestTimeout). It is a net.Error
// whose Timeout is true, as http.Client's own, so that client-go and
// kubeclient.ServerProblemOf see a server that did not answer.
type RequestTimeoutError struct {
	// Limit is the bound the request ran out of.
	Limit time.Duration
}

// Error names the setting that bounds the request as Go code does
// (Describe(nil)).
func (e *RequestTimeoutError) Error() string { return e.Describe(nil) }

// Describe is the message with the setting that bounds the request named
// by name (as udrain.ConfigError.Describe does): a command line names its
// flag.
func (e *RequestTimeoutError) Describe(name func(setting string) string) string {
	return fmt.Sprintf("no answer within %s (%s)", e.Limit, udrain.NameSetting(name, "kubeclient.Options.RequestTimeout"))
}

// Timeout reports true: it is a net.Error timeout, as http.Client's own.
func (e *RequestTimeoutError) Timeout() bool { return true }

// Temporary reports false (net.Error).
func (e *RequestTimeoutError) Temporary() bool { return false }

func (d *requestDeadline) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timedOut := &RequestTimeoutError{Limit: d.timeout}
	timer := time.AfterFunc(d.timeout, func() { cancel(timedOut) })
	stop := func() {
		timer.Stop()
		cancel(nil)
	}
	resp, err := d.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if errors.Is(context.Cause(ctx), timedOut) {
			err = timedOut
		}
		stop()
		return nil, err
	}
	if q := req.URL.Query().Get("watch"); (q == "true" || q == "1") && resp.StatusCode == http.StatusOK {
		timer.Stop() // a watch that started streams for as long as it lasts
	}
	resp.Body = &deadlineBody{ReadCloser: resp.Body, ctx: ctx, timedOut: timedOut, stop: stop}
	return resp, nil
}

// deadlineBody is the body of a bounded request: a read cut by the
// deadline reports a *RequestTimeoutError; closing it releases the timer.
type deadlineBody struct {
	io.ReadCloser
	ctx      context.Context
	timedOut *RequestTimeoutError
	stop     func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), b.timedOut) {
		err = b.timedOut
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	err := b.ReadCloser.Close()
	b.stop()
	return err
}
