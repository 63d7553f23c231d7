package readiness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/readiness"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// scriptedCheck returns the errors of script one after the other (the last
// one for ever after) and counts its calls.
type scriptedCheck struct {
	mu     sync.Mutex
	script []error
	calls  int
}

func (s *scriptedCheck) Check(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.script) == 0 {
		return nil
	}
	err := s.script[0]
	if len(s.script) > 1 {
		s.script = s.script[1:]
	}
	return err
}

func (s *scriptedCheck) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func fixed(err error) readiness.CheckFunc {
	return func(context.Context) error { return err }
}

func TestNewCheckerRejects(t *testing.T) {
	ok := fixed(nil)
	tests := []struct {
		name      string
		members   []readiness.Member
		opts      readiness.Options
		wantField string
	}{
		{"no members", nil, readiness.Options{}, "readiness.NewChecker(members)"},
		{"empty name", []readiness.Member{{Name: "", Check: ok}}, readiness.Options{}, "readiness.Member.Name"},
		{"slash in name", []readiness.Member{{Name: "a/b", Check: ok}}, readiness.Options{}, "readiness.Member.Name"},
		{"name starting with a dot", []readiness.Member{{Name: "..", Check: ok}}, readiness.Options{}, "readiness.Member.Name"},
		{"long name", []readiness.Member{{Name: strings.Repeat("a", 254), Check: ok}}, readiness.Options{}, "readiness.Member.Name"},
		{"duplicate", []readiness.Member{{Name: "a", Check: ok}, {Name: "a", Check: ok}}, readiness.Options{}, "readiness.Member.Name"},
		{"nil check", []readiness.Member{{Name: "a"}}, readiness.Options{}, "readiness.Member.Check"},
		{"negative member timeout", []readiness.Member{{Name: "a", Check: ok}}, readiness.Options{MemberTimeout: -1}, "readiness.Options.MemberTimeout"},
		{"negative timeout", []readiness.Member{{Name: "a", Check: ok}}, readiness.Options{Timeout: -1}, "readiness.Options.Timeout"},
		{"member timeout above timeout", []readiness.Member{{Name: "a", Check: ok}}, readiness.Options{MemberTimeout: time.Second, Timeout: time.Millisecond}, "readiness.Options.MemberTimeout"},
		{"negative threshold", []readiness.Member{{Name: "a", Check: ok}}, readiness.Options{FailureThreshold: -1}, "readiness.Options.FailureThreshold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readiness.NewChecker(tt.members, tt.opts)
			var config *udrain.ConfigError
			if !errors.As(err, &config) {
				t.Fatalf("NewChecker = %v, want a *ConfigError", err)
			}
			if config.Field != tt.wantField {
				t.Errorf("Field = %q, want %q (error: %v)", config.Field, tt.wantField, err)
			}
		})
	}
}

func TestNewCheckerAcceptsLongMemberTimeoutWithDefaultTimeout(t *testing.T) {
	// Timeout 0 follows a MemberTimeout above its default.
	if _, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: fixed(nil)}}, readiness.Options{MemberTimeout: 2 * time.Second}); err != nil {
		t.Errorf("NewChecker = %v, want nil", err)
	}
}

func TestNewCheckerCopiesMembers(t *testing.T) {
	members := []readiness.Member{{Name: "a", Check: fixed(nil)}}
	c, err := readiness.NewChecker(members, readiness.Options{Clock: testingclock.NewFakePassiveClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	members[0] = readiness.Member{Name: "evil", Check: fixed(errors.New("x"))}
	if diff := cmp.Diff([]string{"a"}, names(c.Check(t.Context()))); diff != "" {
		t.Errorf("members changed after NewChecker (-want +got):\n%s", diff)
	}
}

func names(r readiness.Report) []string {
	var out []string
	for _, m := range r.Members {
		out = append(out, m.Name)
	}
	return out
}

func TestCheckReusesResultsForTTL(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	check := &scriptedCheck{}
	c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: check.Check}}, readiness.Options{TTL: 10 * time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance       time.Duration
		wantCalls     int
		wantCheckedAt time.Time
	}{
		{0, 1, t0},
		{0, 1, t0},
		{10*time.Second - time.Nanosecond, 1, t0},
		{time.Nanosecond, 2, t0.Add(10 * time.Second)},
		{5 * time.Second, 2, t0.Add(10 * time.Second)},
		{time.Hour, 3, t0.Add(time.Hour + 15*time.Second)},
	}
	for i, s := range steps {
		clock.SetTime(clock.Now().Add(s.advance))
		r := c.Check(t.Context())
		if got := check.Calls(); got != s.wantCalls {
			t.Errorf("step %d: %d calls, want %d", i, got, s.wantCalls)
		}
		if !r.CheckedAt.Equal(s.wantCheckedAt) {
			t.Errorf("step %d: CheckedAt = %v, want %v", i, r.CheckedAt, s.wantCheckedAt)
		}
	}
}

