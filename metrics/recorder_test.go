package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func pod(name string) *topology.PodRef {
	return &topology.PodRef{Namespace: "inference", Name: name, UID: types.UID("uid-" + name)}
}

// rolloutOf is what a rollout of one domain with an upgrade step reports:
// the leader refused once by its budget for 40 s, a worker refused once by
// a webhook, one transient error.
func rolloutOf(id, domain string, s int) []eviction.Event {
	ev := func(sec int, t eviction.EventType, mod func(*eviction.Event)) eviction.Event {
		e := eviction.Event{Time: at(s + sec), Type: t, ID: id, Domain: domain}
		if mod != nil {
			mod(&e)
		}
		return e
	}
	leader, w1 := pod(domain+"-leader"), pod(domain+"-w1")
	down := &health.DomainStatus{Domain: domain, Groups: []health.GroupStatus{{Healthy: false}, {Healthy: true}}}
	up := &health.DomainStatus{Domain: domain, Healthy: true, Groups: []health.GroupStatus{{Healthy: true}, {Healthy: true}}}
	return []eviction.Event{
		ev(0, eviction.EventDomainStarted, nil),
		ev(0, eviction.EventPlanned, nil),
		ev(1, eviction.EventCordoned, nil),
		ev(1, eviction.EventPhaseStarted, func(e *eviction.Event) { e.Stage = eviction.StagePhase1 }),
		ev(1, eviction.EventEvicting, func(e *eviction.Event) { e.Pod = leader }),
		ev(1, eviction.EventBlocked, func(e *eviction.Event) { e.Pod, e.Request = leader, eviction.RequestBudgetRefused }),
		ev(41, eviction.EventUnblocked, func(e *eviction.Event) { e.Pod = leader }),
		ev(41, eviction.EventEvicted, func(e *eviction.Event) { e.Pod, e.Request = leader, eviction.RequestEvicted }),
		ev(41, eviction.EventPhaseDone, func(e *eviction.Event) { e.Stage = eviction.StagePhase1 }),
		ev(41, eviction.EventPhaseStarted, func(e *eviction.Event) { e.Stage = eviction.StagePhase2 }),
		ev(42, eviction.EventRetrying, func(e *eviction.Event) { e.Pod, e.Request = w1, eviction.RequestWebhookRefused }),
		ev(43, eviction.EventRetrying, func(e *eviction.Event) { e.Pod, e.Request = w1, eviction.RequestError }),
		ev(44, eviction.EventEvicted, func(e *eviction.Event) { e.Pod, e.Request = w1, eviction.RequestEvicted }),
		ev(44, eviction.EventPhaseDone, func(e *eviction.Event) { e.Stage = eviction.StagePhase2 }),
		ev(50, eviction.EventDrained, nil),
		ev(50, eviction.EventUpgradeStarted, nil),
		ev(110, eviction.EventUpgradeDone, nil),
		ev(111, eviction.EventUncordoned, nil),
		ev(112, eviction.EventWaitingRecovery, func(e *eviction.Event) { e.Health = down }),
		ev(141, eviction.EventRecovered, func(e *eviction.Event) { e.Health = up }),
		ev(141, eviction.EventDomainDone, nil),
	}
}

func newRecorder(t *testing.T) (*Recorder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	r, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return r, reg
}

