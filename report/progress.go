package report

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/utils/clock"

	"github.com/udrain/udrain/eviction"
)

// ProgressOptions configure a [Progress].
type ProgressOptions struct {
	// Live redraws a block of a few lines at the bottom of a terminal:
	// the domain (and how many of the rollout's), the phase, what it is
	// doing, the pods left, the budget blocking with its counts, what
	// recovery waits for and the elapsed time; the notable events are
	// printed above it and scroll. Without it, every event is one line
	// (FormatEvent, with RFC 3339 times) and nothing is redrawn: for a log
	// or a pipe.
	Live bool
	// Width is the terminal's width in columns: the live block's lines are
	// cut to fit it, so that none wraps; 0 cuts nothing.
	Width int
	// Clock times the notes and the live block's elapsed times, which it
	// redraws every 250ms; nil means the real clock.
	Clock clock.WithTicker
}

// Progress shows a drain or a rollout while it runs, as udrain's commands
// do on stderr: give its Event to an OnEvent hook (the Drainer's, a
// drain's or a rollout's: they share one signature). It writes only to
// its writer, and is safe for concurrent use. Close it when the drain or
// rollout returns: the live block stays on screen in its last state.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	opts  ProgressOptions
	drawn int // lines of the live block on screen
	stop  chan struct{}
	done  chan struct{}

	start time.Time
	// flying are the domains in flight, in the order they started (a
	// rollout with parallel domains has several); last is the domain
	// shown when none is (the one that ended last).
	flying      []*liveDomain
	last        *liveDomain
	domainIndex int
	domainTotal int
	status      string
	held        string // why the next domain waits (DomainHeld)
	lastDraw    string
}

// liveDomain is what the live block shows of a domain.
type liveDomain struct {
	name    string
	index   int // its place in the rollout, from 1; 0 outside a rollout
	phase   eviction.Stage
	prog    eviction.PodCounts
	block   *eviction.BlockInfo
	status  string
	waiting string // what recovery waits for
}

// liveRedrawEvery is how often the live block refreshes its elapsed times.
const liveRedrawEvery = 250 * time.Millisecond

