package report

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// Format is an output format of the reports: the values of udrain's -o
// flag.
type Format string

// The formats.
const (
	// Table is for people: aligned columns and sentences. Its wording may
	// change from one release to the next; programs read JSON.
	Table Format = "table"
	// JSON is the document as JSON, indented by two spaces, with a final
	// newline.
	JSON Format = "json"
	// YAML is the document as YAML, with the fields of JSON.
	YAML Format = "yaml"
)

// ParseFormat returns the format named s: "table", "json" or "yaml".
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Table, JSON, YAML:
		return f, nil
	}
	return "", fmt.Errorf("unknown report format %q: want %s, %s or %s", s, Table, JSON, YAML)
}

// Document is a report that can be printed. Every report type of this
// package is one, as a value or a pointer.
type Document interface {
	// WriteTable writes the document in the Table format.
	WriteTable(w io.Writer, o TableOptions) error
}

// TableOptions adapt the Table format to the program that prints it. The
// zero value names every setting by its Go name and adds nothing to a
// finding.
type TableOptions struct {
	// SettingName names a setting of the library (in
	// udrain.ConfigError.Field's form, such as
	// "eviction.RolloutOptions.NoLock") the way the program's users
	// set it: udrain's command line names its flag. When it is nil or
	// returns "", the setting keeps its Go name.
	SettingName func(setting string) string
	// FindingNote returns what to append to the message of a finding of
	// code, "" for nothing: udrain's command line names the flag of its
	// remedy.
	FindingNote func(code topology.FindingCode) string
}

// setting names setting as o.SettingName says.
func (o TableOptions) setting(setting string) string {
	return udrain.NameSetting(o.SettingName, setting)
}

// findingNote is what o.FindingNote appends to a finding of code.
func (o TableOptions) findingNote(code topology.FindingCode) string {
	if o.FindingNote == nil {
		return ""
	}
	return o.FindingNote(code)
}

// Printer writes documents in one format. The zero Printer writes tables.
type Printer struct {
	// Format is the output format; "" is Table.
	Format Format
	// Table adapts the Table format.
	Table TableOptions
}

// Print writes doc to w in p's format.
func (p Printer) Print(w io.Writer, doc Document) error {
	var data []byte
	var err error
	switch p.Format {
	case Table, "":
		return doc.WriteTable(w, p.Table)
	case JSON:
		data, err = json.MarshalIndent(doc, "", "  ")
		data = append(data, '\n')
	case YAML:
		data, err = yaml.Marshal(doc)
	default:
		_, err = ParseFormat(string(p.Format))
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// Print writes doc to w in format f, its tables with the zero
// TableOptions: Printer{Format: f}.Print(w, doc).
func Print(w io.Writer, f Format, doc Document) error {
	return Printer{Format: f}.Print(w, doc)
}
