package readiness

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
)

// connLimiter is a listener that keeps at most max connections open. When
// a new connection would pass the limit, it closes the oldest one that is
// not being answered, or the new one if every one is: see
// [ServeOptions.MaxConnections].
type connLimiter struct {
	net.Listener
	max int

	mu           sync.Mutex
	conns        []*limitedConn // open, oldest first
	shuttingDown bool
}

// limitedConn is a connection counted by a connLimiter.
type limitedConn struct {
	net.Conn
	limiter *connLimiter
	active  bool // a request is being answered (see busy)
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, max: max}
}

// Accept returns the next connection, making room for it.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: conn, limiter: l}
		l.mu.Lock()
		if l.shuttingDown {
			l.mu.Unlock()
			conn.Close()
			continue
		}
		var evict *limitedConn
		if len(l.conns) >= l.max {
			i := slices.IndexFunc(l.conns, func(c *limitedConn) bool { return !c.active })
			if i < 0 {
				l.mu.Unlock()
				conn.Close()
				continue
			}
			evict = l.conns[i]
			l.conns = slices.Delete(l.conns, i, i+1)
		}
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		if evict != nil {
			// The server's goroutine for it sees the read fail and ends.
			evict.Conn.Close()
		}
		return c, nil
	}
}

// connKey is the request context's key of the request's *limitedConn.
type connKey struct{}

// withConn is the http.Server's ConnContext hook: it puts the connection in
// the context of its requests, for busy.
func withConn(ctx context.Context, conn net.Conn) context.Context {
	if c, ok := conn.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// busy wraps h so that a connection counts as being answered while h runs
// for one of its requests, and only then. (net/http's StateActive lasts
// longer: through the half a second it lingers before it closes a
// connection whose request was too large or had a body left unread, which
// would let such requests fill every slot.)
func (l *connLimiter) busy(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*limitedConn)
		if ok {
			l.setActive(c, true)
			defer l.setActive(c, false)
		}
		h.ServeHTTP(w, r)
	})
}

func (l *connLimiter) setActive(c *limitedConn, active bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.active = active
}

// Close closes the connection and stops counting it.
func (c *limitedConn) Close() error {
	l := c.limiter
	l.mu.Lock()
	if i := slices.Index(l.conns, c); i >= 0 {
		l.conns = slices.Delete(l.conns, i, i+1)
	}
	l.mu.Unlock()
	return c.Conn.Close()
}

// shutdown closes every connection that is not being answered, and every
// one accepted from now on: net/http's Shutdown would wait for a connection
// whose request has not arrived in full, for as long as its client takes.
func (l *connLimiter) shutdown() {
	l.mu.Lock()
	l.shuttingDown = true
	var inactive []*limitedConn
	l.conns = slices.DeleteFunc(l.conns, func(c *limitedConn) bool {
		if !c.active {
			inactive = append(inactive, c)
		}
		return !c.active
	})
	l.mu.Unlock()
	for _, c := range inactive {
		c.Conn.Close()
	}
}
