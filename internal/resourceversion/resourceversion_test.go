package resourceversion

import "testing"

func TestOlder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"5", "10", true},
		{"10", "5", false},
		{"10", "10", false},
		{"", "10", false},
		{"10", "", false},
		{"x", "10", false},
		{"9", "10", true}, // numbers, not strings
	} {
		if got := Older(tc.a, tc.b); got != tc.want {
			t.Errorf("Older(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
