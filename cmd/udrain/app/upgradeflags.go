package app

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/redact"
	"github.com/udrain/udrain/upgrade"
)

// upgradeFlags pick the rollout's upgrade step: a shell command, a Job
// template, a node label handshake or a webhook; at most one.
type upgradeFlags struct {
	command string

	jobTemplate string

	nodeLabel      string
	doneLabel      string
	doneAnnotation string
	doneCondition  string

	webhook        string
	webhookHeaders []string

	timeout time.Duration

	// steps are the library's options of the flags, made by validate.
	steps upgrade.Options
	// templateText is the template file's content, for the rollout ID.
	templateText string
}

func (f *upgradeFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.command, "upgrade-command", "", `Shell command run once per drained domain (sh -c), with UDRAIN_DOMAIN and UDRAIN_NODES set; needs sh in PATH. None of the --upgrade-* steps: drain, uncordon and recover only`)
	fs.StringVar(&f.jobTemplate, "upgrade-job-template", "", "File with a batch/v1 Job: per drained domain, one copy per node (bound by nodeName, with UDRAIN_NODE, UDRAIN_DOMAIN, UDRAIN_NODES and UDRAIN_ROLLOUT_ID set) must succeed; in the template's namespace, else --lock-namespace's")
	fs.StringVar(&f.nodeLabel, "upgrade-node-label", "", "KEY=VALUE: label each node of a drained domain with it and wait until each reports done (--upgrade-done-label, --upgrade-done-annotation or --upgrade-done-condition)")
	fs.StringVar(&f.doneLabel, "upgrade-done-label", "", "KEY=VALUE: the node label that an agent sets when the upgrade asked for by --upgrade-node-label is done")
	fs.StringVar(&f.doneAnnotation, "upgrade-done-annotation", "", "KEY=VALUE: the node annotation that an agent sets when the upgrade asked for by --upgrade-node-label is done")
	fs.StringVar(&f.doneCondition, "upgrade-done-condition", "", "TYPE[=STATUS]: the node condition (status True by default) that shows the upgrade asked for by --upgrade-node-label is done")
	fs.StringVar(&f.webhook, "upgrade-webhook", "", `URL: POST {"rolloutID","domain","nodes"} as JSON per drained domain and wait for a 2xx answer (retried on errors, 408, 429 and 5xx)`)
	fs.StringArrayVar(&f.webhookHeaders, "upgrade-webhook-header", nil, `"Name: value" header sent to --upgrade-webhook (repeatable); values are masked in every message`)
	fs.DurationVar(&f.timeout, "upgrade-timeout", 0, "How long each domain's --upgrade-job-template or --upgrade-node-label step may take (zero: no limit); for --upgrade-webhook, each attempt's limit (zero: 5m)")
}

// validate maps the flags to the library's step options, before
// anything is done: it reads the Job template and parses the labels and
// headers. What the library checks, it leaves to Options.Validate.
func (f *upgradeFlags) validate(lockNamespace string) error {
	done := 0
	for _, v := range []string{f.doneLabel, f.doneAnnotation, f.doneCondition} {
		if v != "" {
			done++
		}
	}
	switch {
	case f.nodeLabel == "" && done > 0:
		return usageErrorf("--upgrade-done-label, --upgrade-done-annotation and --upgrade-done-condition go with --upgrade-node-label")
	case f.nodeLabel != "" && done != 1:
		return usageErrorf("--upgrade-node-label needs exactly one of --upgrade-done-label, --upgrade-done-annotation and --upgrade-done-condition (%d given)", done)
	case f.webhook == "" && len(f.webhookHeaders) > 0:
		return usageErrorf("--upgrade-webhook-header goes with --upgrade-webhook")
	case f.timeout != 0 && f.jobTemplate == "" && f.nodeLabel == "" && f.webhook == "":
		return usageErrorf("--upgrade-timeout applies to --upgrade-job-template, --upgrade-node-label and --upgrade-webhook only")
	}
	var err error
	if f.command != "" {
		f.steps.Command = &upgrade.CommandOptions{Command: f.command}
	}
	if f.jobTemplate != "" {
		data, err := os.ReadFile(f.jobTemplate)
		if err != nil {
			return usageErrorf("--upgrade-job-template: %v", err)
		}
		f.templateText = string(data)
		t, err := upgrade.ParseJobTemplate(data)
		if err != nil {
			return inFlagTerms(err)
		}
		if t.Namespace == "" {
			t.Namespace = lockNamespace
		}
		f.steps.Job = &upgrade.JobOptions{Template: t, Timeout: f.timeout}
	}
	if f.nodeLabel != "" {
		l := &upgrade.NodeLabelOptions{Timeout: f.timeout}
		if l.Key, l.Value, err = upgrade.ParseLabel(f.nodeLabel); err == nil {
			l.Done, err = f.signal()
		}
		if err != nil {
			return inFlagTerms(err)
		}
		f.steps.NodeLabel = l
	}
	if f.webhook != "" {
		h, err := upgrade.ParseHeader(f.webhookHeaders)
		if err != nil {
			return inFlagTerms(err)
		}
		f.steps.Webhook = &upgrade.WebhookOptions{URL: f.webhook, Header: h, AttemptTimeout: f.timeout}
	}
	return nil
}

// signal parses the done flag given; its errors name that flag.
func (f *upgradeFlags) signal() (upgrade.Signal, error) {
	kind, flag, text := upgrade.SignalCondition, "--upgrade-done-condition", f.doneCondition
	switch {
	case f.doneLabel != "":
		kind, flag, text = upgrade.SignalLabel, "--upgrade-done-label", f.doneLabel
	case f.doneAnnotation != "":
		kind, flag, text = upgrade.SignalAnnotation, "--upgrade-done-annotation", f.doneAnnotation
	}
	s, err := upgrade.ParseSignal(kind, text)
	if ce, ok := errors.AsType[*udrain.ConfigError](err); ok {
		return s, usageErrorf("invalid %s: %s", flag, ce.Problem)
	}
	return s, err
}

// options are the library's step options of the flags, with the
// rollout's ID and domain label, and the command's environment, shell
// lookup and output.
func (f *upgradeFlags) options(o *options, id, label string, output func(domain string) io.Writer) upgrade.Options {
	s := f.steps
	if c := s.Command; c != nil {
		c.RolloutID, c.DomainLabel, c.Env, c.LookPath, c.Output = id, label, o.cfg.Environ, o.cfg.LookPath, output
	}
	if s.Job != nil {
		s.Job.RolloutID = id
	}
	if s.Webhook != nil {
		s.Webhook.RolloutID = id
	}
	return s
}

// step is what the default rollout ID hashes besides the domain label,
// and the step's name for the rollout's report. The ID hashes the command
// as it was before the other steps existed, so that old IDs stay the
// same, else the step's flag and its setting; the name is "" for the
// command (reported on its own) and for none.
func (f *upgradeFlags) step() (idInput, name string) {
	switch {
	case f.jobTemplate != "":
		return "--upgrade-job-template\x00" + f.templateText, "job template " + f.jobTemplate
	case f.nodeLabel != "":
		done := f.steps.NodeLabel.Done.String()
		return "--upgrade-node-label\x00" + f.nodeLabel + "\x00" + done, "node label " + f.nodeLabel + " until " + done
	case f.webhook != "":
		return "--upgrade-webhook\x00" + f.webhook, "webhook " + redact.URL(f.webhook)
	}
	return f.command, ""
}
