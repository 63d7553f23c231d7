package bench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Metric is one value of a Go benchmark result line, such as 1234 ns/op.
type Metric struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// GoBenchmark is one result line of "go test -bench".
type GoBenchmark struct {
	Package string `json:"package"`
	// Name is the benchmark's name without the -GOMAXPROCS suffix.
	Name       string   `json:"name"`
	Procs      int      `json:"procs"`
	Iterations int64    `json:"iterations"`
	Metrics    []Metric `json:"metrics"`
}

// Metric returns the value of the metric with this unit.
func (b GoBenchmark) Metric(unit string) (float64, bool) {
	for _, m := range b.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// ParseGoBench reads the output of "go test -bench" (several packages
// may follow each other) and returns its result lines in order. Lines
// that are not results (goos, PASS, logs) are skipped; a result line that
// does not parse is an error naming it.
func ParseGoBench(r io.Reader) ([]GoBenchmark, error) {
	var out []GoBenchmark
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if p, ok := strings.CutPrefix(text, "pkg: "); ok {
			pkg = p
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		iters, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue // a benchmark's log line, not a result
		}
		b := GoBenchmark{Package: pkg, Name: fields[0], Procs: 1, Iterations: iters}
		if i := strings.LastIndexByte(b.Name, '-'); i > 0 {
			if n, err := strconv.Atoi(b.Name[i+1:]); err == nil {
				b.Name, b.Procs = b.Name[:i], n
			}
		}
		rest := fields[2:]
		if len(rest)%2 != 0 {
			return nil, fmt.Errorf("line %d: %q: a value without a unit", line, text)
		}
		for i := 0; i < len(rest); i += 2 {
			v, err := strconv.ParseFloat(rest[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q: %w", line, text, err)
			}
			b.Metrics = append(b.Metrics, Metric{Value: v, Unit: rest[i+1]})
		}
		out = append(out, b)
	}
	return out, sc.Err()
}
