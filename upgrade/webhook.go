package upgrade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/redact"
	"github.com/udrain/udrain/topology"
)

// WebhookRequest is the JSON body the webhook step POSTs.
type WebhookRequest struct {
	RolloutID string   `json:"rolloutID"`
	Domain    string   `json:"domain"`
	Nodes     []string `json:"nodes"`
}

// IdempotencyKeyHeader carries a key fixed by the rollout ID and the
// domain, the same on every attempt and every resumed run, so that the
// upgrade service can tell a retry from a new request.
const IdempotencyKeyHeader = "Idempotency-Key"

// Defaults of WebhookOptions.
const (
	DefaultWebhookAttemptTimeout = 5 * time.Minute
)

// DefaultWebhookBackoff returns the backoff between attempts when
// WebhookOptions.Backoff is zero: 1s, doubling with 10 % jitter, capped at
// 1m, 6 attempts in all.
func DefaultWebhookBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 6, Cap: time.Minute}
}

// WebhookOptions configure [Webhook].
type WebhookOptions struct {
	// URL is where the step POSTs a WebhookRequest per domain. Credentials
	// in it (user info, secret query parameters) never appear in errors or
	// logs.
	URL string
	// Header is sent with every request (such as Authorization); every
	// value is treated as a secret in errors and logs.
	Header http.Header
	// Client sends the requests; nil means a new http.Client with the
	// default transport.
	Client *http.Client
	// RolloutID goes into the request and the idempotency key.
	RolloutID string
	// AttemptTimeout bounds one request, answer included; zero means
	// DefaultWebhookAttemptTimeout. The upgrade service is expected to
	// answer once the domain is upgraded, so leave it room.
	AttemptTimeout time.Duration
	// Backoff spaces the attempts; its Steps is the number of attempts.
	// The zero value means DefaultWebhookBackoff().
	Backoff wait.Backoff
	// Clock times the backoff; nil means the real clock.
	Clock clock.Clock
}

// WebhookError reports a webhook that did not answer 2xx: the last
// attempt's status and body (or transport error), with every credential
// of the URL and the headers masked.
type WebhookError struct {
	// URL is the webhook's URL, redacted.
	URL    string
	Domain string
	// Attempts is how many requests were sent.
	Attempts int
	// StatusCode is the last answer's status; zero if there was none.
	StatusCode int
	// Body is the start of the last answer's body, scrubbed.
	Body string
	// Err is the last transport error, scrubbed; nil when the server
	// answered.
	Err error
}

