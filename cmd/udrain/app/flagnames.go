package app

import (
	"errors"
	"slices"
	"strings"

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
	"eviction.Drainer.RolloutStatus(id)":                      "ID",
	"eviction.RolloutStatusOptions.Domains":                   "--domains",
	"eviction.RolloutStatusOptions.Order":                     "--order",
	"eviction.RolloutStatusOptions.LockNamespace":             "--lock-namespace",
	"eviction.RolloutStatusOptions.NoLock":                    "--no-lock",
	"eviction.RolloutOptions.Domains":                         "--domains",
	"eviction.RolloutOptions.RecoveryTimeout":                 "--recovery-timeout",
	"eviction.RolloutOptions.GPUCheck.Grace":                  "--gpu-check-grace",
	"eviction.RolloutOptions.Lock.Namespace":                  "--lock-namespace",
	"eviction.RolloutOptions.ID":                              "--id",
	"eviction.DrainOptions.ID":                                "--id",
	"eviction.RolloutOptions.Steering":                        "--steering",
	"eviction.RolloutOptions.Order":                           "--order",
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
	// eviction's Reader (domains, audit, wait-healthy, rollout status)
	"eviction.ReadOptions.ConnectTimeout":  "--timeout",
	"eviction.ReadOptions.DomainLabel":     "--domain-label",
	"eviction.ReadOptions.Namespace":       "--namespace",
	"eviction.Reader.Health(domains)":      "DOMAIN",
	"eviction.Reader.WaitHealthy(domains)": "DOMAIN",
	"eviction.Reader.RolloutStatus(id)":    "ID",
}

// findingFlags names, for the findings whose remedy is a setting of the
// library, the flag (and value) that applies it on the command line: the
// finding's message names the setting as Go code does.
var findingFlags = map[topology.FindingCode]string{
	eviction.FindingDisruptedAgain: "--steering " + string(eviction.SteerStrict),
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

// describer is an error of the libraries that names settings as fields
// (udrain.ConfigError, bootstrap.WaitError): Describe renders it with
// each setting named as the caller asks.
type describer interface {
	error
	Describe(name func(setting string) string) string
}

// describe is err's message with the settings its errors name as fields
// named by their flags: the part that an error of the libraries wrote
// (its Error) becomes its Describe(flagOf). Nothing else of the text is
// touched.
func describe(err error) string {
	msg := err.Error()
	var d describer
	if errors.As(err, &d) {
		msg = strings.Replace(msg, d.Error(), d.Describe(flagOf), 1)
	}
	return msg
}

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

// flagTermsError is an error described in terms of flags (describe); it
// unwraps to the error.
type flagTermsError struct{ err error }

func (e *flagTermsError) Error() string { return describe(e.err) }
func (e *flagTermsError) Unwrap() error { return e.err }

// flagTermsSink is a log sink that names flags where the libraries' log
// lines name a setting as a value of its own (bootstrap's "setting"
// beside its hint) and in the errors they log; messages and other values
// pass unchanged.
type flagTermsSink struct{ logr.LogSink }

// inFlagTermsLogger returns logger with its lines in terms of flags.
func inFlagTermsLogger(logger logr.Logger) logr.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	return logr.New(flagTermsSink{sink})
}

// Init tells the sink that lines reach it through one more frame.
func (s flagTermsSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.LogSink.Init(info)
}

// WithCallDepth passes the depth on, for helpers that log.
func (s flagTermsSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return flagTermsSink{cd.WithCallDepth(depth)}
	}
	return s
}

func (s flagTermsSink) Info(level int, msg string, kv ...any) {
	s.LogSink.Info(level, msg, inFlagValues(kv)...)
}

func (s flagTermsSink) Error(err error, msg string, kv ...any) {
	if err != nil {
		err = &flagTermsError{err: err}
	}
	s.LogSink.Error(err, msg, inFlagValues(kv)...)
}

func (s flagTermsSink) WithValues(kv ...any) logr.LogSink {
	return flagTermsSink{s.LogSink.WithValues(inFlagValues(kv)...)}
}

func (s flagTermsSink) WithName(name string) logr.LogSink {
	return flagTermsSink{s.LogSink.WithName(name)}
}

// settingKey is the key under which the libraries log the setting that
// fixes what a line reports.
const settingKey = "setting"

// inFlagValues names by its flag the value of a "setting" key, and
// describes the errors, among key/value pairs.
func inFlagValues(kv []any) []any {
	out := slices.Clone(kv)
	for i, v := range out {
		switch v := v.(type) {
		case string:
			if i%2 == 1 && out[i-1] == settingKey {
				out[i] = udrain.NameSetting(flagOf, v)
			}
		case error:
			out[i] = &flagTermsError{err: v}
		}
	}
	return out
}
