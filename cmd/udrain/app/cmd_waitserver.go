package app

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/bootstrap"
	"github.com/udrain/udrain/report"
)

func newWaitServerCommand(o *options) *cobra.Command {
	var out outputFlag
	var (
		opts         bootstrap.Options
		headerFiles  []string
		bodyContains string
	)
	cmd := &cobra.Command{
		Use:   "wait-server URL",
		Short: "Wait until a server answers (for init containers)",
		Long: `Wait until URL answers: an http:// or https:// URL a 2xx (or a --status code)
with a body containing --body-contains, a tcp://HOST:PORT URL a connection.
Attempts back off exponentially (250ms doubling to 2s, jittered), each
bounded by --attempt-timeout. Why the server is not reachable yet (DNS name
not found, connection refused, HTTP 503, TLS, timeout) is logged to stderr
when it changes.

Made for init containers, instead of a shell loop around curl with a fixed
sleep. Credentials (in the URL's user info, secret query values and
fragment; in header files) never reach the logs or the output.

Exit codes: 0 reachable, 1 not reachable before --timeout (with the class of
the last failure), 2 bad URL or flags, 130 interrupted.`,
		Example: `  # In an init container: wait up to 10 minutes for the server's health endpoint
  udrain wait-server http://gpustack-server.gpustack.svc/healthz --timeout 10m

  # A TLS endpoint with a private CA and a bearer token
  udrain wait-server https://api.example.svc:8443/readyz --ca-file /etc/ca/ca.crt \
      --bearer-token-file /var/run/secrets/kubernetes.io/serviceaccount/token

  # Only a port
  udrain wait-server tcp://redis.cache.svc:6379 --timeout 2m`,
		Args: exactArgs(1, "one URL (http://, https:// or tcp://)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstError(o.refuseClusterFlags(cmd), out.validate()); err != nil {
				return err
			}
			var err error
			if opts.HeaderFiles, err = bootstrap.ParseHeaderFiles(headerFiles); err != nil {
				return inFlagTerms(err)
			}
			if bodyContains != "" {
				opts.CheckBody = bootstrap.BodyContains(bodyContains)
			}
			res, err := bootstrap.WaitForServer(cmd.Context(), args[0], opts)
			if _, ok := errors.AsType[*udrain.ConfigError](err); ok {
				return inFlagTerms(err)
			}
			r := report.NewWaitServerResult(res, err, flagOf)
			r.Error = errorInfo(err)
			if perr := out.print(o.streams.Out, r); perr != nil {
				return perr
			}
			if err != nil {
				// Its hint names the library's options: name the flags.
				return &reportedError{err: err, summary: describe(err)}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&opts.Timeout, "timeout", 0, "How long to wait before giving up (exit code 1); zero means infinite")
	fs.DurationVar(&opts.AttemptTimeout, "attempt-timeout", bootstrap.DefaultAttemptTimeout, "Bound of one attempt (DNS, connect, TLS, request and body)")
	fs.IntVar(&opts.MaxAttempts, "max-attempts", 0, "Give up after this many attempts; zero means no limit")
	fs.IntSliceVar(&opts.StatusCodes, "status", nil, "HTTP status codes that count as ready (repeatable or comma-separated); default any 2xx")
	fs.StringVar(&bodyContains, "body-contains", "", "Also require the response body to contain this text (e.g. ok)")
	fs.StringArrayVar(&headerFiles, "header-file", nil, "NAME=PATH: send header NAME with the value read from PATH (repeatable); values are never logged")
	fs.StringVar(&opts.BearerTokenFile, "bearer-token-file", "", "Send Authorization: Bearer with the token read from this file (e.g. a projected service account token)")
	fs.StringVar(&opts.CAFile, "ca-file", "", "PEM bundle of the CAs that may sign the server certificate (https); default the system roots")
	fs.StringVar(&opts.ServerName, "server-name", "", "Name the server certificate must be valid for (https); default the URL's host")
	fs.StringVar(&opts.ClientCertFile, "client-cert", "", "PEM client certificate (https; with --client-key)")
	fs.StringVar(&opts.ClientKeyFile, "client-key", "", "PEM client key (https; with --client-cert)")
	out.add(cmd)
	return cmd
}
