package intern

import (
	"runtime"
	"testing"
	"time"
)

func TestInternSharesByKey(t *testing.T) {
	var tab Table[string]
	a, b, c := "x", "x", "y"
	got := []*string{tab.Intern("k1", &a), tab.Intern("k1", &b), tab.Intern("k2", &c)}
	switch {
	case got[0] != &a:
		t.Errorf("the first value of a key is not the one interned")
	case got[1] != &a:
		t.Errorf("a second value of the same key was not given the first")
	case got[2] != &c:
		t.Errorf("another key was given another key's value")
	}
	if n := tab.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
	runtime.KeepAlive(got)
}

func TestInternForgetsWhatNoOneHolds(t *testing.T) {
	var tab Table[[64]byte]
	kept := tab.Intern("kept", &[64]byte{1})
	for i := range 20 {
		tab.Intern(string(rune('a'+i)), &[64]byte{byte(i)})
	}
	deadline := time.Now().Add(10 * time.Second)
	for tab.Len() > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := tab.Len(); n != 1 {
		t.Errorf("%d entries once one value is held; want 1", n)
	}
	if again := tab.Intern("kept", &[64]byte{2}); again != kept || again[0] != 1 {
		t.Errorf("the value still held was not given again")
	}
}