func TestCheckWithNegativeTTLChecksEveryTime(t *testing.T) {
	check := &scriptedCheck{}
	c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: check.Check}}, readiness.Options{TTL: -1, Clock: testingclock.NewFakePassiveClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c.Check(t.Context())
	}
	if got := check.Calls(); got != 3 {
		t.Errorf("%d calls, want 3", got)
	}
}

// doneSignal is a context that reports when someone waits on it.
type doneSignal struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (d *doneSignal) Done() <-chan struct{} {
	d.once.Do(func() { close(d.waiting) })
	return d.Context.Done()
}

func TestConcurrentChecksShareOneFanOut(t *testing.T) {
	// TTL < 0: nothing is cached, so only sharing the fan-out in
	// progress can keep the count at one.
	entered := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	check := func(context.Context) error {
		if calls.Add(1) == 1 {
			close(entered)
		}
		<-release
		return nil
	}
	c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: check}}, readiness.Options{TTL: -1, MemberTimeout: time.Hour, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const joiners = 50
	var wg sync.WaitGroup
	reports := make(chan readiness.Report, joiners+1)
	wg.Go(func() { reports <- c.Check(t.Context()) })
	<-entered
	for range joiners {
		ctx := &doneSignal{Context: t.Context(), waiting: make(chan struct{})}
		wg.Go(func() { reports <- c.Check(ctx) })
		<-ctx.waiting // this request now waits on the fan-out in progress
	}
	close(release)
	wg.Wait()
	close(reports)
	if got := calls.Load(); got != 1 {
		t.Errorf("%d calls for %d concurrent requests, want 1", got, joiners+1)
	}
	for r := range reports {
		if !r.Ready() {
			t.Errorf("a request got an unready report: %+v", r)
		}
	}
}

