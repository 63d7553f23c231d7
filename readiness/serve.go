package readiness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/udrain/udrain"
)

// Defaults of [ServeOptions]. A kubelet probe is one request of a few
// hundred bytes, sent at once, on a connection of its own.
const (
	// DefaultMaxConnections bounds the connections open at once.
	DefaultMaxConnections = 64
	// DefaultMaxHeaderBytes bounds a request's header.
	DefaultMaxHeaderBytes = 4 << 10
	// MaxHeaderBytesLimit is the largest ServeOptions.MaxHeaderBytes
	// accepted.
	MaxHeaderBytesLimit = 1 << 20
	// DefaultReadTimeout bounds reading a request, header and body.
	DefaultReadTimeout = 2 * time.Second
	// DefaultIdleTimeout bounds a kept-alive connection between requests.
	DefaultIdleTimeout = 5 * time.Second
	// DefaultShutdownTimeout is the grace period of a shutdown.
	DefaultShutdownTimeout = 5 * time.Second
)

// connectionOverhead is what one open connection of net/http's server holds
// besides its request header, at most: a 4 KiB read buffer, the 4 KiB of
// slack net/http reads past MaxHeaderBytes, a 4 KiB write buffer, the
// goroutine's stack (8 KiB to start) and the connection's own structures.
// TestServeBoundsHostileConnections measures a process with many
// connections open against it.
const connectionOverhead = 32 << 10

// ServeOptions bounds what the clients of a [Server] can hold: the
// endpoint answers whoever can reach the pod, and must keep answering the
// kubelet whatever they do. The zero value gives the defaults. See
// [Checker.NewServer].
type ServeOptions struct {
	// MaxConnections bounds the connections open at once; 0 means
	// [DefaultMaxConnections]. When a new connection would pass it, the
	// oldest connection that is not being answered (its request not read
	// in full yet, or idle between requests) is closed to make room, or,
	// if every one is being answered, the new one: a probe does not wait
	// behind connections that are held open without use.
	MaxConnections int
	// MaxHeaderBytes bounds a request's header; 0 means
	// [DefaultMaxHeaderBytes]. net/http reads up to 4 KiB past it (its
	// read buffer's slack) before it answers 431: with the default, a
	// header of up to about 8 KiB is still read and answered, a longer one
	// gets 431 (TestServeHeaderLimitAsMeasured).
	MaxHeaderBytes int
	// ReadTimeout bounds reading a request, header and body; 0 means
	// [DefaultReadTimeout].
	ReadTimeout time.Duration
	// WriteTimeout bounds an answer, from the end of its request's header;
	// 0 means the checker's [Options.Timeout] plus [DefaultReadTimeout],
	// since an answer may wait for a round of checks.
	WriteTimeout time.Duration
	// IdleTimeout bounds a kept-alive connection between requests; 0
	// means [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// ShutdownTimeout is the grace period of a shutdown: requests in
	// flight get this long to be answered, then every connection is
	// closed. 0 means [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
}

// withDefaults fills in the defaults of o for a checker whose round of
// checks takes up to timeout, and validates o.
func (o ServeOptions) withDefaults(timeout time.Duration) (ServeOptions, error) {
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"MaxConnections", int64(o.MaxConnections)}, {"MaxHeaderBytes", int64(o.MaxHeaderBytes)},
	} {
		if f.value < 0 {
			return o, &udrain.ConfigError{Field: "readiness.ServeOptions." + f.name, Problem: fmt.Sprintf("%d is negative; use 0 for the default", f.value)}
		}
	}
	for _, f := range []struct {
		name  string
		value time.Duration
	}{
		{"ReadTimeout", o.ReadTimeout}, {"WriteTimeout", o.WriteTimeout}, {"IdleTimeout", o.IdleTimeout}, {"ShutdownTimeout", o.ShutdownTimeout},
	} {
		if f.value < 0 {
			return o, &udrain.ConfigError{Field: "readiness.ServeOptions." + f.name, Problem: fmt.Sprintf("%v is negative; use 0 for the default", f.value)}
		}
	}
	if o.MaxHeaderBytes > MaxHeaderBytesLimit {
		return o, &udrain.ConfigError{Field: "readiness.ServeOptions.MaxHeaderBytes", Problem: fmt.Sprintf("%d is above the limit of %d (1 MiB): a probe's header is a few hundred bytes, and every connection may hold this much", o.MaxHeaderBytes, MaxHeaderBytesLimit)}
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = timeout + DefaultReadTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.WriteTimeout <= timeout {
		return o, &udrain.ConfigError{Field: "readiness.ServeOptions.WriteTimeout", See: []string{"readiness.Options.Timeout"},
			Problem: fmt.Sprintf("%v is not longer than the timeout of a round of checks (%v): an answer that waits for a round would be cut off; raise it", o.WriteTimeout, timeout)}
	}
	return o, nil
}

