package readiness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/udrain/udrain"
)

// Defaults of [Options]. The kubelet's default probe timeoutSeconds is 1: a
// probe that waits for a whole fan-out must get its answer before that.
const (
	// DefaultMemberTimeout bounds one member's check.
	DefaultMemberTimeout = 500 * time.Millisecond
	// DefaultTimeout bounds a whole fan-out over all members.
	DefaultTimeout = 800 * time.Millisecond
	// DefaultTTL is how long the results of a fan-out are reused.
	DefaultTTL = time.Second
)

// Options tunes a [Checker]. The zero value gives the defaults.
type Options struct {
	// MemberTimeout bounds one member's check; 0 means DefaultMemberTimeout.
	// A member that has not answered by then failed this check (softly).
	MemberTimeout time.Duration
	// Timeout bounds a whole fan-out; 0 means DefaultTimeout, or
	// MemberTimeout if that is longer. Keep it below the readiness probe's
	// timeoutSeconds: a probe may have to wait for a whole fan-out.
	Timeout time.Duration
	// TTL is how long the results of a fan-out, measured from its start,
	// answer further requests without checking again; 0 means DefaultTTL,
	// a negative TTL reuses nothing (concurrent requests still share one
	// fan-out).
	TTL time.Duration
	// FailureThreshold is the number of consecutive soft failures after
	// which a reachable member counts as down; 0 or 1 means the first.
	// Hard failures (see [ClassOf]) count at once.
	FailureThreshold int
	// Clock tells the time for the TTL; nil means the system clock. Tests
	// pass a fake from k8s.io/utils/clock/testing.
	Clock clock.PassiveClock
	// ExposeMemberErrors makes /readyz/<member> answer with the member's
	// last error in full instead of its [Reason]. The full error names the
	// member's URL (with credentials redacted), its address and the DNS
	// resolver's, and the start of an unhealthy answer's body: off by
	// default, since the endpoint answers whoever can reach the pod. The
	// errors given to OnChange, for logs, are always full (and redacted).
	ExposeMemberErrors bool
	// OnChange, if set, is called with a member's result each time its
	// verdict changes between healthy and not (the first check counts as a
	// change). It runs in the fan-out, before the waiting requests are
	// answered, one call at a time and in member order: keep it short.
	OnChange func(MemberResult)
}

// withDefaults fills in the defaults and validates o.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.MemberTimeout < 0:
		return o, optionError("MemberTimeout", "%v is negative; use 0 for the default (%v)", o.MemberTimeout, DefaultMemberTimeout)
	case o.Timeout < 0:
		return o, optionError("Timeout", "%v is negative; use 0 for the default (%v)", o.Timeout, DefaultTimeout)
	case o.FailureThreshold < 0:
		return o, optionError("FailureThreshold", "%d is negative; use 0 or 1 to count the first failure", o.FailureThreshold)
	}
	if o.MemberTimeout == 0 {
		o.MemberTimeout = DefaultMemberTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = max(DefaultTimeout, o.MemberTimeout)
	}
	if o.MemberTimeout > o.Timeout {
		return o, &udrain.ConfigError{Field: "readiness.Options.MemberTimeout", See: []string{"readiness.Options.Timeout"},
			Problem: fmt.Sprintf("%v is longer than the timeout of a round of checks (%v); make it shorter or raise that", o.MemberTimeout, o.Timeout)}
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	o.FailureThreshold = max(o.FailureThreshold, 1)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}

// optionError returns a *udrain.ConfigError about the Options field called
// field.
func optionError(field, format string, args ...any) error {
	return &udrain.ConfigError{Field: "readiness.Options." + field, Problem: fmt.Sprintf(format, args...)}
}

// Checker checks the members of one group and aggregates their health. Its
// methods are safe for concurrent use. The members are fixed when it is
// built: nothing a request carries can choose what is checked.
type Checker struct {
	members []Member
	byName  map[string]int
	opts    Options

	mu        sync.Mutex
	states    []MemberState
	running   []bool    // a member's check has not returned yet
	checkedAt time.Time // start of the last finished fan-out; zero before
	inflight  *fanOut   // the fan-out in progress, nil if none
}

// fanOut is one round of checks that concurrent requests share.
type fanOut struct {
	done   chan struct{} // closed when report is set
	report Report
}

// NewChecker returns a checker of members, which must be at least one, with
// unique valid names (see [Member]) and non-nil checks. Bad members and
// options are a *udrain.ConfigError naming the field at fault, e.g.
// "readiness.Options.MemberTimeout".
func NewChecker(members []Member, opts Options) (*Checker, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(members) == 0 {
		return nil, &udrain.ConfigError{Field: "readiness.NewChecker(members)", Problem: "none given; pass every pod of the group, or use MembersFromLWSEnv"}
	}
	c := &Checker{
		members: append([]Member(nil), members...),
		byName:  make(map[string]int, len(members)),
		opts:    opts,
		states:  make([]MemberState, len(members)),
		running: make([]bool, len(members)),
	}
	for i, m := range c.members {
		if err := validateName(m.Name); err != nil {
			return nil, err
		}
		if _, dup := c.byName[m.Name]; dup {
			return nil, nameError("%q is given twice; member names must be unique", m.Name)
		}
		if m.Check == nil {
			return nil, &udrain.ConfigError{Field: "readiness.Member.Check", Problem: fmt.Sprintf("member %q has none; use HTTPCheck, TCPCheck or a CheckFunc of your own", m.Name)}
		}
		c.byName[m.Name] = i
	}
	return c, nil
}

