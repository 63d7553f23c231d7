package app

import (
	"cmp"
	"errors"

	"github.com/go-logr/logr"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/topology"
)

// fieldFlags names, for each setting that the libraries' errors and hints
// name (qualified as in udrain.ConfigError.Field), what sets it on the
// command line: a flag, or an argument. Users of the command line see
// flags, users of the libraries Go fields.
var fieldFlags = map[string]string{
	// kubeclient (every command that talks to the API server)
	"kubeclient.Options.RequestTimeout": "--request-timeout",
	"kubeclient.Options.QPS":            "--kube-api-qps",
	"kubeclient.Options.Burst":          "--kube-api-burst",
	"kubeclient.Selection.Context":      "--context",
	"kubeclient.Selection.Cluster":      "--cluster",
	"kubeclient.Selection.User":         "--user",
	// readiness (serve-readiness)
	"readiness.LWSOptions.Port":             "--port",
	"readiness.LWSOptions.Scheme":           "--scheme",
	"readiness.LWSOptions.Path":             "--path",
	"readiness.LWSOptions.ExcludeLeader":    "--exclude-leader",
	"readiness.Options.MemberTimeout":       "--member-timeout",
	"readiness.Options.Timeout":             "--check-timeout",
	"readiness.Options.TTL":                 "--ttl",
	"readiness.Options.FailureThreshold":    "--failure-threshold",
	"readiness.ParseMember(spec)":           "--member",
	"readiness.MembersOptions.Specs":        "--member",
	"readiness.MembersOptions.LWS":          "--from-lws-env",
	"readiness.Member.Name":                 "--member",
	"readiness.HTTPCheck(rawURL)":           "--member",
	"readiness.TCPCheck(addr)":              "--member",
	"readiness.TLSOptions.CAFile":           "--ca-file",
	"readiness.TLSOptions.ServerName":       "--server-name",
	"readiness.TLSOptions.ClientCertFile":   "--client-cert",
	"readiness.TLSOptions.ClientKeyFile":    "--client-key",
	"readiness.ServeOptions.MaxConnections": "--max-connections",
	"readiness.ServeOptions.MaxHeaderBytes": "--max-header-bytes",
	// readiness/gate (readiness-gate-controller)
	"gate.Options.Selector":             "--selector",
	"gate.Options.Workers":              "--workers",
	"gate.Options.ResyncPeriod":         "--resync-period",
	"gate.Options.MaxSyncAge":           "--max-sync-age",
	"gate.Options.HistoryCheck":         "--history-check",
	"gate.Options.FalseRewriteInterval": "--false-rewrite-interval",
	"gate.Options.Namespace":            "--namespace",
	"gate.LeaderElection.Namespace":     "--lease-namespace",
	"gate.LeaderElection.Name":          "--lease-name",
	"gate.LeaderElection.Identity":      "--id",
	"gate.LeaderElection.LeaseDuration": "--lease-duration",
	"gate.LeaderElection.RenewDeadline": "--renew-deadline",
	"gate.LeaderElection.RetryPeriod":   "--retry-period",
	// bootstrap (wait-server)
	"bootstrap.WaitForServer(target)":   "URL",
	"bootstrap.Options.Timeout":         "--timeout",
	"bootstrap.Options.AttemptTimeout":  "--attempt-timeout",
	"bootstrap.Options.MaxAttempts":     "--max-attempts",
	"bootstrap.Options.StatusCodes":     "--status",
	"bootstrap.Options.CheckBody":       "--body-contains",
	"bootstrap.Options.HeaderFiles":     "--header-file",
	"bootstrap.Options.BearerTokenFile": "--bearer-token-file",
	"bootstrap.Options.CAFile":          "--ca-file",
	"bootstrap.Options.ServerName":      "--server-name",
	"bootstrap.Options.ClientCertFile":  "--client-cert",
	"bootstrap.Options.ClientKeyFile":   "--client-key",
	// eviction (plan, drain, rollout, uncordon, wait-healthy)
	"eviction.Options.Concurrency":                            "--concurrency",
	"eviction.Options.Helper.Timeout":                         "--timeout",
	"eviction.Options.Helper.PodSelector":                     "--pod-selector",
	"eviction.Options.Helper.SkipWaitForDeleteTimeoutSeconds": "--skip-wait-for-delete-timeout",
	"eviction.Options.Helper.ChunkSize":                       "--chunk-size",
	"eviction.Options.Helper.DryRunStrategy":                  "--dry-run",
	"eviction.Options.ConnectTimeout":                         "--timeout",
	"eviction.Options.DomainLabel":                            "--domain-label",
	"eviction.Options.Namespace":                              "--namespace",
	"eviction.Drainer.Plan(domain)":                           "DOMAIN",
	"eviction.Drainer.Drain(domain)":                          "DOMAIN",
	"eviction.Drainer.Uncordon(domain)":                       "DOMAIN",
	"eviction.Drainer.Health(domains)":                        "DOMAIN",
	"eviction.Drainer.WaitHealthy(domains)":                   "DOMAIN",
	"eviction.RolloutOptions.NoLock":                          "--no-lock",
	"eviction.RolloutOptions.StatusInterval":                  "--interval",
	"eviction.RolloutOptions.Domains":                         "--domains",
	"eviction.RolloutOptions.RecoveryTimeout":                 "--recovery-timeout",
	"eviction.RolloutOptions.WorkloadUpdateTimeout":           "--workload-update-timeout",
	"eviction.RolloutOptions.IgnoreWorkloadUpdates":           "--ignore-workload-updates",
	"eviction.RolloutOptions.GPUCheckGrace":                   "--gpu-check-grace",
	"eviction.RolloutOptions.LockNamespace":                   "--lock-namespace",
	"eviction.RolloutOptions.ID":                              "--id",
	"eviction.DrainOptions.ID":                                "--id",
	"eviction.RolloutOptions.Steering":                        "--steering",
	"eviction.RolloutOptions.Order":                           "--order",
	"eviction.RolloutOptions.Parallel":                        "--parallel",
	"eviction.RolloutOptions.InPlace":                         "--in-place",
	// upgrade (rollout's upgrade step)
	"upgrade.Options.Command":               "--upgrade-command",
	"upgrade.Options.Job":                   "--upgrade-job-template",
	"upgrade.Options.NodeLabel":             "--upgrade-node-label",
	"upgrade.Options.Webhook":               "--upgrade-webhook",
	"upgrade.CommandOptions.Command":        "--upgrade-command",
	"upgrade.JobOptions.Template":           "--upgrade-job-template",
	"upgrade.JobOptions.RolloutID":          "--id",
	"upgrade.JobOptions.Timeout":            "--upgrade-timeout",
	"upgrade.NodeLabelOptions.Key":          "--upgrade-node-label",
	"upgrade.NodeLabelOptions.Value":        "--upgrade-node-label",
	"upgrade.NodeLabelOptions.Done":         "--upgrade-done-label",
	"upgrade.NodeLabelOptions.Timeout":      "--upgrade-timeout",
	"upgrade.WebhookOptions.URL":            "--upgrade-webhook",
	"upgrade.WebhookOptions.Header":         "--upgrade-webhook-header",
	"upgrade.WebhookOptions.AttemptTimeout": "--upgrade-timeout",
}