func TestBurstOfRequestsChecksEachMemberOncePerTTL(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	const members = 16
	checks := make([]*scriptedCheck, members)
	var list []readiness.Member
	for i := range checks {
		checks[i] = &scriptedCheck{}
		list = append(list, readiness.Member{Name: fmt.Sprintf("w-%d", i), Check: checks[i].Check})
	}
	// The fan-out's timeouts are real time and not what the test is
	// about: with their defaults (500 ms a member, 800 ms a fan-out), a
	// loaded machine running the burst's 1000 requests under the race
	// detector did not finish a fan-out in time, and every request got 500.
	c, err := readiness.NewChecker(list, readiness.Options{TTL: time.Second, Clock: clock, MemberTimeout: time.Minute, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	burst := func() {
		var wg sync.WaitGroup
		for i := range 1000 {
			wg.Go(func() {
				path := "/readyz"
				if i%2 == 1 {
					path = fmt.Sprintf("/readyz/w-%d", i%members)
				}
				if code := serve(h, path).Code; code != 200 {
					t.Errorf("GET %s = %d, want 200", path, code)
				}
			})
		}
		wg.Wait()
	}
	for round := 1; round <= 3; round++ {
		burst()
		for i, check := range checks {
			if got := check.Calls(); got != round {
				t.Errorf("after burst %d: member w-%d checked %d times, want %d", round, i, got, round)
			}
		}
		clock.SetTime(clock.Now().Add(time.Second))
	}
}

func TestConsecutiveFailures(t *testing.T) {
	soft := errors.New("503")
	hard := readiness.Gone(errors.New("evicted"))
	tests := []struct {
		name      string
		threshold int
		script    []error
		wantReady []bool
	}{
		{"default counts the first failure", 0, []error{nil, soft, nil}, []bool{true, false, true}},
		{"threshold 3 tolerates two", 3, []error{nil, soft, soft, soft, nil, soft}, []bool{true, true, true, false, true, true}},
		{"hard failure is down at once", 3, []error{nil, hard, nil}, []bool{true, false, true}},
		{"a first failure below threshold is ready", 2, []error{soft, soft}, []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testingclock.NewFakePassiveClock(t0)
			check := &scriptedCheck{script: tt.script}
			c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: check.Check}}, readiness.Options{FailureThreshold: tt.threshold, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			var got []bool
			for range tt.script {
				got = append(got, c.Check(t.Context()).Ready())
				clock.SetTime(clock.Now().Add(readiness.DefaultTTL))
			}
			if diff := cmp.Diff(tt.wantReady, got); diff != "" {
				t.Errorf("readiness per check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotCheckedYetIsNotReady(t *testing.T) {
	release := make(chan struct{})
	c, err := readiness.NewChecker([]readiness.Member{
		{Name: "a", Check: fixed(nil)},
		{Name: "slow", Check: func(context.Context) error { <-release; return nil }},
	}, readiness.Options{MemberTimeout: time.Hour, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)

	before := c.Snapshot()
	if before.Ready() || !before.CheckedAt.IsZero() {
		t.Errorf("Snapshot before any check: ready %v, CheckedAt %v; want not ready, zero", before.Ready(), before.CheckedAt)
	}
	// A request that gives up while the first fan-out runs gets what is
	// known: nothing.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := c.Check(ctx)
	if r.Ready() {
		t.Error("Check with a canceled context before any result: ready, want not ready")
	}
	for _, m := range r.Members {
		if !errors.Is(m.Err, readiness.ErrNotCheckedYet) {
			t.Errorf("member %s: verdict %v, want ErrNotCheckedYet", m.Name, m.Err)
		}
	}
}

func TestHangingCheckIsAbandonedAndNotPiledUp(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	release := make(chan struct{})
	var calls atomic.Int32
	ignoresContext := func(context.Context) error {
		calls.Add(1)
		<-release
		return nil
	}
	c, err := readiness.NewChecker([]readiness.Member{
		{Name: "ok", Check: fixed(nil)},
		{Name: "stuck", Check: ignoresContext},
	}, readiness.Options{MemberTimeout: 200 * time.Millisecond, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	verdicts := func(r readiness.Report) map[string]string {
		out := map[string]string{}
		for _, m := range r.Members {
			out[m.Name] = fmt.Sprint(m.Err)
		}
		return out
	}

	first := c.Check(t.Context())
	if diff := cmp.Diff(map[string]string{"ok": "<nil>", "stuck": "no answer within 200ms: context deadline exceeded"}, verdicts(first)); diff != "" {
		t.Errorf("first fan-out (-want +got):\n%s", diff)
	}
	clock.SetTime(clock.Now().Add(time.Minute))
	second := c.Check(t.Context())
	if diff := cmp.Diff(map[string]string{"ok": "<nil>", "stuck": "the previous check has not returned yet: no answer within 200ms: context deadline exceeded"}, verdicts(second)); diff != "" {
		t.Errorf("second fan-out (-want +got):\n%s", diff)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("stuck check started %d times, want 1 (no second goroutine behind a stuck one)", got)
	}
}

func TestLatePassCountsAsTimeout(t *testing.T) {
	late := func(ctx context.Context) error {
		<-ctx.Done()
		return nil // ignores that the deadline passed
	}
	c, err := readiness.NewChecker([]readiness.Member{{Name: "late", Check: late}}, readiness.Options{MemberTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Check(t.Context())
	if m, _ := r.Member("late"); !errors.Is(m.Err, context.DeadlineExceeded) {
		t.Errorf("verdict %v, want a timeout", m.Err)
	}
}

func TestPanickingCheckFails(t *testing.T) {
	c, err := readiness.NewChecker([]readiness.Member{{Name: "p", Check: func(context.Context) error { panic("bad check") }}}, readiness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Check(t.Context()).Member("p")
	if m.Err == nil || !strings.Contains(m.Err.Error(), "check panicked: bad check") {
		t.Errorf("verdict %v, want the panic as an error", m.Err)
	}
}

func TestOnChange(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	a := &scriptedCheck{script: []error{nil, nil, errors.New("503"), errors.New("503"), nil}}
	b := &scriptedCheck{script: []error{errors.New("down")}}
	var changes []string
	c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: a.Check}, {Name: "b", Check: b.Check}}, readiness.Options{
		Clock:    clock,
		OnChange: func(m readiness.MemberResult) { changes = append(changes, fmt.Sprintf("%s: %v", m.Name, m.Err)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		c.Check(t.Context())
		clock.SetTime(clock.Now().Add(readiness.DefaultTTL))
	}
	want := []string{"a: <nil>", "b: down", "a: 503", "a: <nil>"}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

func TestOnChangeMayReadTheChecker(t *testing.T) {
	var c *readiness.Checker
	var readyInCallback []bool
	c, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: fixed(nil)}}, readiness.Options{
		TTL:      -1,
		OnChange: func(readiness.MemberResult) { readyInCallback = append(readyInCallback, c.Snapshot().Ready()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Check(t.Context())
	c.Check(t.Context()) // no change, no call
	if diff := cmp.Diff([]bool{true}, readyInCallback); diff != "" {
		t.Errorf("Snapshot().Ready() seen by OnChange (-want +got):\n%s", diff)
	}
}

func TestReportMember(t *testing.T) {
	r := readiness.Report{Members: []readiness.MemberResult{{Name: "a"}, {Name: "b", Err: readiness.ErrNotCheckedYet}}}
	if m, ok := r.Member("b"); !ok || m.Name != "b" {
		t.Errorf("Member(b) = %v, %v", m, ok)
	}
	if _, ok := r.Member("c"); ok {
		t.Error("Member(c) found, want not found")
	}
	if r.Ready() {
		t.Error("Ready with a member not checked yet, want not ready")
	}
}
