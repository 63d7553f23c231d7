package report

import (
	"fmt"
	"io"
)

// WriteTable writes one line: the server reachable after how many
// attempts and how long, or not, with the class of the last failure.
func (r WaitServerResult) WriteTable(w io.Writer, _ TableOptions) error {
	if !r.Reachable {
		class := r.FailureClass
		if class == "" {
			class = "none completed"
		}
		_, err := fmt.Fprintf(w, "Server %s not reachable after %s in %s; last failure: %s\n", r.Target,
			plural(r.Attempts, "attempt", "attempts"), FormatDuration(secondsDuration(r.ElapsedSeconds)), class)
		return err
	}
	how := ""
	if r.StatusCode != 0 {
		how = fmt.Sprintf(" (HTTP %d from %s)", r.StatusCode, r.RemoteAddr)
	} else if r.RemoteAddr != "" {
		how = " (" + r.RemoteAddr + ")"
	}
	_, err := fmt.Fprintf(w, "Server %s reachable after %s in %s%s.\n", r.Target, plural(r.Attempts, "attempt", "attempts"),
		FormatDuration(secondsDuration(r.ElapsedSeconds)), how)
	return err
}

// WriteTable writes one line: the version, commit, build date, Go version
// and platform ("unknown" for what is not known).
func (v Version) WriteTable(w io.Writer, _ TableOptions) error {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	_, err := fmt.Fprintf(w, "udrain %s (commit %s, built %s, %s, %s)\n", v.Version, orUnknown(v.Commit), orUnknown(v.BuildDate), v.GoVersion, v.Platform)
	return err
}
