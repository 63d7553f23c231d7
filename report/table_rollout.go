package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/udrain/udrain/eviction"
)

// WriteTable writes how the rollout ended, a row per domain, each
// disrupted group's downtime, where a dry run's evicted groups would go,
// the summary, the findings, and how to resume.
func (r RolloutReport) WriteTable(w io.Writer, o TableOptions) error {
	res := r.Result
	if res == nil {
		return missing("RolloutReport", "result")
	}
	what := "Rollout " + res.ID
	if r.UpgradeCommand != "" {
		what += fmt.Sprintf(" (upgrade command %q)", r.UpgradeCommand)
	}
	if r.UpgradeStep != "" {
		what += fmt.Sprintf(" (upgrade step: %s)", r.UpgradeStep)
	}
	switch {
	case res.DryRun != "":
		fmt.Fprintf(w, "%s: dry run (%s), nothing was changed.\n", what, res.DryRun)
	case res.Completed:
		fmt.Fprintf(w, "%s completed in %s.\n", what, FormatDuration(r.Summary.Duration.Duration()))
	case r.Error.reason() == ReasonInterrupted:
		fmt.Fprintf(w, "%s was interrupted after %s.\n", what, FormatDuration(r.Summary.Duration.Duration()))
	default:
		fmt.Fprintf(w, "%s stopped after %s: %s\n", what, FormatDuration(r.Summary.Duration.Duration()), r.Error.message())
	}
	if err := writeRolloutDomains(w, res.Domains); err != nil {
		return err
	}
	if err := writeDowntimes(w, res.Domains); err != nil {
		return err
	}
	if res.DryRun != "" {
		if err := writeSchedule(w, o, res.Parallel, res.MaxInFlight, res.InPlace, res.Domains); err != nil {
			return err
		}
		if err := writeDestinations(w, res.Destinations); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	writeSummary(w, r.Summary, true)
	if len(res.Findings) > 0 {
		fmt.Fprintln(w, "\nContract findings before the rollout:")
		if err := writeFindings(w, res.Findings, o); err != nil {
			return err
		}
	}
	if reason := r.Error.reason(); !res.Completed && res.DryRun == "" && reason != ReasonUsage && reason != ReasonContractViolation {
		fmt.Fprintf(w, "\nTo resume, run the same command again (rollout ID %s).\n", res.ID)
	}
	return nil
}

// writeRolloutDomains prints a row per domain of a rollout: its status,
// its drain's phases, groups and longest block, and its stages' durations.
func writeRolloutDomains(w io.Writer, domains []eviction.RolloutDomain) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "\nDOMAIN\tSTATUS\tPHASE 1\tPHASE 2\tGROUPS\tLONGEST BLOCK\tUPGRADE\tRECOVERY\tDURATION")
	for _, d := range domains {
		if d.Drain == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\n", d.Domain, d.State)
			continue
		}
		longest := "-"
		if b := SummarizeDrain(d.Drain).LongestBlock; b != nil {
			longest = fmt.Sprintf("%s %s/%s", FormatDuration(b.Duration.Duration()), b.Namespace, b.PDB)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%d\t%s\t%s\t%s\t%s\n", d.Domain, d.State,
			d.Drain.Pods.Phase1Evicted, d.Drain.Pods.Phase1Total, d.Drain.Pods.Phase2Evicted, d.Drain.Pods.Phase2Total, len(d.Drain.GroupsDisrupted), longest,
			FormatDuration(d.Upgrade.Duration()), FormatDuration(d.Recovery.Duration()), FormatDuration(d.Duration.Duration()))
	}
	return tw.Flush()
}

