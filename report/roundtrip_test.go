package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/report"
)

// goldens are the command line's golden files: what udrain printed, the
// contract of the JSON (cmd/udrain/app's TestGolden writes them).
const goldens = "../cmd/udrain/app/testdata"

// TestRoundTrip: each kind that udrain printed, read into its type with
// every field known, prints the same bytes again, and reads back equal.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		file string
		kind string
		doc  report.Document // a pointer to the zero value of the kind's type
	}{
		{"domains.json", report.KindDomainList, &report.DomainList{}},
		{"audit.json", report.KindAuditReport, &report.AuditReport{}},
		{"plan.json", report.KindPlan, &report.PlanReport{}},
		{"drain.json", report.KindDrainResult, &report.DrainReport{}},
		{"rollout-dryrun.json", report.KindRolloutResult, &report.RolloutReport{}},
		{"rollout-status.json", report.KindRolloutStatus, &report.RolloutStatusReport{}},
		{"uncordon.json", report.KindUncordonResult, &report.UncordonResult{}},
		{"wait-healthy.json", report.KindHealthReport, &report.HealthReport{}},
		{"gpu.json", report.KindGPUSummary, &report.GPUSummary{}},
		{"wait-server.json", report.KindWaitServerResult, &report.WaitServerResult{}},
		{"version.json", report.KindVersion, &report.Version{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			printed, err := os.ReadFile(filepath.Join(goldens, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(printed))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.doc); err != nil {
				t.Fatalf("reading %s into %T: %v", tc.file, tc.doc, err)
			}
			if meta := reflect.ValueOf(tc.doc).Elem().FieldByName("TypeMeta").Interface(); meta != report.NewTypeMeta(tc.kind) {
				t.Errorf("%s: %+v, want kind %s of %s", tc.file, meta, tc.kind, report.APIVersion)
			}
			var again bytes.Buffer
			if err := report.Print(&again, report.JSON, tc.doc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(printed), again.String()); diff != "" {
				t.Errorf("%T printed again (-udrain +again):\n%s", tc.doc, diff)
			}
			back := reflect.New(reflect.TypeOf(tc.doc).Elem()).Interface()
			if err := json.Unmarshal(again.Bytes(), back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.doc, back); diff != "" {
				t.Errorf("%T read back (-first +again):\n%s", tc.doc, diff)
			}
		})
	}
}

// TestYAMLRoundTrip: the YAML of a kind has the JSON's fields: udrain's
// YAML reads into the same value as its JSON, and prints again the same.
func TestYAMLRoundTrip(t *testing.T) {
	read := func(file string, unmarshal func([]byte, any) error) (report.DomainList, []byte) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(goldens, file))
		if err != nil {
			t.Fatal(err)
		}
		var list report.DomainList
		if err := unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return list, data
	}
	fromJSON, _ := read("domains.json", json.Unmarshal)
	fromYAML, printed := read("domains.yaml", func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) })
	if diff := cmp.Diff(fromJSON, fromYAML); diff != "" {
		t.Errorf("domains.yaml and domains.json read differently (-json +yaml):\n%s", diff)
	}
	var again bytes.Buffer
	if err := report.Print(&again, report.YAML, fromYAML); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(printed), again.String()); diff != "" {
		t.Errorf("printed again (-udrain +again):\n%s", diff)
	}
}
