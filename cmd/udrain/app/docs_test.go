package app

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDocsDescribeEveryField checks that docs/CLI.md has a table row for
// every JSON field of every kind, under the section of its Go type: a
// field added without documentation fails here.
func TestDocsDescribeEveryField(t *testing.T) {
	data, err := os.ReadFile("../../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	kinds := []any{DomainList{}, AuditReport{}, Plan{}, DrainResult{}, RolloutResult{}, UncordonResult{}, HealthReport{}, GPUSummary{}, WaitServerResult{}, Version{}}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeOf(time.Time{}) || typ == reflect.TypeOf(TypeMeta{}) || seen[typ] {
			return
		}
		seen[typ] = true
		section := docSection(doc, typ.Name())
		if section == "" {
			t.Errorf("docs/CLI.md has no section for %s", typ.Name())
			return
		}
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
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

// docSection returns the part of doc about the Go type name: from its
// heading ("#### Name ...") or its caption line ("Name:") to the next one.
func docSection(doc, name string) string {
	start := regexp.MustCompile(`(?m)^(#### ` + name + `\b.*|` + name + `( \(.*\))?:)$`).FindStringIndex(doc)
	if start == nil {
		return ""
	}
	rest := doc[start[1]:]
	if end := regexp.MustCompile(`(?m)^(#### |## |[A-Z][A-Za-z]+( \(.*\))?:$)`).FindStringIndex(rest); end != nil {
		rest = rest[:end[0]]
	}
	return rest
}
