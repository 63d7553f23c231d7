package app

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/report"
)

// Output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// outputFlag is the -o flag of a reporting command.
type outputFlag struct{ format string }

func (f *outputFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.format, "output", "o", outputTable, "Output format: table, json or yaml (json and yaml are the documented kinds of apiVersion "+report.APIVersion+")")
}

func (f *outputFlag) validate() error {
	switch f.format {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return usageErrorf("unknown output format %q: use -o table, -o json or -o yaml", f.format)
}

// print writes report as JSON or YAML, or calls table.
func (f *outputFlag) print(w io.Writer, report any, table func(io.Writer) error) error {
	switch f.format {
	case outputJSON:
		return writeJSON(w, report)
	case outputYAML:
		data, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return table(w)
}

// writeJSON writes v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
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

// human formats a duration for people: "1m32s", "450ms", "0s".
func human(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// seconds is a duration in seconds for JSON, to the millisecond.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
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

// secondsDuration converts seconds back to a duration, for tables built
// from reports.
func secondsDuration(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}
