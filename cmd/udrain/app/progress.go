package app

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
	"k8s.io/utils/clock"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
)

// progress shows a drain or rollout while it runs, on stderr: a live view
// on a terminal, one line per event otherwise. It is safe for concurrent
// use.
type progress interface {
	// event records an event of package eviction.
	event(eviction.Event)
	// note prints a line of udrain's own (kind is a word like
	// "RolloutID"), with the same prefix as event lines.
	note(kind, domain, msg string)
	// output returns a writer whose lines are printed with prefix (the
	// upgrade command's output).
	output(prefix string) io.WriteCloser
	// setTotal tells how many domains a rollout covers.
	setTotal(n int)
	// close stops the live view, leaving its last state on screen.
	close()
}

// newProgress picks the live view when w is a terminal.
func (o *options) newProgress(w io.Writer) progress {
	if o.cfg.IsTerminal(w) {
		return newLiveProgress(w, o.cfg.Clock, o.cfg.TerminalWidth(w))
	}
	return &lineProgress{w: w, clk: o.cfg.Clock}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 120
}

// lineProgress prints one timestamped line per event.
type lineProgress struct {
	mu  sync.Mutex
	w   io.Writer
	clk clock.PassiveClock
}

func (p *lineProgress) event(e eviction.Event) {
	p.println(report.FormatEvent(e, time.RFC3339))
}

func (p *lineProgress) note(kind, domain, msg string) {
	p.println(report.FormatEvent(eviction.Event{Time: p.clk.Now(), Type: eviction.EventType(kind), Domain: domain, Message: msg}, time.RFC3339))
}

func (p *lineProgress) println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

func (p *lineProgress) output(prefix string) io.WriteCloser {
	return &lineWriter{emit: func(line string) { p.println(prefix + line) }}
}

func (p *lineProgress) setTotal(int) {}
func (p *lineProgress) close()       {}

// lineWriter hands complete lines to emit; Close flushes a last partial
// line.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(string)
}

// Write buffers b and emits every complete line.
func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

// Close emits what is left of a last line without a newline.
func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
	return nil
}

// liveProgress redraws a few lines at the bottom of the terminal: the
// domain, the phase, the pods left, the blocking budget with its counts,
// and the elapsed time. Notable events are printed above it and scroll.
type liveProgress struct {
	mu    sync.Mutex
	w     io.Writer
	clk   clock.WithTicker
	width int
	drawn int // lines of the live block on screen
	stop  chan struct{}
	done  chan struct{}

	start       time.Time
	domain      string
	domainIndex int
	domainTotal int
	phase       eviction.Phase
	prog        eviction.Progress
	block       *eviction.BlockInfo
	status      string
	waiting     string // what recovery waits for
	lastDraw    string
}

// liveRedrawEvery is how often the live view refreshes the elapsed time.
const liveRedrawEvery = 250 * time.Millisecond