// NewProgress returns a Progress that writes to w. A live one redraws on
// a goroutine of its own until Close.
func NewProgress(w io.Writer, opts ProgressOptions) *Progress {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	p := &Progress{w: w, opts: opts, start: opts.Clock.Now(), stop: make(chan struct{}), done: make(chan struct{}), status: "starting"}
	if !opts.Live {
		close(p.done)
		return p
	}
	t := opts.Clock.NewTicker(liveRedrawEvery)
	go func() {
		defer close(p.done)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C():
				p.mu.Lock()
				p.redrawLocked(false)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// notable events are printed above the live block; the others only
// update it.
func notable(t eviction.EventType) bool {
	switch t {
	case eviction.EventPlanned, eviction.EventPhaseStarted, eviction.EventPhaseDone,
		eviction.EventDrained, eviction.EventUpgradeStarted, eviction.EventUpgradeDone,
		eviction.EventRecovered, eviction.EventDomainSkipped, eviction.EventNodeGone,
		eviction.EventLeftCordoned, eviction.EventRetrying, eviction.EventContractFindings,
		eviction.EventRolloutStarted, eviction.EventRolloutDone, eviction.EventDomainStarted,
		eviction.EventDomainDone, eviction.EventUnblocked, eviction.EventDomainHeld,
		eviction.EventWorkloadUpdating, eviction.EventWorkloadUpdated:
		return true
	}
	return false
}

// Event shows an event of a drain or a rollout. It has the signature of
// the event hooks (eviction.Options.OnEvent, DrainOptions.OnEvent,
// RolloutOptions.OnEvent); ctx is not used.
func (p *Progress) Event(_ context.Context, e eviction.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.opts.Live {
		p.printLocked(FormatEvent(e, time.RFC3339))
		return
	}
	show := notable(e.Type)
	d := p.domainLocked(e)
	if d == nil {
		switch e.Type {
		case eviction.EventRolloutDone:
			p.status = "done"
		case eviction.EventRolloutStopped:
			p.status = "stopped"
		}
		if show {
			p.printLocked(FormatEvent(e, "15:04:05"))
			return
		}
		p.redrawLocked(false)
		return
	}
	if e.Progress != (eviction.PodCounts{}) {
		d.prog = e.Progress
	}
	switch e.Type {
	case eviction.EventDomainStarted:
		p.domainIndex++
		d.index = p.domainIndex
		d.phase, d.prog, d.block, d.status, d.waiting = "", eviction.PodCounts{}, nil, "planning", ""
		if strings.HasPrefix(p.held, e.Domain+": ") {
			p.held = ""
		}
	case eviction.EventWorkloadUpdating:
		d.status, d.waiting = "waiting for workload updates", e.Message
	case eviction.EventWorkloadUpdated:
		d.status, d.waiting = "planning", ""
	case eviction.EventPlanned:
		d.status = "planned"
	case eviction.EventCordoned:
		d.status = "cordoning"
	case eviction.EventPhaseStarted:
		d.phase, d.status = e.Stage, "evicting"
	case eviction.EventBlocked:
		// Print a block when it starts or moves to another budget; the
		// live block shows its counts as they change.
		show = d.block == nil || d.block.PDB != e.Block.PDB || d.block.Namespace != e.Block.Namespace
		b := *e.Block
		d.block = &b
	case eviction.EventUnblocked, eviction.EventPhaseDone:
		d.block = nil
	case eviction.EventDrained:
		d.status, d.block, d.phase = "drained", nil, ""
	case eviction.EventUpgradeStarted:
		d.status = "upgrading"
	case eviction.EventUpgradeDone:
		d.status = "upgraded"
	case eviction.EventUncordoned:
		d.status = "uncordoning"
	case eviction.EventWaitingRecovery:
		d.status, d.waiting = "recovering", e.Message
	case eviction.EventRecovered:
		d.status, d.waiting = "recovered", ""
	case eviction.EventDomainDone, eviction.EventDomainSkipped:
		d.status = "done"
		p.landLocked(d)
	case eviction.EventDrainStopped:
		d.status = "stopped"
	}
	if show {
		p.printLocked(FormatEvent(e, "15:04:05"))
		return
	}
	p.redrawLocked(false)
}

// Note shows a line of the caller's own in the form of an event's: kind
// is a word like "RolloutID", domain may be empty.
func (p *Progress) Note(kind, domain, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	layout := time.RFC3339
	if p.opts.Live {
		layout = "15:04:05"
	}
	p.printLocked(FormatEvent(eviction.Event{Time: p.opts.Clock.Now(), Type: eviction.EventType(kind), Domain: domain, Message: msg}, layout))
}

// Output returns a writer whose writes are shown as lines (a last one
// without a newline too), each with prefix: a command's output, as
// upgrade.CommandOptions.Output writes it, one line a write.
func (p *Progress) Output(prefix string) io.Writer {
	return lineFunc(func(b []byte) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			p.printLocked(prefix + line)
		}
	})
}

type lineFunc func([]byte)

func (f lineFunc) Write(b []byte) (int, error) {
	f(b)
	return len(b), nil
}

// SetTotal tells how many domains a rollout covers, for the live block's
// "(2/3)".
func (p *Progress) SetTotal(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.domainTotal = n
}

// Close stops the live block's redraws and draws it a last time; a second
// Close does nothing.
func (p *Progress) Close() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	<-p.done
	if p.opts.Live {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.redrawLocked(true)
	}
}

// domainLocked returns the live state of the event's domain, started
// if new (a drain's events name their domain, with no DomainStarted);
// nil for an event of no domain or a DomainHeld one (its domain has not
// started).
func (p *Progress) domainLocked(e eviction.Event) *liveDomain {
	if e.Domain == "" {
		return nil
	}
	if e.Type == eviction.EventDomainHeld {
		p.held = e.Domain + ": " + e.Message
		return nil
	}
	for _, d := range p.flying {
		if d.name == e.Domain {
			return d
		}
	}
	d := &liveDomain{name: e.Domain, status: "starting"}
	p.flying = append(p.flying, d)
	return d
}

// landLocked takes a domain that ended out of flight.
func (p *Progress) landLocked(d *liveDomain) {
	for i, f := range p.flying {
		if f == d {
			p.flying = append(p.flying[:i], p.flying[i+1:]...)
			break
		}
	}
	p.last = d
}

