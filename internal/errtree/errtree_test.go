package errtree

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type codeError struct{ code int }

func (e *codeError) Error() string { return fmt.Sprintf("code %d", e.code) }

func TestFind(t *testing.T) {
	two := &codeError{2}
	tests := []struct {
		name string
		err  error
		want *codeError
	}{
		{"nil", nil, nil},
		{"itself", two, two},
		{"wrapped", fmt.Errorf("a: %w", two), two},
		{"second of a join", errors.Join(&codeError{1}, fmt.Errorf("b: %w", two)), two},
		{"under a wrapper of the same type that does not match", fmt.Errorf("c: %w", errors.Join(&codeError{1}, two)), two},
		{"none matches", errors.Join(&codeError{1}, errors.New("x")), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Find(tc.err, func(e *codeError) bool { return e.code == 2 })
			if ok != (tc.want != nil) || got != tc.want {
				t.Errorf("Find = %v, %v; want %v", got, ok, tc.want)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(codeError{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
