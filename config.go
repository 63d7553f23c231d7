package udrain

import (
	"fmt"
	"strings"
)

// ConfigError reports a setting that cannot work: an option out of range,
// two options that contradict each other, a missing argument. Every package
// of the module returns this one shape for bad configuration, always before
// it has changed anything (nothing evicted, cordoned, deleted or sent), so a
// caller can tell "fix the configuration" from "the cluster said no" with
// one errors.As.
//
// Field names what is at fault as the package's documentation names it,
// qualified by the package's name (as code that imports it writes it:
// "gate", not "readiness/gate"), in one of two forms:
//
//   - a setting, as package.Type.Field, with a field of a field and an
//     element of a slice written as in Go:
//     "eviction.Options.Concurrency", "eviction.RolloutOptions.LockNamespace",
//     "gate.Options.Groupers[0]";
//   - an argument, as package.Func(arg) or package.Type.Method(arg), arg
//     named as in the signature: "eviction.New(client)",
//     "eviction.Drainer.Drain(domain)", "bootstrap.WaitForServer(target)".
//
// A command line maps Field to its flag or argument. Problem says what is
// wrong and what to do instead, without naming settings: the other
// settings it involves (the one it must be shorter than, the one to set
// with it) are in See, in Field's form, so that each caller names them as
// its users know them (Describe).
type ConfigError struct {
	Field   string
	Problem string
	See     []string
}

// Error returns "invalid <Field>: <Problem>", followed by " (see <See>)"
// when the problem involves other settings.
func (e *ConfigError) Error() string {
	return e.Describe(nil)
}

// Describe is Error with every setting (Field and See) named by name, e.g.
// a command line's flag for it; a nil name, or one that returns "", keeps
// the setting's Go name.
func (e *ConfigError) Describe(name func(setting string) string) string {
	s := fmt.Sprintf("invalid %s: %s", NameSetting(name, e.Field), e.Problem)
	if len(e.See) > 0 {
		see := make([]string, len(e.See))
		for i, f := range e.See {
			see[i] = NameSetting(name, f)
		}
		s += " (see " + strings.Join(see, ", ") + ")"
	}
	return s
}

// NameSetting names setting (in ConfigError.Field's form) by name, or
// keeps it when name is nil or returns "". For the Describe methods of
// the module's errors.
func NameSetting(name func(setting string) string, setting string) string {
	if name != nil {
		if n := name(setting); n != "" {
			return n
		}
	}
	return setting
}

// Severity ranks a finding of an audit or a classification. The values are
// stable, for scripts that filter them, and capitalised like the types of
// Kubernetes Events.
type Severity string

const (
	// SeverityError: something that breaks what udrain relies on (the
	// placement contract, a GPU that cannot be used) and must be fixed.
	SeverityError Severity = "Error"
	// SeverityWarning: worth fixing; it may cost capacity or surprise a
	// user, but breaks nothing by itself.
	SeverityWarning Severity = "Warning"
	// SeverityInfo: a fact worth knowing that needs no action.
	SeverityInfo Severity = "Info"
)
