package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metricRef finds the metric names in a PromQL expression: every
// udrain_ identifier (label names and values do not start so).
var metricRef = regexp.MustCompile(`\budrain_[a-z0-9_]+\b`)

// exported says whether a name in a query is a series this package
// exports: a metric's name, or a histogram's with _bucket, _sum or _count.
func exported(name string) bool {
	for _, n := range Names() {
		if name == n {
			return true
		}
		if n == BudgetWait || n == PhaseDuration {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if name == n+suffix {
					return true
				}
			}
		}
	}
	return false
}

// Every query of the Grafana dashboard in deploy/grafana names metrics
// this package exports, and only those; every metric is on it.
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	data, err := os.ReadFile("../deploy/grafana/udrain-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	queries := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			names := metricRef.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no udrain metric", p.Title, q.Expr)
			}
			for _, n := range names {
				if !exported(n) {
					t.Errorf("panel %q: query %q names %s, which package metrics does not export", p.Title, q.Expr, n)
				}
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
			}
		}
	}
	for _, n := range Names() {
		if !used[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
	if queries < len(Names()) {
		t.Errorf("%d queries for %d metrics", queries, len(Names()))
	}
}

// The checker itself tells a wrong name from a right one.
func TestExportedRejectsUnknownNames(t *testing.T) {
	for name, want := range map[string]bool{
		"udrain_eviction_requests_total":    true,
		"udrain_budget_wait_seconds_bucket": true,
		"udrain_eviction_requests":          false,
		"udrain_groups_down_bucket":         false,
	} {
		if got := exported(name); got != want {
			t.Errorf("exported(%q) = %v, want %v", name, got, want)
		}
	}
}

// docs/METRICS.md documents every metric.
func TestDocsDescribeEveryMetric(t *testing.T) {
	data, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, n := range Names() {
		if !strings.Contains(string(data), "| `"+n+"` |") {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/METRICS.md has no table row for %v", missing)
	}
}