func newLiveProgress(w io.Writer, clk clock.WithTicker, width int) *liveProgress {
	p := &liveProgress{w: w, clk: clk, width: width, start: clk.Now(), stop: make(chan struct{}), done: make(chan struct{}), status: "starting"}
	t := clk.NewTicker(liveRedrawEvery)
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

// notable events are printed above the live block; the others only update
// it.
var notable = map[eviction.EventType]bool{
	eviction.EventPlanned: true, eviction.EventPhaseStarted: true, eviction.EventPhaseDone: true,
	eviction.EventDrained: true, eviction.EventUpgradeStarted: true, eviction.EventUpgradeDone: true,
	eviction.EventRecovered: true, eviction.EventDomainSkipped: true, eviction.EventNodeGone: true,
	eviction.EventLeftCordoned: true, eviction.EventRetrying: true, eviction.EventContractFindings: true,
	eviction.EventRolloutStarted: true, eviction.EventRolloutDone: true, eviction.EventDomainStarted: true,
	eviction.EventDomainDone: true, eviction.EventUnblocked: true,
}

func (p *liveProgress) event(e eviction.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	show := notable[e.Type]
	if e.Domain != "" {
		p.domain = e.Domain
	}
	if e.Progress != (eviction.Progress{}) {
		p.prog = e.Progress
	}
	switch e.Type {
	case eviction.EventDomainStarted:
		p.domainIndex++
		p.phase, p.prog, p.block, p.status, p.waiting = 0, eviction.Progress{}, nil, "planning", ""
	case eviction.EventPlanned:
		p.status = "planned"
	case eviction.EventCordoned:
		p.status = "cordoning"
	case eviction.EventPhaseStarted:
		p.phase, p.status = e.Phase, "evicting"
	case eviction.EventBlocked:
		// Print a block when it starts or moves to another budget; the
		// live block shows its counts as they change.
		show = p.block == nil || p.block.PDB != e.Block.PDB || p.block.Namespace != e.Block.Namespace
		b := *e.Block
		p.block = &b
	case eviction.EventUnblocked, eviction.EventPhaseDone:
		p.block = nil
	case eviction.EventDrained:
		p.status, p.block, p.phase = "drained", nil, 0
	case eviction.EventUpgradeStarted:
		p.status = "upgrading"
	case eviction.EventUpgradeDone:
		p.status = "upgraded"
	case eviction.EventUncordoned:
		p.status = "uncordoning"
	case eviction.EventWaitingRecovery:
		p.status, p.waiting = "recovering", e.Message
	case eviction.EventRecovered:
		p.status, p.waiting = "recovered", ""
	case eviction.EventDomainDone, eviction.EventDomainSkipped:
		p.status = "done"
	}
	if show {
		p.printAboveLocked(report.FormatEvent(e, "15:04:05"))
		return
	}
	p.redrawLocked(false)
}

func (p *liveProgress) note(kind, domain, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printAboveLocked(report.FormatEvent(eviction.Event{Time: p.clk.Now(), Type: eviction.EventType(kind), Domain: domain, Message: msg}, "15:04:05"))
}

func (p *liveProgress) output(prefix string) io.WriteCloser {
	return &lineWriter{emit: func(line string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.printAboveLocked(prefix + line)
	}}
}

func (p *liveProgress) setTotal(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.domainTotal = n
}

func (p *liveProgress) close() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redrawLocked(true)
}

// view returns the lines of the live block.
func (p *liveProgress) view() []string {
	head := "udrain"
	if p.domain != "" {
		head += " domain " + p.domain
		if p.domainTotal > 0 {
			head += fmt.Sprintf(" (%d/%d)", p.domainIndex, p.domainTotal)
		}
	}
	if p.phase != 0 {
		head += fmt.Sprintf("  phase %d", int(p.phase))
	}
	head += "  " + p.status + "  elapsed " + report.FormatDuration(p.clk.Since(p.start))
	lines := []string{head}
	if pr := p.prog; pr.Phase1Total+pr.Phase2Total > 0 {
		left := pr.Phase1Total + pr.Phase2Total - pr.Gone
		lines = append(lines, fmt.Sprintf("  phase 1 evicted %d/%d  phase 2 evicted %d/%d  pods left %d",
			pr.Phase1Evicted, pr.Phase1Total, pr.Phase2Evicted, pr.Phase2Total, left))
	}
	if b := p.block; b != nil {
		lines = append(lines, fmt.Sprintf("  blocked by PodDisruptionBudget %s/%s: allowed %d, healthy %d, needs %d, expected %d; for %s (%s waiting)",
			b.Namespace, b.PDB, b.DisruptionsAllowed, b.CurrentHealthy, b.DesiredHealthy, b.ExpectedPods,
			report.FormatDuration(p.clk.Since(b.Since)), plural(len(b.Pods), "pod", "pods")))
	}
	if p.waiting != "" {
		lines = append(lines, "  waiting for: "+p.waiting)
	}
	return lines
}

// redrawLocked draws the live block over the previous one; unless force,
// only when it changed.
func (p *liveProgress) redrawLocked(force bool) {
	lines := p.view()
	joined := strings.Join(lines, "\n")
	if !force && joined == p.lastDraw {
		return
	}
	var b strings.Builder
	p.eraseLocked(&b)
	for _, l := range lines {
		b.WriteString(truncate(l, p.width-1))
		b.WriteByte('\n')
	}
	p.drawn = len(lines)
	p.lastDraw = joined
	io.WriteString(p.w, b.String())
}

// eraseLocked moves the cursor up over the live block, clearing it.
func (p *liveProgress) eraseLocked(b *strings.Builder) {
	for i := 0; i < p.drawn; i++ {
		b.WriteString("\x1b[1A\x1b[2K")
	}
	p.drawn = 0
}

func (p *liveProgress) printAboveLocked(line string) {
	var b strings.Builder
	p.eraseLocked(&b)
	b.WriteString(line)
	b.WriteByte('\n')
	io.WriteString(p.w, b.String())
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
