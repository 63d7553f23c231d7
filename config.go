package udrain

import "fmt"

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
//     "eviction.Options.Concurrency", "eviction.RolloutOptions.Lock.Namespace",
//     "gate.Options.Groupers[0]";
//   - an argument, as package.Func(arg) or package.Type.Method(arg), arg
//     named as in the signature: "eviction.New(client)",
//     "eviction.Drainer.Drain(domain)", "bootstrap.WaitForServer(target)".
//
// A command line maps Field to its flag or argument. Problem says what is
// wrong and what to do instead.
type ConfigError struct {
	Field   string
	Problem string
}

// Error returns "invalid <Field>: <Problem>".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Problem)
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
