package bench

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/metrics"
)

// MetricsSize is what a scrape of package metrics' Recorder returns after
// a drain or rollout: its cardinality, to check that it stays bounded at
// the fleet's size (no label takes a pod's or a node's name).
type MetricsSize struct {
	// Series are the label sets of all metric families; Samples the lines
	// of a scrape, where a histogram's series counts each bucket, its sum
	// and its count.
	Series  int `json:"series"`
	Samples int `json:"samples"`
	// ByMetric is Series per metric name.
	ByMetric map[string]int `json:"byMetric"`
}

// metricsCounter records a drainer's events on a registry of its own.
type metricsCounter struct {
	reg *prometheus.Registry
	rec *metrics.Recorder
}

func newMetricsCounter() (*metricsCounter, error) {
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	return &metricsCounter{reg: reg, rec: rec}, nil
}

// size gathers the registry as a scrape would.
func (c *metricsCounter) size() (*MetricsSize, error) {
	mfs, err := c.reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather the metrics: %w", err)
	}
	s := &MetricsSize{ByMetric: map[string]int{}}
	for _, mf := range mfs {
		s.ByMetric[mf.GetName()] = len(mf.Metric)
		s.Series += len(mf.Metric)
		for _, m := range mf.Metric {
			s.Samples += samplesOf(mf.GetType(), m)
		}
	}
	return s, nil
}

func samplesOf(t dto.MetricType, m *dto.Metric) int {
	switch t {
	case dto.MetricType_HISTOGRAM:
		return len(m.GetHistogram().GetBucket()) + 3 // the buckets, +Inf, _sum, _count
	case dto.MetricType_SUMMARY:
		return len(m.GetSummary().GetQuantile()) + 2
	}
	return 1
}

// MetricsSizeOf replays events, as a drainer's EventsFile holds them,
// through a Recorder and sizes its metrics. The file's events have no
// Health (reportedEvent): a recovery event gets an empty one, which makes
// the same series (the groups-down gauge of its domain), with another
// value.
func MetricsSizeOf(events []eviction.Event) (*MetricsSize, error) {
	c, err := newMetricsCounter()
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		if e.Health == nil && (e.Type == eviction.EventWaitingRecovery || e.Type == eviction.EventRecovered) {
			e.Health = &health.DomainStatus{}
		}
		c.rec.Record(context.Background(), e)
	}
	return c.size()
}

// ReadEventsFile reads the events a drainer job wrote (DrainerJob.EventsFile).
func ReadEventsFile(name string) ([]eviction.Event, error) { return readEvents(name) }
