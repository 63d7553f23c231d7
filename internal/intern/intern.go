// Package intern keeps one copy of values that many cached objects
// repeat, by a key of their content, for as long as something holds it.
package intern

import (
	"runtime"
	"sync"
	"weak"
)

// Table holds weak pointers to values by a key of their content. An entry
// lives as long as a holder of its value does: the table forgets it once
// the value is collected, so a long-lived cache does not accumulate
// values long gone. The zero Table is ready to use; it must not be copied
// after first use.
type Table[T any] struct {
	mu      sync.Mutex
	entries map[string]weak.Pointer[T]
}

// Intern returns the value interned under key, or v, which it interns.
// The values handed out are shared: no holder may modify them.
func (t *Table[T]) Intern(key string, v *T) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wp, ok := t.entries[key]; ok {
		if have := wp.Value(); have != nil {
			return have
		}
	}
	if t.entries == nil {
		t.entries = map[string]weak.Pointer[T]{}
	}
	t.entries[key] = weak.Make(v)
	runtime.AddCleanup(v, t.forget, key)
	return v
}

// forget drops a collected value's entry, unless a newer value took it.
func (t *Table[T]) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wp, ok := t.entries[key]; ok && wp.Value() == nil {
		delete(t.entries, key)
	}
}

// Len is the number of entries (collected ones included until their
// cleanup runs).
func (t *Table[T]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}
