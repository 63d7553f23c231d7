package report

import (
	"fmt"
	"strings"

	"github.com/udrain/udrain/eviction"
)

// FormatEvent is the line of an event in a drain's or rollout's progress,
// as udrain prints it without a terminal, with its time in UTC in
// timeLayout (udrain uses time.RFC3339):
//
//	<time> <Type> [dryRun=client|server] [domain=D] [phase=N] [pod=NS/NAME] [node=N]
//	  [pdb=NS/NAME allowed=A healthy=H desired=D expected=E]
//	  [phase1=EVICTED/TOTAL phase2=EVICTED/TOTAL gone=G] [msg="..."]
//
// The words and their order are stable: scripts grep them (docs/CLI.md).
// A message is quoted as a Go string, so that a line is always one line.
func FormatEvent(e eviction.Event, timeLayout string) string {
	var b strings.Builder
	b.WriteString(e.Time.UTC().Format(timeLayout))
	b.WriteByte(' ')
	b.WriteString(string(e.Type))
	if e.DryRun != "" {
		fmt.Fprintf(&b, " dryRun=%s", e.DryRun)
	}
	if e.Domain != "" {
		fmt.Fprintf(&b, " domain=%s", e.Domain)
	}
	if e.Phase != 0 {
		fmt.Fprintf(&b, " phase=%d", int(e.Phase))
	}
	if e.Pod != nil {
		fmt.Fprintf(&b, " pod=%s", e.Pod)
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " node=%s", e.Node)
	}
	if bl := e.Block; bl != nil {
		fmt.Fprintf(&b, " pdb=%s/%s allowed=%d healthy=%d desired=%d expected=%d",
			bl.Namespace, bl.PDB, bl.DisruptionsAllowed, bl.CurrentHealthy, bl.DesiredHealthy, bl.ExpectedPods)
	}
	if p := e.Progress; p.Phase1Total+p.Phase2Total > 0 {
		fmt.Fprintf(&b, " phase1=%d/%d phase2=%d/%d gone=%d", p.Phase1Evicted, p.Phase1Total, p.Phase2Evicted, p.Phase2Total, p.Gone)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, " msg=%q", e.Message)
	}
	return b.String()
}
