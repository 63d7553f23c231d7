package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// FormatDuration shows a duration the way the tables do: to the second
// ("1m32s"), to the millisecond under a second ("450ms"), "0s" for none.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// secondsDuration converts seconds back to a duration.
func secondsDuration(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}

// missing is the error of a table whose document lacks what it shows.
func missing(kind, field string) error {
	return fmt.Errorf("report: the %s has no %s to show", kind, field)
}

// newTable returns a tabwriter for aligned columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// orDash shows "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// joinOrDash joins a list for one cell.
func joinOrDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// listOrNone joins a list for prose.
func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// yesNo shows a boolean in a table.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// reason is e's Reason, "" without an error.
func (e *ErrorInfo) reason() string {
	if e == nil {
		return ""
	}
	return e.Reason
}

// message is e's Message, "" without an error.
func (e *ErrorInfo) message() string {
	if e == nil {
		return ""
	}
	return e.Message
}

// gpuText shows GPUs per product: "8 H100, 4 A10".
func gpuText(gpus []gpu.Capacity) string {
	if len(gpus) == 0 {
		return "-"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprintf("%d %s", g.GPUs, g.Product)
	}
	return strings.Join(parts, ", ")
}

// gpuNodesText shows free GPUs per node: "node-1 2/8, node-2 8/8".
func gpuNodesText(nodes []gpu.NodeGPUs) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s %d/%d", n.Node, n.Free, n.Allocatable)
	}
	return strings.Join(parts, ", ")
}

// healthText shows a group's health in a table cell: "yes", or "no:
// <message>".
func healthText(g health.GroupStatus) string {
	if g.Healthy {
		return "yes"
	}
	return "no: " + g.Message
}

// writeFindings prints a table of findings, then each message in full.
func writeFindings(w io.Writer, fs []topology.Finding, o TableOptions) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "SEVERITY\tCODE\tNAMESPACE\tGROUP/WORKLOAD\tDOMAINS\tPDBS")
	for _, f := range fs {
		what := f.Group
		if what == "" {
			what = f.Workload
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Severity, f.Code, orDash(f.Namespace), orDash(what), joinOrDash(f.Domains), joinOrDash(f.PDBs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for i, f := range fs {
		fmt.Fprintf(w, "%d. %s %s: %s%s\n", i+1, strings.ToUpper(string(f.Severity)), f.Code, f.Message, o.findingNote(f.Code))
	}
	return nil
}

// writePodReasons prints pods with why they are skipped or refused.
func writePodReasons(w io.Writer, pods []eviction.PlannedPod) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tREASON")
	for _, p := range pods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Node, p.Reason)
	}
	return tw.Flush()
}

// writeSummary prints the summary lines shared by drain and rollout.
func writeSummary(w io.Writer, s Summary, rollout bool) {
	if rollout {
		fmt.Fprintf(w, "Domains: %d done, %d skipped (done by an earlier run), %d in all\n", s.DomainsDone, s.DomainsSkipped, s.DomainsTotal)
	}
	fmt.Fprintf(w, "Pods evicted: %d in phase 1, %d in phase 2\n", s.Phase1Evicted, s.Phase2Evicted)
	fmt.Fprintf(w, "Groups disrupted: %d\n", s.GroupsDisrupted)
	if rollout {
		fmt.Fprintf(w, "Groups disrupted again: %d\n", s.GroupsDisruptedAgain)
		if g := s.LongestDowntime; g != nil {
			fmt.Fprintf(w, "Longest downtime: %s, group %s (from %s to %s)\n", FormatDuration(g.Downtime.Duration()), g.Group, g.From, orDash(g.To))
		} else {
			fmt.Fprintln(w, "Longest downtime: none")
		}
	}
	if b := s.LongestBlock; b != nil {
		fmt.Fprintf(w, "Longest block: %s by PodDisruptionBudget %s/%s\n", FormatDuration(b.Duration.Duration()), b.Namespace, b.PDB)
	} else {
		fmt.Fprintln(w, "Longest block: none")
	}
	fmt.Fprintf(w, "Duration: %s\n", FormatDuration(s.Duration.Duration()))
}
