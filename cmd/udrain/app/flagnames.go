package app

import (
	"cmp"
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
	"eviction.RolloutOptions.Domains":                         "--domains",
	"eviction.RolloutOptions.RecoveryTimeout":                 "--recovery-timeout",
	"eviction.RolloutOptions.GPUCheck.Grace":                  "--gpu-check-grace",
	"eviction.RolloutOptions.Lock.Namespace":                  "--lock-namespace",
	"eviction.RolloutOptions.ID":                              "--id",
	"eviction.DrainOptions.ID":                                "--id",
	"eviction.RolloutOptions.Steering":                        "--steering",
	"eviction.RolloutOptions.Order":                           "--order",
	"RolloutOptions.Lock.Namespace":                           "--lock-namespace",
	"RolloutOptions.RecoveryTimeout":                          "--recovery-timeout",
	"RolloutOptions.GPUCheck.Grace":                           "--gpu-check-grace",
	"RolloutOptions.GPUCheck":                                 "--gpu-check-grace (or --skip-gpu-check)",
	"RolloutOptions.Order":                                    "--order",
	"RolloutOptions.Steering":                                 "--steering",
	"RolloutOptions.Domains":                                  "--domains",
	// eviction's Reader (domains, audit, wait-healthy, rollout status)
	"eviction.ReadOptions.ConnectTimeout":  "--timeout",
	"eviction.ReadOptions.DomainLabel":     "--domain-label",
	"eviction.ReadOptions.Namespace":       "--namespace",
	"eviction.Reader.Health(domains)":      "DOMAIN",
	"eviction.Reader.WaitHealthy(domains)": "DOMAIN",
	"eviction.Reader.RolloutStatus(id)":    "ID",
	// The library calls its hints name, as commands.
	"Drainer.Uncordon":                         "'udrain uncordon DOMAIN'",
	"Drainer.Rollout or Drainer.Drain with ID": "'udrain rollout' or 'udrain drain' with --id",
	"Drainer.Health":                           "'udrain wait-healthy'",
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

// inFlags replaces the qualified settings named in text by their flags.
// Longer names go first, so that one that starts another is replaced
// whole.
var inFlags = func() *strings.Replacer {
	fields := make([]string, 0, len(fieldFlags))
	for f := range fieldFlags {
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(fields))
	for _, f := range fields {
		pairs = append(pairs, f, fieldFlags[f])
	}
	return strings.NewReplacer(pairs...)
}()

// inFlagTerms rewrites a configuration error of a library (a
// *udrain.ConfigError, or a *readiness.EnvError) as a usage error in terms
// of flags; other errors pass through.
func inFlagTerms(err error) error {
	var config *udrain.ConfigError
	var env *readiness.EnvError
	switch {
	case errors.As(err, &config):
		return &UsageError{Err: errors.New(inFlags.Replace(err.Error()))}
	case errors.As(err, &env):
		return &UsageError{Err: err}
	}
	return err
}

// flagTermsError is an error whose message names flags instead of the
// library settings it names; it unwraps to the error.
type flagTermsError struct{ err error }

func (e *flagTermsError) Error() string { return inFlags.Replace(e.err.Error()) }
func (e *flagTermsError) Unwrap() error { return e.err }

// flagTermsSink is a log sink that names flags where the libraries' log
// lines name their settings (a hint's "bootstrap.Options.CAFile").
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
	s.LogSink.Info(level, inFlags.Replace(msg), inFlagValues(kv)...)
}

func (s flagTermsSink) Error(err error, msg string, kv ...any) {
	if err != nil {
		err = &flagTermsError{err: err}
	}
	s.LogSink.Error(err, inFlags.Replace(msg), inFlagValues(kv)...)
}

func (s flagTermsSink) WithValues(kv ...any) logr.LogSink {
	return flagTermsSink{s.LogSink.WithValues(inFlagValues(kv)...)}
}

func (s flagTermsSink) WithName(name string) logr.LogSink {
	return flagTermsSink{s.LogSink.WithName(name)}
}

// inFlagValues rewrites the strings and errors among key/value pairs.
func inFlagValues(kv []any) []any {
	out := slices.Clone(kv)
	for i, v := range out {
		switch v := v.(type) {
		case string:
			out[i] = inFlags.Replace(v)
		case error:
			out[i] = &flagTermsError{err: v}
		}
	}
	return out
}