// writeSchedule prints, for a rollout with parallel domains, how many
// run at once and when each starts, as the rollout's simulation found it,
// in the order it starts them; nothing for one domain at a time.
func writeSchedule(w io.Writer, o TableOptions, parallel, most int, inPlace bool, domains []eviction.RolloutDomain) error {
	sched := startOrder(domains)
	if parallel == 1 || len(sched) == 0 {
		return nil
	}
	asked := fmt.Sprint(parallel)
	if parallel == eviction.ParallelAuto {
		asked = "auto"
	}
	allow := "as the budgets and the upgraded room allow"
	if inPlace {
		allow = fmt.Sprintf("as the budgets allow (%s: groups without upgraded room wait for their own domain)", o.setting("eviction.RolloutOptions.InPlace"))
	}
	fmt.Fprintf(w, "\nDomains at once (%s %s): at most %d, %s (simulated before anything is touched):\n", o.setting("eviction.RolloutOptions.Parallel"), asked, most, allow)
	tw := newTable(w)
	fmt.Fprintln(tw, "DOMAIN\tSTARTS\tWITH\tHELD BACK BY")
	for _, d := range sched {
		starts := "at the start"
		if d.After != "" {
			starts = "after " + d.After
		}
		with := "-"
		if len(d.With) > 0 {
			with = strings.Join(d.With, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Domain, starts, with, holdText(d.HeldBy))
	}
	return tw.Flush()
}

// startOrder lists the domains a rollout's plan schedules (all but those
// Skipped: upgraded already) in the order its simulation starts them:
// those that start with the rollout, then those the end of the first
// domain started lets start, and so on (domains in flight end in the
// order they started).
func startOrder(domains []eviction.RolloutDomain) []eviction.RolloutDomain {
	var out []eviction.RolloutDomain
	startAfter := func(after string) {
		for _, d := range domains {
			if d.State != eviction.StateSkipped && d.After == after {
				out = append(out, d)
			}
		}
	}
	startAfter("")
	for i := 0; i < len(out); i++ {
		startAfter(out[i].Domain)
	}
	return out
}

// holdText says in a few words why a domain was held back.
func holdText(h *eviction.BlockInfo) string {
	switch {
	case h == nil:
		return "-"
	case h.Reason == eviction.BlockBudget && h.PDB != "":
		return fmt.Sprintf("budget %s (%s: %d down, %d more)", h.BudgetRef, h.Rule, h.Down, h.Needed)
	case h.Reason == eviction.BlockRoom && h.Group != nil:
		return fmt.Sprintf("room for group %s", h.Group)
	case h.Reason == eviction.BlockLimit:
		return fmt.Sprintf("the limit (%d)", h.Allowed)
	}
	return string(h.Reason)
}

// writeDestinations prints where each evicted group can go, as the
// rollout's simulation found it: one line per group and domain it is
// evicted from.
func writeDestinations(w io.Writer, dests []eviction.GroupDestination) error {
	if len(dests) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nWhere the evicted groups can go (simulated before anything is touched):")
	tw := newTable(w)
	warned := 0
	fmt.Fprintln(tw, "GROUP\tFROM\tTO\tKIND\tROOM")
	for _, d := range dests {
		room := "-"
		if d.Room > 0 {
			room = fmt.Sprint(d.Room)
		}
		if d.Room >= 100 { // the simulation counts no further
			room += "+"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Group, d.From, orDash(d.To), d.Kind, room)
		if d.Kind == eviction.DestinationDisruptedAgain || d.Kind == eviction.DestinationNoRoom {
			warned++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if warned > 0 {
		fmt.Fprintf(w, "%d group(s) would be disrupted again or find no room: see the findings below.\n", warned)
	}
	return nil
}

// writeDowntimes prints the downtime of every group the rollout
// disrupted, domain by domain.
func writeDowntimes(w io.Writer, domains []eviction.RolloutDomain) error {
	var rows []eviction.GroupDowntime
	for _, d := range domains {
		rows = append(rows, d.Groups...)
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nGroup downtime (first eviction until healthy again, wherever it runs):")
	tw := newTable(w)
	fmt.Fprintln(tw, "GROUP\tFROM\tTO\tDOWNTIME")
	for _, g := range rows {
		down := FormatDuration(g.Downtime.Duration())
		if g.Healthy == nil {
			down = "not healthy yet"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Group, g.From, orDash(g.To), down)
	}
	return tw.Flush()
}

// WriteTable writes whether the rollout runs (from its Lease), how many
// domains are done and its ETA, a row per domain, and what holds up each
// domain in progress. Times are shown relative to the status's Time.
func (r RolloutStatusReport) WriteTable(w io.Writer, o TableOptions) error {
	st := r.Status
	if st == nil {
		return missing("RolloutStatusReport", "status")
	}
	now := st.Time
	ago := func(t time.Time) string { return FormatDuration(now.Sub(t)) + " ago" }
	fmt.Fprintf(w, "Rollout %s: %s\n", st.ID, lockLine(st, r.NoLock, ago, o))
	fmt.Fprintf(w, "%d of %s done", st.Done, plural(len(st.Domains), "domain", "domains"))
	if e := st.ETA; e != nil {
		fmt.Fprintf(w, "; ETA %s (%s), %s a domain over the last %s", e.UTC().Format(time.RFC3339), inOrAgo(e.Sub(now)),
			FormatDuration(st.ETAPerDomain.Duration()), plural(st.ETASamples+1, "domain", "domains"))
	}
	fmt.Fprintln(w, ".")
	tw := newTable(w)
	fmt.Fprintln(tw, "\nDOMAIN\tSTATE\tSTAGE\tSINCE\tNODES\tCORDONED\tUPGRADED\tPODS\tDOWN")
	for _, p := range st.Domains {
		since := "-"
		switch {
		case p.Since != nil:
			since = ago(*p.Since)
		case p.NotBefore != nil:
			since = "<" + ago(*p.NotBefore)
		}
		var down []string
		for _, g := range p.Down {
			down = append(down, g.ID.String())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", p.Domain, p.State, orDash(string(p.Stage)), since, p.Nodes, p.Cordoned, p.Upgraded, p.Pods, joinOrDash(down))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if notes := statusNotes(st); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	return nil
}

// statusNotes says what holds up each domain: the workloads on it rolling
// out their own update, and for a domain in progress the budgets blocking
// its drain, its groups down, its budgets not caught up, and where the
// rollout stopped.
func statusNotes(st *eviction.RolloutStatus) []string {
	var notes []string
	for _, p := range st.Domains {
		for _, u := range p.Updating {
			notes = append(notes, fmt.Sprintf("%s: waits for %s (the rollout does not cordon a domain while a workload on it rolls out its own update: it deletes groups through no budget)", p.Domain, u))
		}
		if p.Stage == "" {
			continue
		}
		for _, b := range p.Blockers {
			notes = append(notes, fmt.Sprintf("%s: blocked by PodDisruptionBudget %s/%s (%s; phase 1 needs %d)", p.Domain, b.Namespace, b.PDB, b.BudgetCounts, b.Needed))
		}
		for _, g := range p.Down {
			notes = append(notes, fmt.Sprintf("%s: group %s: %s", p.Domain, g.ID, g.Message))
		}
		for _, b := range p.Budgets {
			notes = append(notes, fmt.Sprintf("%s: PodDisruptionBudget %s/%s: %s", p.Domain, b.Namespace, b.Name, b.Message))
		}
		if p.State == eviction.StateStopped {
			notes = append(notes, fmt.Sprintf("%s: the rollout stopped here (%s); run the same rollout command again to resume (rollout ID %s)", p.Domain, p.Stage, st.ID))
		}
	}
	return notes
}

// lockLine says whether the rollout runs, from its Lease.
func lockLine(st *eviction.RolloutStatus, noLock bool, ago func(time.Time) string, o TableOptions) string {
	switch {
	case noLock:
		return fmt.Sprintf("whether it runs is unknown (%s: its Lease is not read)", o.setting("eviction.RolloutOptions.NoLock"))
	case st.LockName == "":
		return fmt.Sprintf("no Lease found (the rollout is not running, or runs without a lock or with another %s)", o.setting("eviction.RolloutOptions.LockNamespace"))
	}
	lease := "Lease " + st.LockNamespace + "/" + st.LockName
	renewed := "never renewed"
	if st.LockRenewedAt != nil {
		renewed = "renewed " + ago(*st.LockRenewedAt)
	}
	switch {
	case st.Running:
		return fmt.Sprintf("running; %s held by %s, %s", lease, st.LockHolder, renewed)
	case st.LockHolder == "":
		return fmt.Sprintf("not running; %s released, %s", lease, renewed)
	}
	return fmt.Sprintf("not running; %s of %s expired, %s (it holds %s)", lease, st.LockHolder, renewed, FormatDuration(st.LockDuration.Duration()))
}

// inOrAgo says when a time is, from a duration to it.
func inOrAgo(d time.Duration) string {
	if d < 0 {
		return FormatDuration(-d) + " overdue"
	}
	return "in " + FormatDuration(d)
}
