package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// upgradeKillDelay is how long an interrupted upgrade command gets between
// SIGTERM and SIGKILL.
const upgradeKillDelay = 10 * time.Second

// DefaultRolloutID is the ID of a rollout run without --id: "udrain-" and
// the first 10 hex digits of the SHA-256 of the domain label, a NUL byte,
// and the upgrade command. Running the same command again resumes the
// rollout; another upgrade command starts a new one.
func DefaultRolloutID(domainLabel, upgradeCommand string) string {
	sum := sha256.Sum256([]byte(domainLabel + "\x00" + upgradeCommand))
	return "udrain-" + hex.EncodeToString(sum[:])[:10]
}

// UpgradeCommandError reports an upgrade command that failed.
type UpgradeCommandError struct {
	Domain string
	// ExitCode is the command's exit status; -1 if it did not exit (a
	// signal, or it could not start).
	ExitCode int
	Err      error
}

func (e *UpgradeCommandError) Error() string {
	if e.ExitCode >= 0 {
		return fmt.Sprintf("the upgrade command for domain %s exited with status %d (its output is above, prefixed [upgrade %s]); the domain stays cordoned and drained: fix the cause and run the same command again", e.Domain, e.ExitCode, e.Domain)
	}
	return fmt.Sprintf("the upgrade command for domain %s failed: %v; the domain stays cordoned and drained: fix the cause and run the same command again", e.Domain, e.Err)
}

// Unwrap returns the cause.
func (e *UpgradeCommandError) Unwrap() error { return e.Err }

// shellUpgrade runs the upgrade command once per domain through sh -c.
type shellUpgrade struct {
	command string
	id      string
	label   string
	environ func() []string
	prog    progress
}

// run is the eviction.UpgradeFunc: the command gets UDRAIN_DOMAIN,
// UDRAIN_NODES (comma-separated), UDRAIN_ROLLOUT_ID and
// UDRAIN_DOMAIN_LABEL, no stdin, and its output goes to stderr, each line
// prefixed "[upgrade DOMAIN] ". On cancel its process group gets SIGTERM;
// after upgradeKillDelay the shell is killed and its output closed.
func (u *shellUpgrade) run(ctx context.Context, dom topology.Domain) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", u.command)
	cmd.Env = append(u.environ(),
		"UDRAIN_DOMAIN="+dom.Name,
		"UDRAIN_NODES="+strings.Join(dom.Nodes, ","),
		"UDRAIN_ROLLOUT_ID="+u.id,
		"UDRAIN_DOMAIN_LABEL="+u.label,
	)
	out := u.prog.output("[upgrade " + dom.Name + "] ")
	cmd.Stdout, cmd.Stderr = out, out
	inProcessGroup(cmd)
	cmd.Cancel = func() error { return terminate(cmd) }
	cmd.WaitDelay = upgradeKillDelay
	err := cmd.Run()
	out.Close()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("upgrade command for domain %s stopped: %w", dom.Name, ctx.Err())
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return &UpgradeCommandError{Domain: dom.Name, ExitCode: exitErr.ExitCode(), Err: err}
	}
	return &UpgradeCommandError{Domain: dom.Name, ExitCode: -1, Err: err}
}