// view returns the lines of the live block: one domain as it was before
// parallel domains, or a head and each domain in flight.
func (p *Progress) view() []string {
	clk := p.opts.Clock
	elapsed := "elapsed " + FormatDuration(clk.Since(p.start))
	var lines []string
	switch {
	case len(p.flying) > 1:
		lines = append(lines, fmt.Sprintf("udrain  %d domains in flight  %s", len(p.flying), elapsed))
		for _, d := range p.flying {
			lines = append(lines, p.domainLines(d, "  ")...)
		}
	default:
		d := p.last
		if len(p.flying) == 1 {
			d = p.flying[0]
		}
		if d == nil {
			d = &liveDomain{status: p.status}
		}
		lines = p.domainLines(d, "")
		lines[0] += "  " + elapsed
	}
	if p.held != "" {
		lines = append(lines, "  next domain held back: "+p.held)
	}
	return lines
}

// domainLines are the lines of one domain, indented by indent: its head
// (without the elapsed time), its pods, its block, what its recovery
// waits for.
func (p *Progress) domainLines(d *liveDomain, indent string) []string {
	clk := p.opts.Clock
	head := indent + "udrain"
	if indent != "" {
		head = indent
	}
	if d.name != "" {
		if indent == "" {
			head += " "
		}
		head += "domain " + d.name
		if p.domainTotal > 0 && d.index > 0 {
			head += fmt.Sprintf(" (%d/%d)", d.index, p.domainTotal)
		}
	}
	if n := d.phase.Phase(); n != 0 {
		head += fmt.Sprintf("  phase %d", n)
	}
	head += "  " + d.status
	lines := []string{head}
	if pr := d.prog; pr.Phase1Total+pr.Phase2Total > 0 {
		left := pr.Phase1Total + pr.Phase2Total - pr.Gone
		done1, done2 := pr.Done()
		lines = append(lines, fmt.Sprintf("%s  phase 1 evicted %d/%d  phase 2 evicted %d/%d  pods left %d",
			indent, done1, pr.Phase1Total, done2, pr.Phase2Total, left))
	}
	if b := d.block; b != nil {
		lines = append(lines, fmt.Sprintf("%s  blocked by PodDisruptionBudget %s/%s: allowed %d, healthy %d, needs %d, expected %d; for %s (%s waiting)",
			indent, b.Namespace, b.PDB, b.DisruptionsAllowed, b.CurrentHealthy, b.DesiredHealthy, b.ExpectedPods,
			FormatDuration(clk.Since(b.Since)), plural(len(b.Pods), "pod", "pods")))
	}
	if d.waiting != "" {
		lines = append(lines, indent+"  waiting for: "+d.waiting)
	}
	return lines
}

// redrawLocked draws the live block over the previous one; unless force,
// only when it changed.
func (p *Progress) redrawLocked(force bool) {
	lines := p.view()
	joined := strings.Join(lines, "\n")
	if !force && joined == p.lastDraw {
		return
	}
	var b strings.Builder
	p.eraseLocked(&b)
	for _, l := range lines {
		b.WriteString(truncate(l, p.opts.Width-1))
		b.WriteByte('\n')
	}
	p.drawn = len(lines)
	p.lastDraw = joined
	_, _ = io.WriteString(p.w, b.String())
}

// eraseLocked moves the cursor up over the live block, clearing it.
func (p *Progress) eraseLocked(b *strings.Builder) {
	for i := 0; i < p.drawn; i++ {
		b.WriteString("\x1b[1A\x1b[2K")
	}
	p.drawn = 0
}

// printLocked prints line: above the live block, which it redraws, or as
// a line of its own.
func (p *Progress) printLocked(line string) {
	if !p.opts.Live {
		_, _ = fmt.Fprintln(p.w, line)
		return
	}
	var b strings.Builder
	p.eraseLocked(&b)
	b.WriteString(line)
	b.WriteByte('\n')
	_, _ = io.WriteString(p.w, b.String())
	p.lastDraw = ""
	p.redrawLocked(true)
}

// truncate shortens s to n runes, so that a live line never wraps.
func truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n < 2 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}
