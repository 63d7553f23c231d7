package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/report"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    report.Format
		wantErr string
	}{
		{"table", report.Table, ""},
		{"json", report.JSON, ""},
		{"yaml", report.YAML, ""},
		{"", "", `unknown report format "": want table, json or yaml`},
		{"JSON", "", `unknown report format "JSON": want table, json or yaml`},
		{"wide", "", `unknown report format "wide": want table, json or yaml`},
	} {
		got, err := report.ParseFormat(tc.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if diff := cmp.Diff([2]string{string(tc.want), tc.wantErr}, [2]string{string(got), gotErr}); diff != "" {
			t.Errorf("ParseFormat(%q): format, error (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestPrint: JSON is the document indented by two spaces with a final
// newline, YAML the same fields, the table the document's own; the zero
// Printer prints the table, and an unknown format is an error that prints
// nothing.
func TestPrint(t *testing.T) {
	doc := report.UncordonResult{TypeMeta: report.NewTypeMeta(report.KindUncordonResult), Domain: "ud-1", Uncordoned: []string{"gpu-1", "gpu-2"}}
	indented, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	yamlText, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	const table = "Domain ud-1: uncordoned 2 nodes: gpu-1, gpu-2\n"
	for _, tc := range []struct {
		name string
		p    report.Printer
		want string
	}{
		{"json", report.Printer{Format: report.JSON}, string(indented) + "\n"},
		{"yaml", report.Printer{Format: report.YAML}, string(yamlText)},
		{"table", report.Printer{Format: report.Table}, table},
		{"zero printer", report.Printer{}, table},
	} {
		var b bytes.Buffer
		if err := tc.p.Print(&b, doc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, b.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if !strings.HasPrefix(string(indented), "{\n  \"apiVersion\": \"udrain.dev/v1alpha3\",\n  \"kind\": \"UncordonResult\",\n") {
		t.Errorf("JSON does not open with apiVersion and kind:\n%s", indented)
	}

	var b bytes.Buffer
	if err := report.Print(&b, "wide", doc); err == nil || b.Len() > 0 {
		t.Errorf("Print in format wide: error %v, wrote %q; want an error and nothing written", err, b.String())
	}
	b.Reset()
	if err := report.Print(&b, report.JSON, &doc); err != nil || b.String() != string(indented)+"\n" {
		t.Errorf("Print of a pointer: error %v, wrote %q; want the value's JSON", err, b.String())
	}
}