func (e *WebhookError) Error() string {
	what := fmt.Sprintf("upgrade webhook %s for domain %s", e.URL, e.Domain)
	if e.Err != nil {
		return fmt.Sprintf("%s failed after %d attempt(s): %v", what, e.Attempts, e.Err)
	}
	msg := fmt.Sprintf("%s answered %d %s after %d attempt(s)", what, e.StatusCode, http.StatusText(e.StatusCode), e.Attempts)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Unwrap returns the transport error, if any.
func (e *WebhookError) Unwrap() error { return e.Err }

// Webhook returns an upgrade step that POSTs a WebhookRequest for the
// domain to opts.URL and waits for a 2xx answer, which means the domain is
// upgraded. A transport error, a timeout of the attempt, 408, 429 and 5xx
// are retried per opts.Backoff (honouring neither Retry-After nor
// anything else: the backoff is the contract); any other status fails at
// once. When the attempts run out, the step fails with a *WebhookError.
//
// Every request carries IdempotencyKeyHeader, so a retried or resumed
// request can be recognised. Webhook returns a *udrain.ConfigError for
// options that cannot work.
func Webhook(opts WebhookOptions) (eviction.UpgradeFunc, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Backoff == (wait.Backoff{}) {
		opts.Backoff = DefaultWebhookBackoff()
	}
	if opts.AttemptTimeout == 0 {
		opts.AttemptTimeout = DefaultWebhookAttemptTimeout
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &webhookStep{opts: opts, shown: redact.URL(opts.URL), secrets: &redact.Secrets{}}
	s.secrets.AddURL(opts.URL)
	for _, vs := range opts.Header {
		s.secrets.Add(vs...)
	}
	return s.run, nil
}

// Validate checks the options without sending anything: it returns the
// *udrain.ConfigError that Webhook would return for them.
func (o WebhookOptions) Validate() error {
	u, err := redact.Parse(o.URL)
	if err != nil {
		return &udrain.ConfigError{Field: "upgrade.WebhookOptions.URL", Problem: err.Error()}
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return &udrain.ConfigError{Field: "upgrade.WebhookOptions.URL", Problem: fmt.Sprintf("%s: use an http:// or https:// URL with a host", redact.URL(o.URL))}
	}
	if o.AttemptTimeout < 0 {
		return &udrain.ConfigError{Field: "upgrade.WebhookOptions.AttemptTimeout", Problem: fmt.Sprintf("%s: use 0 (the default) or a positive duration", o.AttemptTimeout)}
	}
	if b := o.Backoff; b != (wait.Backoff{}) && (b.Steps < 1 || b.Duration < 0) {
		return &udrain.ConfigError{Field: "upgrade.WebhookOptions.Backoff", Problem: fmt.Sprintf("%+v: Steps (the attempts) must be at least 1 and Duration not negative", b)}
	}
	return nil
}

// ParseHeader parses headers for WebhookOptions.Header, each "Name: value"
// as curl takes it (a command line, a Secret's lines). Its errors never
// quote a value, which may be a credential; they are *udrain.ConfigError
// about WebhookOptions.Header.
func ParseHeader(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, kv := range lines {
		k, v, ok := strings.Cut(kv, ":")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, &udrain.ConfigError{Field: "upgrade.WebhookOptions.Header", Problem: `write "Name: value" (one without a colon was given)`}
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return h, nil
}

type webhookStep struct {
	opts    WebhookOptions
	shown   string
	secrets *redact.Secrets
}

// maxBody is how much of an answer's body an error quotes.
const maxBody = 1 << 10

func (s *webhookStep) run(ctx context.Context, dom topology.Domain) error {
	logger := klog.FromContext(ctx).WithValues("domain", dom.Name, "upgradeStep", "webhook", "url", s.shown)
	body, err := json.Marshal(WebhookRequest{RolloutID: s.opts.RolloutID, Domain: dom.Name, Nodes: dom.Nodes})
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(s.opts.RolloutID + "\x00" + dom.Name))
	key := hex.EncodeToString(sum[:16])
	backoff := s.opts.Backoff
	attempts := backoff.Steps
	var last *WebhookError
	for n := 1; n <= attempts; n++ {
		status, answer, err := s.attempt(ctx, body, key)
		if err == nil && status/100 == 2 {
			logger.Info("Upgrade webhook done", "status", status, "attempts", n)
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("upgrade webhook %s for domain %s: %w", s.shown, dom.Name, cerr)
		}
		last = &WebhookError{URL: s.shown, Domain: dom.Name, Attempts: n, StatusCode: status, Body: answer, Err: s.secrets.Error(err)}
		if err == nil && !retriable(status) {
			return last
		}
		if n == attempts {
			break
		}
		delay := backoff.Step()
		logger.Info("Upgrade webhook attempt failed; retrying", "attempt", n, "err", last.Error(), "retryIn", delay)
		t := s.opts.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("upgrade webhook %s for domain %s: %w", s.shown, dom.Name, ctx.Err())
		case <-t.C():
		}
	}
	return last
}

// attempt sends one request under the attempt timeout and returns the
// answer's status and the start of its body (scrubbed, one line).
func (s *webhookStep) attempt(ctx context.Context, body []byte, key string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, vs := range s.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IdempotencyKeyHeader, key)
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", s.opts.AttemptTimeout, err)
		}
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection
	text := strings.Join(strings.Fields(string(msg)), " ")
	return resp.StatusCode, s.secrets.Scrub(text), nil
}

// retriable reports whether an answer with status may succeed when sent
// again.
func retriable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}
