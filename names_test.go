package udrain_test

import (
	"go/types"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/udrain/udrain/internal/apisurface"
)

// sharedNames are the exported names that more than one library package
// declares, each with why it means one thing in all of them. A name
// declared twice with two meanings (health.Evaluate judged a group,
// gate.Evaluate wrote a pod condition) makes a reader of either guess
// wrong: give one of them another name instead of a line here.
var sharedNames = map[string]string{
	"Options":               "the options of the package's entry points (controller-runtime's convention)",
	"New":                   "the package's constructor",
	"Result":                "what the package's main call returns (bootstrap's wait, eviction's drain); metrics' is the result label of the eviction requests it counts",
	"Summary":               "a summary of the package's subject: report's of a drain or rollout run, gpu's of a fleet's GPUs",
	"Report":                "what a check of the package found: health's of the groups and budgets of upgrade domains, readiness's of a group's members, topology's of the contract audit",
	"Reason":                "why a status is what it is, in the package's own vocabulary (health: a group's, readiness: a member check's)",
	"ReasonOf":              "the Reason of an error, in the package's vocabulary (readiness: a member check's, report: a document's error)",
	"ReasonBlocked":         "a PodDisruptionBudget still refused evictions when the time ran out: eviction's RetryError reason, and report's class of that error (report.ReasonOf maps the one to the other)",
	"Finding":               "a finding of the package's check: code, severity, message and what it concerns",
	"FindingCode":           "the code of the package's Finding",
	"DefaultBackoff":        "the backoff of the package's retries when its Options leave it zero",
	"DefaultRequestTimeout": "the bound of each request when the package's Options.RequestTimeout is zero",
	"DomainState":           "the state of a domain in a rollout: eviction's type, and metrics' name of the metric that exports it",
	"StateDone":             "a domain's state in a rollout: eviction's, and metrics' label value",
	"StateDraining":         "a domain's state in a rollout: eviction's, and metrics' label value",
	"StatePending":          "a domain's state in a rollout: eviction's, and metrics' label value",
	"StateRecovering":       "a domain's state in a rollout: eviction's, and metrics' label value",
	"StateUpgrading":        "a domain's state in a rollout: eviction's, and metrics' label value",
	"StateSkipped":          "a domain a resumed rollout found upgraded: eviction's state in its result, and metrics' label value",
	"StateFailed":           "a domain a rollout stopped in on an error: eviction's state in its result, and metrics' label value",
}

// kindOf names the kind of a package-level object.
func kindOf(obj types.Object) string {
	switch obj.(type) {
	case *types.Const:
		return "const"
	case *types.Var:
		return "var"
	case *types.Func:
		return "func"
	}
	return "type"
}

// TestOneNamePerMeaning: an exported name declared by two library
// packages means one thing in both (sharedNames says what); any other is
// declared once. Names declared by the package and the module's root are
// counted too.
func TestOneNamePerMeaning(t *testing.T) {
	declared := map[string][]string{}
	for _, pkg := range libraryPackages(t) {
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			if obj := scope.Lookup(name); obj.Exported() {
				declared[name] = append(declared[name], kindOf(obj)+" "+apisurface.Name(pkg.Path())+"."+name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		decls := declared[name]
		if _, ok := sharedNames[name]; len(decls) > 1 && !ok {
			t.Errorf("%s is declared by %d packages (%s): give each meaning a name of its own, or say in sharedNames why it means one thing", name, len(decls), strings.Join(decls, ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sharedNames)) {
		if len(declared[name]) < 2 {
			t.Errorf("sharedNames lists %s, which %d library package declares: remove it", name, len(declared[name]))
		}
	}
}