func newRolloutCommand(o *options) *cobra.Command {
	var df domainFlags
	var dr drainFlags
	var out outputFlag
	var (
		upgradeCommand  string
		id              string
		domains         []string
		recoveryTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Drain, upgrade, uncordon and recover every domain in turn, resumably",
		Long: `Upgrade every domain in turn (natural order, or --domains): drain it as
"drain" does, run --upgrade-command, mark its nodes upgraded (annotation
udrain.dev/upgraded-by=ID), uncordon what udrain cordoned, and wait until the
domain's groups are whole and Ready again and their budgets have caught up,
before the next domain. The placement contract is audited first, over the
domains to upgrade.

The upgrade command runs once per domain through "sh -c", while the domain
is cordoned and empty, with UDRAIN_DOMAIN (the domain), UDRAIN_NODES (its
nodes, comma-separated), UDRAIN_ROLLOUT_ID and UDRAIN_DOMAIN_LABEL in its
environment and no stdin; its output goes to stderr, each line prefixed
"[upgrade DOMAIN] ". A non-zero exit stops the rollout with exit code 1,
leaving that domain cordoned.

Resuming: a rollout is named by its ID. Without --id, the ID is "udrain-"
and the first 10 hex digits of the SHA-256 of the domain label and the
upgrade command, so running the same command again resumes (domains marked
upgraded by that ID are skipped, a half-drained domain is planned again from
what is left) and a new upgrade command starts a new rollout. The ID is
printed at the start.

--timeout bounds each domain's drain (exit code 3 when a PDB blocks past it);
--recovery-timeout bounds each wait for recovery (exit code 1).`,
		Args: exactArgs(0, "no arguments (name domains with --domains)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(df.validate(), dr.validate(), out.validate()); err != nil {
				return err
			}
			if recoveryTimeout < 0 {
				return usageErrorf("--recovery-timeout=%s: use 0 (no limit) or a positive duration", recoveryTimeout)
			}
			if id == "" {
				id = DefaultRolloutID(df.label, upgradeCommand)
			} else if errs := validation.IsValidLabelValue(id); len(errs) > 0 {
				return usageErrorf("--id=%q: %s (it is stored as an annotation value and shown in logs; use letters, digits, '-', '_' and '.')", id, strings.Join(errs, "; "))
			}
			client, err := o.client()
			if err != nil {
				return err
			}
			// The domains, to show progress and the domains not reached;
			// Rollout checks them again.
			s, err := listCluster(cmd.Context(), client, listWhat{})
			if err != nil {
				return err
			}
			layout, err := topology.BuildLayout(s.Nodes, df.layoutOptions())
			if err != nil {
				return err
			}
			names := domains
			if len(names) == 0 {
				names = layout.Names()
			}
			for _, n := range names {
				if _, err := layout.Domain(n); err != nil {
					return err
				}
			}

			prog := o.newProgress(o.streams.ErrOut)
			prog.setTotal(len(names))
			d, err := o.newDrainer(client, &df, &dr, prog.event)
			if err != nil {
				prog.close()
				return err
			}
			prog.note("RolloutID", "", fmt.Sprintf("rollout %s over %s (%s); if it stops, run the same command again to resume (or pass --id %s)",
				id, plural(len(names), "domain", "domains"), strings.Join(names, ", "), id))
			ro := eviction.RolloutOptions{ID: id, Domains: domains, RecoveryTimeout: recoveryTimeout}
			if upgradeCommand != "" {
				u := &shellUpgrade{command: upgradeCommand, id: id, label: df.label, environ: o.cfg.Environ, prog: prog}
				ro.Upgrade = u.run
			}
			res, err := d.Rollout(cmd.Context(), ro)
			prog.close()
			if res == nil {
				return err
			}
			report := buildRolloutResult(res, names, upgradeCommand, df.label, dr.dryRunName(), err)
			if perr := out.print(o.streams.Out, report, func(w io.Writer) error { return writeRolloutTable(w, report) }); perr != nil {
				return perr
			}
			return err
		},
	}
	df.add(cmd)
	dr.add(cmd, "The length of time to wait for each domain's drain before giving up, zero means infinite")
	out.add(cmd)
	cmd.Flags().StringVar(&upgradeCommand, "upgrade-command", "", `Shell command run once per drained domain (sh -c), with UDRAIN_DOMAIN and UDRAIN_NODES set; none: drain, uncordon and recover only`)
	cmd.Flags().StringVar(&id, "id", "", "Rollout ID; the same ID resumes a rollout. Default: udrain- and a hash of --domain-label and --upgrade-command")
	cmd.Flags().StringSliceVar(&domains, "domains", nil, "Domains to upgrade, in this order (comma-separated); default every domain in natural order")
	cmd.Flags().DurationVar(&recoveryTimeout, "recovery-timeout", 0, "How long to wait for each domain's groups to be healthy again after its upgrade; zero means infinite")
	return cmd
}

