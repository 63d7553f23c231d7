package kubeclient

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/udrain/udrain"
)

// Client rate limits. client-go's defaults (5 requests per second, bursts
// of 10) would make a drain of a few hundred pods wait on the client, not on
// the cluster: evictions, watches of pods and budgets and node patches all
// count.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// DefaultRequestTimeout bounds each request to the API server when
// Options.RequestTimeout is zero and the base configuration sets no
// Timeout (client-go's default is no limit).
const DefaultRequestTimeout = 30 * time.Second

// NoRequestTimeout, as Options.RequestTimeout, leaves requests unbounded
// (client-go's default).
const NoRequestTimeout time.Duration = -1

// Options are the settings Config applies to a client configuration.
type Options struct {
	// QPS is the number of requests per second the client sends at most.
	// Zero means DefaultQPS; negative means no limit on the client's side
	// (as rest.Config.QPS).
	QPS float32
	// Burst is the number of requests the client sends at once above QPS.
	// Zero means DefaultBurst; it must not be negative.
	Burst int
	// RequestTimeout bounds each request (BoundRequests). Zero means the
	// base configuration's Timeout if it sets one, else
	// DefaultRequestTimeout; negative (NoRequestTimeout) means no limit.
	RequestTimeout time.Duration
	// UserAgent is the User-Agent header of every request, e.g.
	// UserAgent("my-upgrader", "v1.2.3"). Empty keeps the base
	// configuration's (client-go's default when it sets none).
	UserAgent string
}

// Config returns a copy of base with the rate limits, the request bound
// and the user agent of opts. base is not changed. A RateLimiter that base
// sets is kept, and overrides QPS and Burst as it does in client-go. It
// returns a *udrain.ConfigError for a nil base or invalid options.
func Config(base *rest.Config, opts Options) (*rest.Config, error) {
	if base == nil {
		return nil, &udrain.ConfigError{Field: "kubeclient.Config(base)", Problem: "nil; pass the configuration to start from, e.g. from clientcmd.BuildConfigFromFlags or rest.InClusterConfig"}
	}
	if opts.Burst < 0 {
		return nil, &udrain.ConfigError{Field: "kubeclient.Options.Burst", Problem: fmt.Sprintf("%d is negative; use 0 for the default (%d)", opts.Burst, DefaultBurst)}
	}
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	if opts.QPS != 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst != 0 {
		cfg.Burst = opts.Burst
	}
	if opts.UserAgent != "" {
		cfg.UserAgent = opts.UserAgent
	}
	timeout := opts.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
		if base.Timeout > 0 {
			timeout = base.Timeout
		}
	}
	BoundRequests(cfg, timeout)
	return cfg, nil
}

// BoundRequests makes every request of cfg end within timeout, in place of
// cfg.Timeout (which it clears: client-go's Timeout would also cut every
// watch after that time). A request that is not a watch must be answered
// in full within timeout; a watch must start (its headers) within
// timeout, and then streams for as long as it lasts. A request that runs
// out of time fails with a *RequestTimeoutError. Zero or negative timeout
// means no limit. Call it before building clients from cfg.
func BoundRequests(cfg *rest.Config, timeout time.Duration) {
	cfg.Timeout = 0
	if timeout <= 0 {
		return
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &requestDeadline{rt: rt, timeout: timeout}
	})
}

// UserAgent is a User-Agent header that names the program and its version
// ahead of client-go's default (the binary's name, the platform and
// client-go's version), for Options.UserAgent.
func UserAgent(program, version string) string {
	return program + "/" + version + " " + rest.DefaultKubernetesUserAgent()
}
