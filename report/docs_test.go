package report_test

import (
	"os"
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/udrain/udrain/report"
)

// TestDocsDescribeEveryField checks that docs/CLI.md has a table row for
// every JSON field of every kind, under the section of its Go type: a
// field added without documentation fails here.
func TestDocsDescribeEveryField(t *testing.T) {
	data, err := os.ReadFile("../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	kinds := []any{report.DomainList{}, report.AuditReport{}, report.PlanReport{}, report.DrainReport{}, report.RolloutReport{}, report.RolloutStatusReport{}, report.UncordonResult{}, report.HealthReport{}, report.GPUSummary{}, report.WaitServerResult{}, report.Version{}}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		// Kubernetes' own types (a node's taints) are documented by
		// Kubernetes.
		if typ.Kind() != reflect.Struct || typ == reflect.TypeOf(time.Time{}) || typ == reflect.TypeOf(report.TypeMeta{}) || seen[typ] || strings.HasPrefix(typ.PkgPath(), "k8s.io/") {
			return
		}
		seen[typ] = true
		title := typeTitle(typ)
		section := docSection(doc, title)
		if section == "" {
			t.Errorf("docs/CLI.md has no section for %s", title)
			return
		}
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || f.Type.Kind() == reflect.Interface {
				continue
			}
			if f.Anonymous || name == "" {
				walk(f.Type)
				continue
			}
			if !strings.Contains(section, "| `"+name+"` |") {
				t.Errorf("docs/CLI.md does not describe field %q of %s", name, typ.Name())
			}
			walk(f.Type)
		}
	}
	for _, k := range kinds {
		walk(reflect.TypeOf(k))
	}
}

// typeTitle is the name of a type's section: its name for this package's
// types, package.Name for the library's (eviction.Plan, gpu.Summary).
func typeTitle(typ reflect.Type) string {
	if typ.PkgPath() == reflect.TypeOf(report.TypeMeta{}).PkgPath() {
		return typ.Name()
	}
	return path.Base(typ.PkgPath()) + "." + typ.Name()
}

// docSection returns the part of doc about the Go type name: from its
// heading ("#### Name ...") or its caption line ("Name:") to the next one.
func docSection(doc, name string) string {
	start := regexp.MustCompile(`(?m)^(#### ` + regexp.QuoteMeta(name) + `\b.*|` + regexp.QuoteMeta(name) + `( \(.*\))?:)$`).FindStringIndex(doc)
	if start == nil {
		return ""
	}
	rest := doc[start[1]:]
	if end := regexp.MustCompile(`(?m)^(#### |## |[a-z]*\.?[A-Z][A-Za-z]+( \(.*\))?:$)`).FindStringIndex(rest); end != nil {
		rest = rest[:end[0]]
	}
	return rest
}