func buildRolloutResult(res *eviction.RolloutResult, names []string, upgradeCommand, label, dryRun string, err error) RolloutResult {
	r := RolloutResult{
		TypeMeta: typeMeta(KindRolloutResult), ID: res.ID, UpgradeCommand: upgradeCommand, LabelKey: label, DryRun: dryRun,
		Completed: err == nil, Started: res.Started.UTC(), Domains: []RolloutDomain{}, Findings: findings(res.Findings),
		Error: errorInfo(err),
	}
	reached := map[string]bool{}
	done, skipped := 0, 0
	for i, d := range res.Domains {
		rd := RolloutDomain{Domain: d.Domain, Status: "Done", Blocks: []Block{}, GroupsDisrupted: []string{},
			UpgradeSeconds: seconds(d.Upgrade), RecoverySeconds: seconds(d.Recovery), DurationSeconds: seconds(d.Duration)}
		if d.Drain != nil {
			rd.Phase1, rd.Phase2 = phase(d.Drain.Phase1), phase(d.Drain.Phase2)
			rd.Blocks = blocks(d.Drain.Blocks)
			rd.GroupsDisrupted = orEmpty(d.Drain.GroupsDisrupted)
		}
		switch {
		case err != nil && i == len(res.Domains)-1 && ExitCode(err) == ExitInterrupted:
			rd.Status = "Interrupted"
		case err != nil && i == len(res.Domains)-1:
			rd.Status = "Failed"
		case d.Skipped:
			rd.Status = "Skipped"
			skipped++
		case dryRun != "none":
			rd.Status = "DryRun"
			done++
		default:
			done++
		}
		reached[d.Domain] = true
		r.Domains = append(r.Domains, rd)
	}
	for _, n := range names {
		if !reached[n] {
			r.Domains = append(r.Domains, RolloutDomain{Domain: n, Status: "Pending", Blocks: []Block{}, GroupsDisrupted: []string{}})
		}
	}
	t := res.Totals()
	r.Summary = Summary{
		DomainsDone: done, DomainsSkipped: skipped, DomainsTotal: len(names),
		Phase1Evicted: t.Phase1Evicted, Phase2Evicted: t.Phase2Evicted, GroupsDisrupted: t.GroupsDisrupted,
		LongestBlock: longestBlock(res.LongestBlock()), DurationSeconds: seconds(res.Duration),
	}
	if dryRun != "none" {
		r.Summary.GroupsDisrupted = 0
	}
	return r
}

func writeRolloutTable(w io.Writer, r RolloutResult) error {
	what := "Rollout " + r.ID
	if r.UpgradeCommand != "" {
		what += fmt.Sprintf(" (upgrade command %q)", r.UpgradeCommand)
	}
	switch {
	case r.DryRun != "none":
		fmt.Fprintf(w, "%s: dry run (%s), nothing was changed.\n", what, r.DryRun)
	case r.Completed:
		fmt.Fprintf(w, "%s completed in %s.\n", what, human(secondsDuration(r.Summary.DurationSeconds)))
	case r.Error.Reason == reason(ExitInterrupted):
		fmt.Fprintf(w, "%s was interrupted after %s.\n", what, human(secondsDuration(r.Summary.DurationSeconds)))
	default:
		fmt.Fprintf(w, "%s stopped after %s: %s\n", what, human(secondsDuration(r.Summary.DurationSeconds)), r.Error.Message)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "\nDOMAIN\tSTATUS\tPHASE 1\tPHASE 2\tGROUPS\tLONGEST BLOCK\tUPGRADE\tRECOVERY\tDURATION")
	for _, d := range r.Domains {
		longest := "-"
		var best *Block
		for i := range d.Blocks {
			if best == nil || d.Blocks[i].DurationSeconds > best.DurationSeconds {
				best = &d.Blocks[i]
			}
		}
		if best != nil {
			longest = fmt.Sprintf("%s %s/%s", human(secondsDuration(best.DurationSeconds)), best.Namespace, best.PDB)
		}
		if d.Status == "Pending" || d.Status == "Skipped" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\n", d.Domain, d.Status)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%d\t%s\t%s\t%s\t%s\n", d.Domain, d.Status,
			d.Phase1.Evicted, d.Phase1.Pods, d.Phase2.Evicted, d.Phase2.Pods, len(d.GroupsDisrupted), longest,
			human(secondsDuration(d.UpgradeSeconds)), human(secondsDuration(d.RecoverySeconds)), human(secondsDuration(d.DurationSeconds)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeSummary(w, r.Summary, true)
	if len(r.Findings) > 0 {
		fmt.Fprintln(w, "\nContract findings before the rollout:")
		if err := writeFindings(w, r.Findings); err != nil {
			return err
		}
	}
	if !r.Completed && r.DryRun == "none" && r.Error.ExitCode != ExitUsage && r.Error.ExitCode != ExitContract {
		fmt.Fprintf(w, "\nTo resume, run the same command again (rollout ID %s).\n", r.ID)
	}
	return nil
}
