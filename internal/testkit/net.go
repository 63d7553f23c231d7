package testkit

import (
	"net"
	"testing"
)

// ClosedAddr returns a 127.0.0.1 address on which nothing listens: a
// connect to it is refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
