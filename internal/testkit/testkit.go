// Package testkit holds the helpers that the module's tests share: a
// buffer safe for concurrent use, an address where nothing listens, and
// throwaway TLS material. Builders of Kubernetes objects are in its
// sub-package kube.
//
// Only tests import it, and it imports nothing of the module, so that the
// tests inside any package of the module can use it without an import
// cycle.
package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads: the
// output of a logger or a progress view written from other goroutines
// while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
