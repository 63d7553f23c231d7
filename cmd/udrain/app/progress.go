package app

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/udrain/udrain/report"
)

// newProgress shows a drain's or a rollout's progress on w: live when w is
// a terminal, one line per event otherwise.
func (o *options) newProgress(w io.Writer) *report.Progress {
	opts := report.ProgressOptions{Live: o.cfg.IsTerminal(w), Clock: o.cfg.Clock}
	if opts.Live {
		opts.Width = o.cfg.TerminalWidth(w)
	}
	return report.NewProgress(w, opts)
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
