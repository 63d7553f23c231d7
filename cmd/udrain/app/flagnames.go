package app

import (
	"errors"
	"strings"

	"github.com/udrain/udrain/bootstrap"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/readiness/gate"
)

// libraryFieldFlags names, for each option field that the libraries' errors
// mention, the flag that sets it, so that an error says what to change on
// the command line.
var libraryFieldFlags = strings.NewReplacer(
	// readiness
	"LWSOptions.Port", "--port", "LWSOptions.Scheme", "--scheme", "LWSOptions.Path", "--path",
	"Options.MemberTimeout", "--member-timeout", "Options.Timeout", "--check-timeout", "Options.TTL", "--ttl",
	"Options.FailureThreshold", "--failure-threshold",
	// readiness/gate
	"Options.Selector", "--selector", "Options.Workers", "--workers", "Options.ResyncPeriod", "--resync-period",
	"Options.Namespace", "--namespace", "LeaderElection.Namespace", "--lease-namespace", "LeaderElection.Name", "--lease-name",
	"LeaderElection.Identity", "--id", "LeaderElection.LeaseDuration", "--lease-duration",
	"LeaderElection.RenewDeadline", "--renew-deadline", "LeaderElection.RetryPeriod", "--retry-period",
	"RenewDeadline", "--renew-deadline", "RetryPeriod", "--retry-period",
	// bootstrap
	"AttemptTimeout", "--attempt-timeout", "MaxAttempts", "--max-attempts", "StatusCodes", "--status",
	"CheckBody", "--body-contains", "HeaderFiles", "--header-file", "BearerTokenFile", "--bearer-token-file",
	"CAFile", "--ca-file", "ServerName", "--server-name", "ClientCertFile/ClientKeyFile", "--client-cert/--client-key",
	"ClientCertFile and ClientKeyFile", "--client-cert and --client-key", "Timeout", "--timeout",
)

// inFlagTerms rewrites a configuration error of package readiness, gate
// or bootstrap in terms of flags, as a usage error; other errors pass
// through.
func inFlagTerms(err error) error {
	var (
		rc *readiness.ConfigError
		re *readiness.EnvError
		gc *gate.ConfigError
	)
	if errors.As(err, &rc) || errors.As(err, &gc) || errors.Is(err, bootstrap.ErrInvalidInput) {
		return &UsageError{Err: errors.New(libraryFieldFlags.Replace(err.Error()))}
	}
	if errors.As(err, &re) {
		return &UsageError{Err: err}
	}
	return err
}
