package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGoBench(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []GoBenchmark
		err      string
	}{
		{
			name: "two packages, custom metrics, logs",
			in: `goos: linux
goarch: amd64
pkg: github.com/udrain/udrain/eviction
cpu: AMD EPYC
BenchmarkPlan/nodes=1000-2         	      20	  51396086 ns/op	 9760170 B/op	   82001 allocs/op
    bench_test.go:99: planned 1000 nodes
PASS
ok  	github.com/udrain/udrain/eviction	5.696s
pkg: github.com/udrain/udrain/gpu
BenchmarkClassifyNode/mix/nodes=10000-2 	28	51396086 ns/op	5140 ns/node	0 B/op	0 allocs/op
BenchmarkNoProcs 	100	12.5 ns/op
`,
			want: []GoBenchmark{
				{Package: "github.com/udrain/udrain/eviction", Name: "BenchmarkPlan/nodes=1000", Procs: 2, Iterations: 20,
					Metrics: []Metric{{51396086, "ns/op"}, {9760170, "B/op"}, {82001, "allocs/op"}}},
				{Package: "github.com/udrain/udrain/gpu", Name: "BenchmarkClassifyNode/mix/nodes=10000", Procs: 2, Iterations: 28,
					Metrics: []Metric{{51396086, "ns/op"}, {5140, "ns/node"}, {0, "B/op"}, {0, "allocs/op"}}},
				{Package: "github.com/udrain/udrain/gpu", Name: "BenchmarkNoProcs", Procs: 1, Iterations: 100, Metrics: []Metric{{12.5, "ns/op"}}},
			},
		},
		{name: "a value without a unit", in: "BenchmarkX-2 10 12 ns/op 7\n", err: "a value without a unit"},
		{name: "a value that is no number", in: "BenchmarkX-2 10 twelve ns/op\n", err: "invalid syntax"},
		{name: "no results", in: "PASS\nok x 1s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGoBench(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
