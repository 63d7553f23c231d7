package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestLayoutSelect(t *testing.T) {
	l, err := BuildLayout([]corev1.Node{node("a", "ud-10"), node("b", "ud-2"), node("c", "ud-1")}, LayoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Names   []string
		Unknown string // the domain of the *UnknownDomainError
	}
	for name, tc := range map[string]struct {
		names []string
		want  result
	}{
		"every domain, in natural order": {nil, result{Names: []string{"ud-1", "ud-2", "ud-10"}}},
		"an empty list":                  {[]string{}, result{Names: []string{"ud-1", "ud-2", "ud-10"}}},
		"the names, in their order":      {[]string{"ud-10", "ud-1"}, result{Names: []string{"ud-10", "ud-1"}}},
		"an unknown domain":              {[]string{"ud-1", "ud-3", "ud-4"}, result{Unknown: "ud-3"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got result
			var err error
			got.Names, err = l.Select(tc.names)
			if ude, ok := err.(*UnknownDomainError); ok {
				got.Unknown = ude.Domain
			} else if err != nil {
				t.Fatalf("error %v (%T), want an *UnknownDomainError", err, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