// ConnectionMemory returns the most memory the open connections of a
// server with these options hold at once, in bytes: MaxConnections times
// MaxHeaderBytes and a per-connection overhead of 32 KiB (defaults
// applied). A process's garbage collector may let its heap grow to twice
// what is live, so budget twice this above the process's own needs.
func (o ServeOptions) ConnectionMemory() int64 {
	o, _ = o.withDefaults(0)
	return int64(o.MaxConnections) * int64(o.MaxHeaderBytes+connectionOverhead)
}

// What a checker and its server hold besides the connections, for
// [ServeOptions.Memory]. cmd/udrain's black-box test holds "udrain
// serve-readiness" to them.
const (
	// MemberCheckMemory bounds one member's check in flight (its
	// connection and request): 47 to 68 KiB measured with 256 members
	// that never answer.
	MemberCheckMemory = 96 << 10
	// runtimeGrowth is the Go runtime's own growth under load: goroutine
	// stacks, the garbage collector's metadata.
	runtimeGrowth = 8 << 20
)

// Memory returns the most anonymous memory, in bytes, that a [Checker] of
// members served with these options adds to its process, whatever its
// clients do: one check in flight per member ([MemberCheckMemory]), twice
// ConnectionMemory (the garbage collector lets the heap grow to twice what
// is live) and the Go runtime's own growth under load (8 MiB). Add what the
// process holds at rest to set its memory limit.
func (o ServeOptions) Memory(members int) int64 {
	return int64(members)*MemberCheckMemory + 2*o.ConnectionMemory() + runtimeGrowth
}

// Server serves a [Checker] with the bounds of [ServeOptions]; see
// [Checker.NewServer].
type Server struct {
	checker *Checker
	opts    ServeOptions
}

// NewServer returns a server of c with the bounds of opts, or a
// *udrain.ConfigError if opts are invalid, before anything listens.
func (c *Checker) NewServer(opts ServeOptions) (*Server, error) {
	opts, err := opts.withDefaults(c.opts.Timeout)
	if err != nil {
		return nil, err
	}
	return &Server{checker: c, opts: opts}, nil
}

// Serve serves the checker on ln until ctx ends: [Checker.Handler] at
// /readyz and /readyz/<member>, and "ok" at /healthz (the server's own
// liveness, never the group's). When ctx ends it stops accepting, closes
// the connections that are not being answered, gives requests in flight
// the grace period of [ServeOptions.ShutdownTimeout], closes every
// connection still open and returns nil: a shutdown ends in time whatever
// clients do. It returns an error if ln fails. Serve closes ln; call it
// once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	opts := s.opts
	mux := http.NewServeMux()
	h := s.checker.Handler()
	mux.Handle("/readyz", h)
	mux.Handle("/readyz/", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	})
	limited := newConnLimiter(ln, opts.MaxConnections)
	srv := &http.Server{
		Handler:        limited.busy(mux),
		MaxHeaderBytes: opts.MaxHeaderBytes,
		ReadTimeout:    opts.ReadTimeout,
		WriteTimeout:   opts.WriteTimeout,
		IdleTimeout:    opts.IdleTimeout,
		ConnContext:    withConn,
		// Requests end when a client goes away; nothing here needs the
		// caller's values.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		// net/http would log to the standard logger (a TLS handshake from
		// a port scanner, say): this package does not log.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	// A shutdown waits only for requests being answered.
	srv.RegisterOnShutdown(limited.shutdown)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limited) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving readiness: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// The grace period is over: cut off whoever is left.
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving readiness: %w", err)
	}
	return nil
}
