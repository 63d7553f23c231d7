package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"longer than ten", 10, "longer th…"},
		{"ümlaut über", 6, "ümlau…"},
		{"no width known", 0, "no width known"},
		{"one", 1, "o"},
	} {
		if diff := cmp.Diff(tc.want, truncate(tc.s, tc.n)); diff != "" {
			t.Errorf("truncate(%q, %d) (-want +got):\n%s", tc.s, tc.n, diff)
		}
	}
}
