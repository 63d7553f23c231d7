package eviction

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/clusterinformers"
)

// Every eviction request is reported by exactly one event carrying its
// answer, so that a sink (package metrics) counts requests by result from
// events alone.
func TestEveryEvictionRequestIsReportedWithItsResult(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 3)...)
	var mu sync.Mutex
	tries := map[string]int{}
	sent := 0
	fc.onEvict = func(ns, name string, dryRun bool) error {
		if dryRun {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		sent++
		tries[name]++
		if tries[name] > 1 {
			return nil
		}
		switch name {
		case "llm-0": // the leader, phase 1
			return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		case "llm-0-1":
			return webhookRefusal(true)
		case "llm-0-2":
			return apierrors.NewServiceUnavailable("the server is restarting")
		}
		return nil
	}
	log := newEventLog()
	fast := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}
	d, _ := New(fc.client, Options{Backoff: fast, OnEvent: log.add})
	if _, _, err := d.Drain(ctx, "ud-1", DrainOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[RequestResult]int{}
	for _, e := range log.all() {
		if e.Request == "" {
			continue
		}
		got[e.Request]++
		if e.Pod == nil {
			t.Errorf("%s event with Request %s names no pod", e.Type, e.Request)
		}
		if e.Request != RequestEvicted && e.Request != RequestBudgetRefused && e.Error == "" {
			t.Errorf("%s event with Request %s has no Error", e.Type, e.Request)
		}
	}
	want := map[RequestResult]int{RequestEvicted: 3, RequestBudgetRefused: 1, RequestWebhookRefused: 1, RequestError: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events by request result (-want +got):\n%s", diff)
	}
	if n := got[RequestEvicted] + got[RequestBudgetRefused] + got[RequestWebhookRefused] + got[RequestError]; n != sent {
		t.Errorf("%d events report a request, %d requests were sent", n, sent)
	}
}

// An eviction that fails for good and the drain it stops are events, with
// the error's message kept in JSON.
func TestFailedEvictionAndStoppedDrainAreEvents(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 3)...)
	fc.onEvict = func(ns, name string, dryRun bool) error {
		if name == "llm-0" && !dryRun {
			return webhookRefusal(true)
		}
		return nil
	}
	log := newEventLog()
	fast := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}
	d, _ := New(fc.client, Options{Backoff: fast, OnEvent: log.add})
	_, _, err := d.Drain(ctx, "ud-1", DrainOptions{ID: "drain-a"})
	var ae *PermissionError
	if !asReason(err, &ae, ReasonDenied) {
		t.Fatalf("err = %v, want a *PermissionError, ReasonDenied", err)
	}
	failed := log.ofType(EventEvictionFailed)
	if len(failed) != 1 || failed[0].Pod.Name != "llm-0" || failed[0].Request != RequestWebhookRefused || !asReason(failed[0].Err, &ae, ReasonDenied) {
		t.Fatalf("EvictionFailed events %+v, want one for llm-0, WebhookRefused, with the *PermissionError", failed)
	}
	stopped := log.ofType(EventDrainStopped)
	if len(stopped) != 1 || stopped[0].ID != "drain-a" || stopped[0].Domain != "ud-1" || stopped[0].Err == nil {
		t.Fatalf("DrainStopped events %+v, want one for drain-a in ud-1 with the error", stopped)
	}
	b, err := json.Marshal(stopped[0])
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Error == "" || back.Error != stopped[0].Err.Error() || !strings.Contains(back.Error, "KV cache") {
		t.Errorf("the event's JSON %s does not keep the error's message %q", b, stopped[0].Err)
	}
}

// Events are numbered per Drainer, across its calls, without gaps, so a
// sink can drop one it has seen; the Planned event of Plan has an ID.
func TestEventsAreNumberedAndPlanHasAnID(t *testing.T) {
	ctx := testContext(t)
	fc := newFakeCluster(t, lwsCluster(2, 1, 2)...)
	log := newEventLog()
	d, _ := New(fc.client, Options{Backoff: slowBackoff, OnEvent: log.add})
	if _, err := d.Plan(ctx, "ud-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Plan(ctx, "ud-2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Drain(ctx, "ud-1", DrainOptions{}); err != nil {
		t.Fatal(err)
	}
	events := log.all()
	for i, e := range events {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d (%s) has Seq %d, want %d", i, e.Type, e.Seq, i+1)
		}
	}
	planned := log.ofType(EventPlanned)
	if len(planned) != 3 {
		t.Fatalf("%d Planned events, want 3", len(planned))
	}
	a, b := planned[0].ID, planned[1].ID
	if !strings.HasPrefix(a, PlanIDPrefix) || !strings.HasPrefix(b, PlanIDPrefix) || a == b {
		t.Errorf("Plan's Planned events have IDs %q and %q, want two different IDs starting with %q", a, b, PlanIDPrefix)
	}
	if planned[2].ID != DefaultDrainID {
		t.Errorf("Drain's Planned event has ID %q, want %q", planned[2].ID, DefaultDrainID)
	}
}

// The gaps a controller author hit (issue 23): bad input is a ConfigError
// before anything is read, and the Informer interface says what New needs.
func TestNilSnapshotIsAConfigError(t *testing.T) {
	var cfg *udrain.ConfigError
	plan, err := NewPlan("ud-x", nil, Options{})
	if !errors.As(err, &cfg) || cfg.Field != "eviction.NewPlan(snap)" || plan != nil {
		t.Fatalf("NewPlan with a nil snapshot = %v, %v; want a ConfigError on eviction.NewPlan(snap)", plan, err)
	}
}

func TestInformerInterfaceHasGetStore(t *testing.T) {
	// A wrapper that forwards only events and HasSynced used to compile
	// as an Informer and fail in New; now it does not compile.
	if _, ok := reflect.TypeFor[clusterinformers.Informer]().MethodByName("GetStore"); !ok {
		t.Error("clusterinformers.Informer has no GetStore method, which every call needs")
	}
}
