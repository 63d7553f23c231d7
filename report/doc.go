// Package report holds the documents that udrain's command line prints
// with -o json and -o yaml: one Go type per kind of apiVersion
// udrain.dev/v1alpha3 (DomainList, AuditReport, PlanReport, DrainReport,
// RolloutReport, RolloutStatusReport, UncordonResult, HealthReport,
// GPUSummary, WaitServerResult, Version), documented field by field in
// docs/CLI.md.
//
// It is for Go programs that read what udrain prints: a script in Go
// unmarshals the output of "udrain rollout -o json" into a RolloutReport
// and reads its result as package eviction's RolloutResult, the value a
// controller embedding the library gets:
//
//	var r report.RolloutReport
//	if err := json.Unmarshal(out, &r); err != nil { ... }
//	if r.Kind != report.KindRolloutResult { ... }
//	for _, d := range r.Result.Domains { ... }
//
// It also prints them as udrain does, for a program that shows people the
// same tables (a controller writing a summary to its log): Print writes a
// document in a Format (Table, JSON or YAML; ParseFormat reads the name),
// and each report type's WriteTable writes its table. TableOptions adapt
// the tables to the program: SettingName names the library's settings
// the way its users set them (udrain names its flags), FindingNote adds to
// a finding's message. The tables are for people; their wording may
// change between releases, and programs read JSON. FormatEvent writes an
// event of a drain or rollout as the one line udrain's progress shows
// without a terminal, whose words are stable; a Progress shows a drain or
// a rollout as it runs, as udrain does on stderr (give its Event to the
// Drainer's OnEvent): one line per event, or, on a terminal, a live block
// of the domain, its phase, the pods left and the budget blocking, with
// the notable events printed above it. NewVersion builds the Version of a
// binary from its release stamps and its build info, as "udrain version"
// does; NewDomainList, NewAuditReport, NewGPUSummary and
// NewWaitServerResult build those documents from the library's results
// (nodes, their topology.Layout and eviction.Drainer.Health;
// eviction.Drainer.Audit and PlanRollout; gpu.Summarize;
// bootstrap.WaitForServer) as udrain
// does, and DurationSeconds is a
// duration in the documents' float64 Seconds fields; ReasonOf classifies an error of the module as ErrorInfo.Reason,
// the class a script acts on (exit codes 2, 3, 4, 130 and 1 on udrain's
// command line).
//
// The JSON conventions are the library's (see package eviction):
// lowerCamelCase names; an empty list or optional object is omitted;
// durations are seconds in fields ending in "Seconds"; times are RFC 3339.
// Within one APIVersion fields are only added, never renamed, removed or
// given another meaning.
//
// What it is not for: what only the command line knows (its exit codes
// in ErrorInfo, its flags) is the command line's to add; this package
// neither runs anything nor talks to a cluster. Like the library's other packages it
// writes only to the io.Writer it is given and keeps no global state.
package report
