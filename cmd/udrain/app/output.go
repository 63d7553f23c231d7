package app

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/report"
)

// outputFlag is the -o flag of a reporting command.
type outputFlag struct{ format string }

func (f *outputFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.format, "output", "o", string(report.Table), "Output format: table, json or yaml (json and yaml are the documented kinds of apiVersion "+report.APIVersion+")")
}

func (f *outputFlag) validate() error {
	if _, err := report.ParseFormat(f.format); err != nil {
		return usageErrorf("unknown output format %q: use -o table, -o json or -o yaml", f.format)
	}
	return nil
}

// print writes doc in the format of -o; its tables name the library's
// settings by their flags and add the flag of a finding's remedy.
func (f *outputFlag) print(w io.Writer, doc report.Document) error {
	p := report.Printer{Format: report.Format(f.format), Table: report.TableOptions{SettingName: flagOf, FindingNote: findingAdvice}}
	return p.Print(w, doc)
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
