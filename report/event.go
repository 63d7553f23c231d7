package report

import "github.com/udrain/udrain/eviction"

// FormatEvent is the line of an event in a drain's or rollout's progress,
// as udrain prints it without a terminal: its time in UTC in timeLayout
// (udrain uses time.RFC3339), a space, and Event.String, whose words and
// their order are stable (scripts grep them: docs/CLI.md).
func FormatEvent(e eviction.Event, timeLayout string) string {
	return e.Time.UTC().Format(timeLayout) + " " + e.String()
}