// findingFlags names, for the findings whose remedy is a setting of the
// library, the flag (and value) that applies it on the command line: the
// finding's message names the setting as Go code does.
var findingFlags = map[topology.FindingCode]string{
	topology.FindingDisruptedAgain: "--steering " + string(eviction.SteerStrict),
}

// findingAdvice is what the command line adds to a finding's message:
// the flag of its remedy, if it has one.
func findingAdvice(code topology.FindingCode) string {
	if flag, ok := findingFlags[code]; ok {
		return " (on this command line: " + flag + ")"
	}
	return ""
}

// flagOf names a setting of the libraries (in udrain.ConfigError.Field's
// form) by the flag or argument that sets it on the command line, or ""
// when none does (the setting keeps its Go name).
func flagOf(setting string) string { return fieldFlags[setting] }

// describe is err's message with the settings its errors name as Go
// fields named by their flags.
func describe(err error) string { return udrain.DescribeError(err, flagOf) }

// inFlagTerms rewrites a configuration error of a library (a
// *udrain.ConfigError, or a *readiness.EnvError) as a usage error in terms
// of flags; other errors pass through.
func inFlagTerms(err error) error {
	var config *udrain.ConfigError
	var env *readiness.EnvError
	switch {
	case errors.As(err, &config):
		return &UsageError{Err: errors.New(describe(err))}
	case errors.As(err, &env):
		return &UsageError{Err: err}
	}
	return err
}

// statusFlags names the settings that rollout status takes otherwise
// than rollout does: the rollout's ID is its argument, not --id.
var statusFlags = map[string]string{"eviction.RolloutOptions.ID": "ID"}

// inStatusFlagTerms is inFlagTerms for rollout status.
func inStatusFlagTerms(err error) error {
	var config *udrain.ConfigError
	if errors.As(err, &config) {
		return &UsageError{Err: errors.New(udrain.DescribeError(err, func(setting string) string {
			return cmp.Or(statusFlags[setting], flagOf(setting))
		}))}
	}
	return inFlagTerms(err)
}

// inFlagTermsLogger returns logger with the settings its lines name
// (the libraries' errors, bootstrap's "setting" beside its hint) named by
// their flags.
func inFlagTermsLogger(logger logr.Logger) logr.Logger {
	return udrain.NamingLogger(logger, flagOf)
}
