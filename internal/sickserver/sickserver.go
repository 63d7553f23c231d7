// Package sickserver starts API servers that misbehave, on real TCP
// listeners on 127.0.0.1, for the tests of issue 24 ("no hang on a sick API
// server"): the command-line table (cmd/udrain) and the library's
// (eviction) run every entry point against each.
package sickserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is an API server that misbehaves in one way.
type Server struct {
	Name string
	// Cause is what an error must say of the server (lower case).
	Cause string
	// start listens and returns the server's URL.
	start func(t testing.TB, s *Server) string
	// writes counts the requests other than GET that reached it: a server
	// that fails every request must see no attempt to change anything.
	writes atomic.Int32
}

// Start listens until the test ends and returns the server's URL
// ("http://127.0.0.1:PORT").
func (s *Server) Start(t testing.TB) string {
	t.Helper()
	return s.start(t, s)
}

// Writes counts the requests other than GET that reached the server.
func (s *Server) Writes() int { return int(s.writes.Load()) }

// All returns the four behaviours of issue 24, 500 and 429 counted apart:
// a closed port, a black hole (accepts, reads, never answers), a slow
// trickle (answers a byte at a time and stalls in the body), and a server
// that answers every request with 500, or with 429 and Retry-After.
func All() []*Server {
	return []*Server{
		{Name: "closed port", Cause: "refused", start: func(t testing.TB, s *Server) string {
			ln := listen(t)
			ln.Close()
			return "http://" + ln.Addr().String()
		}},
		// A dead load balancer, a firewall that drops.
		{Name: "black hole", Cause: "did not answer", start: func(t testing.TB, s *Server) string {
			ln := listen(t)
			serveForever(t, ln, func(c net.Conn) { io.Copy(io.Discard, c) })
			return "http://" + ln.Addr().String()
		}},
		{Name: "slow trickle", Cause: "did not answer", start: func(t testing.TB, s *Server) string {
			ln := listen(t)
			serveForever(t, ln, func(c net.Conn) {
				r := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					if req.Method != http.MethodGet {
						s.writes.Add(1)
					}
					resp := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[`
					for i := range len(resp) {
						if _, err := c.Write([]byte{resp[i]}); err != nil {
							return
						}
						time.Sleep(time.Duration(min(i, 200)) * time.Millisecond)
					}
					time.Sleep(time.Hour)
				}
			})
			return "http://" + ln.Addr().String()
		}},
		{Name: "500 forever", Cause: "500", start: answerStatus(http.StatusInternalServerError, nil)},
		{Name: "429 forever", Cause: "429", start: answerStatus(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})},
	}
}

// serveForever accepts connections on ln until the test ends and hands
// each to handle; every connection is closed at the end.
func serveForever(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go handle(c)
		}
	}()
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// answerStatus answers every request with an API Status of code.
func answerStatus(code int, header http.Header) func(t testing.TB, s *Server) string {
	return func(t testing.TB, s *Server) string {
		ln := listen(t)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				s.writes.Add(1)
			}
			for k, v := range header {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"sick server","code":%d}`, code)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return "http://" + ln.Addr().String()
	}
}