// gauge reads one series of a gathered family: the value of a gauge or
// counter, the count of a histogram.
func value(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func TestRecorder(t *testing.T) {
	// series names one series: a metric and "label=value,..." labels.
	type series struct{ name, labels string }
	parse := func(l string) map[string]string {
		out := map[string]string{}
		for _, kv := range strings.Split(l, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		events []eviction.Event
		want   map[series]float64 // absent: want = -1
	}{
		{"a rollout of one domain", rolloutOf("r1", "ud-1", 0), map[series]float64{
			{EvictionRequests, "result=evicted"}:                 2,
			{EvictionRequests, "result=budget_refused"}:          1,
			{EvictionRequests, "result=webhook_refused"}:         1,
			{EvictionRequests, "result=error"}:                   1,
			{EvictionRequests, "result=gone"}:                    0,
			{BudgetBlockedPods, ""}:                              0,
			{BudgetWait, ""}:                                     1, // one wait observed
			{DomainPhaseDuration, "domain=ud-1,phase=phase1"}:    40,
			{DomainPhaseDuration, "domain=ud-1,phase=phase2"}:    3,
			{DomainPhaseDuration, "domain=ud-1,phase=wait_gone"}: 6,
			{DomainPhaseDuration, "domain=ud-1,phase=drain"}:     50,
			{DomainPhaseDuration, "domain=ud-1,phase=upgrade"}:   60,
			{DomainPhaseDuration, "domain=ud-1,phase=recovery"}:  30,
			{DomainPhaseDuration, "domain=ud-1,phase=domain"}:    141,
			{PhaseDuration, "phase=domain"}:                      1,
			{DomainState, "domain=ud-1,state=done"}:              1,
			{DomainState, "domain=ud-1,state=recovering"}:        -1,
			{Domains, "state=done"}:                              1,
			{Domains, "state=draining"}:                          0,
			{GroupsDown, "domain=ud-1"}:                          0,
			{Events, "type=Evicted"}:                             2,
		}},
		{"a rollout stopped while blocked, holding its Lease", append([]eviction.Event{
			{Time: at(0), Type: eviction.EventLockAcquired, ID: "r1"},
		}, append(rolloutOf("r1", "ud-1", 0)[:6],
			eviction.Event{Time: at(10), Type: eviction.EventDrainStopped, ID: "r1", Domain: "ud-1"})...), map[series]float64{
			{BudgetBlockedPods, ""}:                           0,
			{BudgetWait, ""}:                                  0,
			{DomainState, "domain=ud-1,state=failed"}:         1,
			{DomainPhaseDuration, "domain=ud-1,phase=phase1"}: -1,
			{RolloutLockHeld, ""}:                             1,
		}},
		{"waiting for the budget and recovering, mid-rollout", append(rolloutOf("r1", "ud-1", 0)[:6],
			eviction.Event{Time: at(0), Type: eviction.EventLockAcquired, ID: "r2"},
			eviction.Event{Time: at(1), Type: eviction.EventLockAcquired, ID: "r3"},
			eviction.Event{Time: at(2), Type: eviction.EventLockLost, ID: "r3"},
			rolloutOf("r2", "ud-2", 0)[18]), map[series]float64{
			{BudgetBlockedPods, ""}:                       1,
			{DomainState, "domain=ud-1,state=draining"}:   1,
			{DomainState, "domain=ud-2,state=recovering"}: 1,
			{Domains, "state=draining"}:                   1,
			{Domains, "state=recovering"}:                 1,
			{GroupsDown, "domain=ud-2"}:                   1,
			{RolloutLockHeld, ""}:                         1,
			{RolloutLockLost, ""}:                         1,
		}},
		{"dry runs and Drainer.Plan change no state", []eviction.Event{
			{Time: at(0), Type: eviction.EventPlanned, ID: eviction.PlanIDPrefix + "0a0b0c0d", Domain: "ud-1"},
			{Time: at(0), Type: eviction.EventPlanned, ID: "drain", Domain: "ud-2", DryRun: "server"},
			{Time: at(0), Type: eviction.EventDryRun, ID: "drain", Domain: "ud-2", DryRun: "server", Pod: pod("a")},
		}, map[series]float64{
			{DomainState, "domain=ud-1"}:         -1,
			{DomainState, "domain=ud-2"}:         -1,
			{Events, "type=Planned"}:             2,
			{EvictionRequests, "result=evicted"}: 0,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, reg := newRecorder(t)
			for _, e := range tc.events {
				r.Record(context.Background(), e)
			}
			got, want := map[string]float64{}, map[string]float64{}
			for s, w := range tc.want {
				key := s.name + "{" + s.labels + "}"
				want[key] = w
				v, ok := value(t, reg, s.name, parse(s.labels))
				if !ok {
					v = -1
				}
				got[key] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("series (-want +got; -1 is absent):\n%s", diff)
			}
			if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %+v", err, problems)
			}
		})
	}
}

func TestNewNeedsARegisterer(t *testing.T) {
	var cfg *udrain.ConfigError
	if _, err := New(nil); !errors.As(err, &cfg) {
		t.Errorf("New(nil) = %v, want a ConfigError", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if _, err := New(reg); !errors.As(err, &are) {
		t.Errorf("a second Recorder on one registry: %v, want prometheus.AlreadyRegisteredError", err)
	}
	// Each wrapped with a label value of its own, two Recorders share a
	// registry.
	shared := prometheus.NewRegistry()
	for _, pool := range []string{"a", "b"} {
		if _, err := New(prometheus.WrapRegistererWith(prometheus.Labels{"pool": pool}, shared)); err != nil {
			t.Errorf("Recorder wrapped with pool=%s: %v", pool, err)
		}
	}
}

// Every series stays bounded however many pods a rollout evicts: a
// rollout of the performance tests' fleet (2,000 nodes in 20 domains,
// 20,000 pods) gives the same series as one of 20 pods.
func TestSeriesBoundedAtFleetScale(t *testing.T) {
	count := func(domains, podsPerDomain int) int {
		r, reg := newRecorder(t)
		for d := 1; d <= domains; d++ {
			domain := fmt.Sprintf("ud-%d", d)
			events := rolloutOf("fleet", domain, d*1000)
			head, tail := events[:9], events[9:]
			for _, e := range head {
				r.Record(context.Background(), e)
			}
			for p := range podsPerDomain {
				e := eviction.Event{Time: at(d*1000 + 42), Type: eviction.EventEvicted, ID: "fleet", Domain: domain,
					Pod: pod(fmt.Sprintf("%s-p%d", domain, p)), Request: eviction.RequestEvicted}
				r.Record(context.Background(), e)
				e.Type, e.Request = eviction.EventGone, ""
				r.Record(context.Background(), e)
			}
			for _, e := range tail {
				r.Record(context.Background(), e)
			}
		}
		n, err := testutil.GatherAndCount(reg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	small, fleet := count(20, 1), count(20, 1000)
	if small != fleet {
		t.Errorf("%d series for 20 pods, %d for 20,000: a label grows with pods", small, fleet)
	}
	t.Logf("series for a rollout of 20 domains and 20,000 pods: %d", fleet)
	if fleet > 500 {
		t.Errorf("%d series for 20 domains, want at most 500", fleet)
	}
}

// The metrics are scraped as Prometheus would: over HTTP from a real
// listener, in the text format, parsed by Prometheus's own parser.
func TestScrapeOverHTTP(t *testing.T) {
	r, reg := newRecorder(t)
	for _, e := range rolloutOf("r1", "ud-1", 0) {
		r.Record(context.Background(), e)
	}
	members, err := NewMembers(reg)
	if err != nil {
		t.Fatal(err)
	}
	members.Record("llm-0-1", true)
	gate, err := NewGateWrites(reg)
	if err != nil {
		t.Fatal(err)
	}
	gate.Record("True")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	for _, name := range Names() {
		if _, ok := families[name]; !ok {
			t.Errorf("the scrape has no %s", name)
		}
	}
	find := func(name string, label, val string) *dto.Metric {
		for _, m := range families[name].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == val {
					return m
				}
			}
		}
		return nil
	}
	if m := find(EvictionRequests, "result", "evicted"); m == nil || m.GetCounter().GetValue() != 2 {
		t.Errorf("scraped evicted requests %v, want 2", m)
	}
	if m := families[BudgetWait].GetMetric(); len(m) != 1 || m[0].GetHistogram().GetSampleSum() != 40 {
		t.Errorf("scraped budget wait %v, want one wait of 40s", m)
	}
}

// A rollout's domains show as pending from its start, and a domain where it
// stops as failed, whatever stage it stopped in.
func TestRolloutDomainStates(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	state := func() map[string]float64 {
		out := map[string]float64{}
		for _, s := range []State{StatePending, StateDraining, StateRecovering, StateFailed, StateDone} {
			out[string(s)] = testutil.ToFloat64(r.domains.WithLabelValues(string(s)))
		}
		return out
	}
	steps := []struct {
		e    eviction.Event
		want map[string]float64
	}{
		{eviction.Event{Type: eviction.EventRolloutStarted, Domains: []string{"ud-1", "ud-2"}},
			map[string]float64{"pending": 2, "draining": 0, "recovering": 0, "failed": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventDomainStarted, Domain: "ud-1"},
			map[string]float64{"pending": 1, "draining": 1, "recovering": 0, "failed": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventRecoveryStarted, Domain: "ud-1"},
			map[string]float64{"pending": 1, "draining": 0, "recovering": 1, "failed": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventRolloutStopped, Domain: "ud-1"},
			map[string]float64{"pending": 1, "draining": 0, "recovering": 0, "failed": 1, "done": 0}},
	}
	for i, s := range steps {
		s.e.Time = at.Add(time.Duration(i) * time.Second)
		r.Record(context.Background(), s.e)
		if diff := cmp.Diff(s.want, state()); diff != "" {
			t.Errorf("after %s (-want +got):\n%s", s.e.Type, diff)
		}
	}
	if got := testutil.ToFloat64(r.domainPhase.WithLabelValues("ud-1", string(PhaseRecovery))); got != 0 {
		t.Errorf("recovery phase of a stopped domain recorded as %v, want none", got)
	}
}

// TestRecorderCountsNamespaceTerminating: an eviction refused because the
// pod's namespace is being deleted is counted as such, retried or not.
func TestRecorderCountsNamespaceTerminating(t *testing.T) {
	r, reg := newRecorder(t)
	p := pod("llm-0")
	r.Record(context.Background(), eviction.Event{Time: at(0), Type: eviction.EventRetrying, Domain: "ud-1", Pod: p, Request: eviction.RequestNamespaceTerminating})
	r.Record(context.Background(), eviction.Event{Time: at(1), Type: eviction.EventEvicted, Domain: "ud-1", Pod: p, Request: eviction.RequestNamespaceTerminating})
	for result, want := range map[Result]float64{ResultNamespaceTerminating: 2, ResultError: 0, ResultEvicted: 0} {
		if got, _ := value(t, reg, EvictionRequests, map[string]string{"result": string(result)}); got != want {
			t.Errorf("%s{result=%s} = %v, want %v", EvictionRequests, result, got, want)
		}
	}
}

// With parallel domains, every domain in flight has its own state at
// once, and a domain held back shows as held until it starts.
func TestParallelDomainStates(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	state := func() map[string]float64 {
		out := map[string]float64{}
		for _, s := range []State{StatePending, StateHeld, StateDraining, StateUpgrading, StateRecovering, StateDone} {
			out[string(s)] = testutil.ToFloat64(r.domains.WithLabelValues(string(s)))
		}
		return out
	}
	steps := []struct {
		e    eviction.Event
		want map[string]float64
	}{
		{eviction.Event{Type: eviction.EventRolloutStarted, Domains: []string{"ud-1", "ud-2", "ud-3"}},
			map[string]float64{"pending": 3, "held": 0, "draining": 0, "upgrading": 0, "recovering": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventDomainStarted, Domain: "ud-1"},
			map[string]float64{"pending": 2, "held": 0, "draining": 1, "upgrading": 0, "recovering": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventDomainStarted, Domain: "ud-2"},
			map[string]float64{"pending": 1, "held": 0, "draining": 2, "upgrading": 0, "recovering": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventDomainHeld, Domain: "ud-3"},
			map[string]float64{"pending": 0, "held": 1, "draining": 2, "upgrading": 0, "recovering": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventUpgradeStarted, Domain: "ud-2"},
			map[string]float64{"pending": 0, "held": 1, "draining": 1, "upgrading": 1, "recovering": 0, "done": 0}},
		{eviction.Event{Type: eviction.EventRecoveryStarted, Domain: "ud-1"},
			map[string]float64{"pending": 0, "held": 1, "draining": 0, "upgrading": 1, "recovering": 1, "done": 0}},
		{eviction.Event{Type: eviction.EventDomainDone, Domain: "ud-1"},
			map[string]float64{"pending": 0, "held": 1, "draining": 0, "upgrading": 1, "recovering": 0, "done": 1}},
		{eviction.Event{Type: eviction.EventDomainStarted, Domain: "ud-3"},
			map[string]float64{"pending": 0, "held": 0, "draining": 1, "upgrading": 1, "recovering": 0, "done": 1}},
	}
	for i, s := range steps {
		s.e.Time = at.Add(time.Duration(i) * time.Second)
		r.Record(context.Background(), s.e)
		if diff := cmp.Diff(s.want, state()); diff != "" {
			t.Errorf("after %s of %s (-want +got):\n%s", s.e.Type, s.e.Domain, diff)
		}
	}
}
