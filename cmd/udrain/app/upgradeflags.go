package app

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
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

	// Read by validate.
	template *batchv1.Job
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

// chosen names the steps set, as flags.
func (f *upgradeFlags) chosen() []string {
	var out []string
	for _, c := range []struct {
		name string
		set  bool
	}{
		{"--upgrade-command", f.command != ""},
		{"--upgrade-job-template", f.jobTemplate != ""},
		{"--upgrade-node-label", f.nodeLabel != ""},
		{"--upgrade-webhook", f.webhook != ""},
	} {
		if c.set {
			out = append(out, c.name)
		}
	}
	return out
}

// validate checks the flags before anything is done; lookPath finds sh.
// It reads the Job template.
func (f *upgradeFlags) validate(lookPath func(string) (string, error)) error {
	steps := f.chosen()
	if len(steps) > 1 {
		return usageErrorf("%s: pick one upgrade step", strings.Join(steps, " and "))
	}
	done := 0
	for _, v := range []string{f.doneLabel, f.doneAnnotation, f.doneCondition} {
		if v != "" {
			done++
		}
	}
	if f.nodeLabel == "" && done > 0 {
		return usageErrorf("--upgrade-done-label, --upgrade-done-annotation and --upgrade-done-condition go with --upgrade-node-label")
	}
	if f.webhook == "" && len(f.webhookHeaders) > 0 {
		return usageErrorf("--upgrade-webhook-header goes with --upgrade-webhook")
	}
	if f.timeout < 0 {
		return usageErrorf("--upgrade-timeout=%s: use 0 (no limit) or a positive duration", f.timeout)
	}
	if f.timeout > 0 && (f.command != "" || len(steps) == 0) {
		return usageErrorf("--upgrade-timeout applies to --upgrade-job-template, --upgrade-node-label and --upgrade-webhook only")
	}
	switch {
	case f.command != "":
		if _, err := lookPath("sh"); err != nil {
			return usageErrorf("--upgrade-command runs through sh, and no sh was found in PATH (%v); nothing was drained. udrain's image has no shell: use --upgrade-job-template, --upgrade-node-label or --upgrade-webhook, or an image with sh", errors.Unwrap(err))
		}
	case f.jobTemplate != "":
		return f.readTemplate()
	case f.nodeLabel != "":
		if done != 1 {
			return usageErrorf("--upgrade-node-label needs exactly one of --upgrade-done-label, --upgrade-done-annotation and --upgrade-done-condition (%d given)", done)
		}
		if _, _, ok := strings.Cut(f.nodeLabel, "="); !ok {
			return usageErrorf("--upgrade-node-label=%q: write KEY=VALUE", f.nodeLabel)
		}
		if _, err := f.signal(); err != nil {
			return err
		}
	case f.webhook != "":
		if _, err := f.headers(); err != nil {
			return err
		}
	}
	return nil
}

func (f *upgradeFlags) readTemplate() error {
	data, err := os.ReadFile(f.jobTemplate)
	if err != nil {
		return usageErrorf("--upgrade-job-template: %v", err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		return usageErrorf("--upgrade-job-template=%s: not a Job: %v", f.jobTemplate, err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		return usageErrorf("--upgrade-job-template=%s: apiVersion %q, kind %q: want a batch/v1 Job", f.jobTemplate, job.APIVersion, job.Kind)
	}
	f.template = &job
	f.templateText = string(data)
	return nil
}

func (f *upgradeFlags) signal() (upgrade.Signal, error) {
	var s upgrade.Signal
	var flag, v string
	switch {
	case f.doneLabel != "":
		s.Kind, flag, v = upgrade.SignalLabel, "--upgrade-done-label", f.doneLabel
	case f.doneAnnotation != "":
		s.Kind, flag, v = upgrade.SignalAnnotation, "--upgrade-done-annotation", f.doneAnnotation
	default:
		s.Kind, flag, v = upgrade.SignalCondition, "--upgrade-done-condition", f.doneCondition
		s.Key, s.Value, _ = strings.Cut(v, "=")
		return s, nil
	}
	var ok bool
	if s.Key, s.Value, ok = strings.Cut(v, "="); !ok {
		return s, usageErrorf("%s=%q: write KEY=VALUE", flag, v)
	}
	return s, nil
}

func (f *upgradeFlags) headers() (http.Header, error) {
	h := http.Header{}
	for _, kv := range f.webhookHeaders {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(k) == "" {
			// Never echo the value: it may be a credential.
			return nil, usageErrorf("--upgrade-webhook-header: write \"Name: value\" (one without a colon was given)")
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

// idInput is what the default rollout ID hashes besides the domain label:
// the command as it was before the other steps existed, so that old IDs
// stay the same, else the step's flag and its setting.
func (f *upgradeFlags) idInput() string {
	switch {
	case f.jobTemplate != "":
		return "--upgrade-job-template\x00" + f.templateText
	case f.nodeLabel != "":
		s, _ := f.signal()
		return "--upgrade-node-label\x00" + f.nodeLabel + "\x00" + s.String()
	case f.webhook != "":
		return "--upgrade-webhook\x00" + f.webhook
	}
	return f.command
}

// describe names the step for the rollout's report; "" for the command
// (reported on its own) and for none.
func (f *upgradeFlags) describe() string {
	switch {
	case f.jobTemplate != "":
		return "job template " + f.jobTemplate
	case f.nodeLabel != "":
		s, _ := f.signal()
		return "node label " + f.nodeLabel + " until " + s.String()
	case f.webhook != "":
		return "webhook " + redact.URL(f.webhook)
	}
	return ""
}

// step builds the upgrade step the flags chose; nil for none. The
// library's ConfigErrors name Go fields: they become usage errors naming
// the flag.
func (f *upgradeFlags) step(client kubernetes.Interface, id, namespace string, shell *shellUpgrade) (eviction.UpgradeFunc, error) {
	var (
		step eviction.UpgradeFunc
		err  error
		flag string
	)
	switch {
	case f.command != "":
		return shell.run, nil
	case f.jobTemplate != "":
		flag = "--upgrade-job-template"
		t := f.template.DeepCopy()
		if t.Namespace == "" {
			t.Namespace = namespace
		}
		step, err = upgrade.Job(client, upgrade.JobOptions{Template: t, RolloutID: id, Timeout: f.timeout})
	case f.nodeLabel != "":
		flag = "--upgrade-node-label"
		k, v, _ := strings.Cut(f.nodeLabel, "=")
		s, _ := f.signal()
		step, err = upgrade.NodeLabel(client, upgrade.NodeLabelOptions{Key: k, Value: v, Done: s, Timeout: f.timeout})
	case f.webhook != "":
		flag = "--upgrade-webhook"
		h, _ := f.headers()
		step, err = upgrade.Webhook(upgrade.WebhookOptions{URL: f.webhook, Header: h, RolloutID: id, AttemptTimeout: f.timeout})
	default:
		return nil, nil
	}
	var ce *udrain.ConfigError
	if errors.As(err, &ce) {
		return nil, usageErrorf("%s: %s", flag, ce.Problem)
	}
	return step, err
}

// lookPath is exec.LookPath unless the Config gives another.
func (o *options) lookPath(file string) (string, error) {
	if o.cfg.LookPath != nil {
		return o.cfg.LookPath(file)
	}
	return exec.LookPath(file)
}