// Report is the health of a group at one time.
type Report struct {
	// CheckedAt is the start of the fan-out the results come from; zero if
	// none has finished.
	CheckedAt time.Time
	// Members holds one result per member, in the order given to
	// [NewChecker].
	Members []MemberResult
}

// MemberResult is one member's state and verdict.
type MemberResult struct {
	// Name is the member's name.
	Name string
	// State is what the checks so far have shown.
	State MemberState
	// Err is the verdict: nil if the member counts as healthy, else why not
	// ([ErrNotCheckedYet] or a [*DownError]).
	Err error
}

// Ready reports whether the group is ready: every member counts as healthy.
func (r Report) Ready() bool {
	verdicts := make([]error, len(r.Members))
	for i, m := range r.Members {
		verdicts[i] = m.Err
	}
	return GroupReady(verdicts)
}

// Member returns the result of the member called name, and whether there is
// one.
func (r Report) Member(name string) (MemberResult, bool) {
	for _, m := range r.Members {
		if m.Name == name {
			return m, true
		}
	}
	return MemberResult{}, false
}

// Check returns the group's health. It reuses the results of the last
// fan-out if that started less than the TTL ago, joins the fan-out in
// progress if there is one, and otherwise starts one that checks all members
// concurrently, each within MemberTimeout and all within Timeout. The
// fan-out does not stop when ctx is canceled (other requests may be waiting
// for it), but Check then returns at once with the last known results.
func (c *Checker) Check(ctx context.Context) Report {
	c.mu.Lock()
	if !c.checkedAt.IsZero() && c.opts.TTL > 0 && c.opts.Clock.Now().Sub(c.checkedAt) < c.opts.TTL {
		r := c.reportLocked()
		c.mu.Unlock()
		return r
	}
	f := c.inflight
	if f == nil {
		f = &fanOut{done: make(chan struct{})}
		c.inflight = f
		go c.run(context.WithoutCancel(ctx), f)
	}
	c.mu.Unlock()

	select {
	case <-f.done:
		return f.report
	case <-ctx.Done():
		return c.Snapshot()
	}
}

// Snapshot returns the last known results without checking.
func (c *Checker) Snapshot() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reportLocked()
}

func (c *Checker) reportLocked() Report {
	r := Report{CheckedAt: c.checkedAt, Members: make([]MemberResult, len(c.members))}
	for i, m := range c.members {
		r.Members[i] = MemberResult{Name: m.Name, State: c.states[i], Err: c.states[i].Verdict(c.opts.FailureThreshold)}
	}
	return r
}

// result is what one member's check returned in a fan-out.
type result struct {
	index int
	err   error
}

// run checks every member concurrently, records the results and answers
// the requests waiting on f.
func (c *Checker) run(ctx context.Context, f *fanOut) {
	start := c.opts.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()

	results := make(chan result, len(c.members))
	c.mu.Lock()
	for i := range c.members {
		if c.running[i] {
			// Starting another would pile up goroutines behind a check
			// that ignores its context.
			results <- result{i, fmt.Errorf("the previous check has not returned yet: %w", timeoutError(c.opts.MemberTimeout))}
			continue
		}
		c.running[i] = true
		go c.checkMember(ctx, i, results)
	}
	c.mu.Unlock()

	errs := make([]error, len(c.members))
	for range c.members {
		r := <-results
		errs[r.index] = r.err
	}

	c.mu.Lock()
	var changed []MemberResult
	for i, err := range errs {
		before := c.states[i].Verdict(c.opts.FailureThreshold)
		c.states[i] = c.states[i].Observe(err)
		after := c.states[i].Verdict(c.opts.FailureThreshold)
		if (before == nil) != (after == nil) || c.states[i].Checks == 1 {
			changed = append(changed, MemberResult{Name: c.members[i].Name, State: c.states[i], Err: after})
		}
	}
	c.checkedAt = start
	f.report = c.reportLocked()
	c.mu.Unlock()

	// The fan-out stays in progress until the callbacks return, so that
	// the next one cannot overtake them. Meanwhile requests get the fresh
	// results (or, with TTL < 0, wait), and OnChange may call Snapshot.
	if c.opts.OnChange != nil {
		for _, m := range changed {
			c.opts.OnChange(m)
		}
	}
	c.mu.Lock()
	c.inflight = nil
	c.mu.Unlock()
	close(f.done)
}

// checkMember runs member i's check and sends its result by the member's
// deadline, even if the check itself ignores its context and goes on.
func (c *Checker) checkMember(ctx context.Context, i int, results chan<- result) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.MemberTimeout)
	defer cancel()
	returned := make(chan error, 1)
	go func() {
		err := callCheck(ctx, c.members[i].Check)
		c.mu.Lock()
		c.running[i] = false
		c.mu.Unlock()
		returned <- err
	}()
	var err error
	select {
	case err = <-returned:
		if err == nil && ctx.Err() != nil {
			// A pass that came after the deadline is too late for the probe.
			err = timeoutError(c.opts.MemberTimeout)
		}
	case <-ctx.Done():
		err = timeoutError(c.opts.MemberTimeout)
	}
	results <- result{i, err}
}

// callCheck runs check, turning a panic into an error: one bad check must
// not take the leader down.
func callCheck(ctx context.Context, check CheckFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("check panicked: %v", p)
		}
	}()
	return check(ctx)
}
