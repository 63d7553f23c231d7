// Package bootstrap waits until a server is reachable before a program
// starts talking to it: the worker-registration problem.
//
// A worker started together with its server (a GPUStack worker and its
// server, a Ray worker and its head) fails to register at first: the
// Service's DNS record does not exist yet ("Name or service not known"), then
// nothing listens ("Connection refused"), then the server answers 503 while
// it initialises. The usual fix, a shell loop around curl with a fixed
// "sleep 5", notices recovery late, says nothing useful while it waits and
// never gives up. WaitForServer replaces it, in a program or, through
// "udrain wait-server URL --timeout 10m", in an init container:
//
//   - targets are http://, https:// or tcp:// URLs; an HTTP target is ready on
//     a 2xx (or the codes in Options.StatusCodes) and an optional body check,
//     a TCP target when a connection completes;
//   - attempts are spaced by a k8s.io/apimachinery wait.Backoff (exponential,
//     jittered, capped; DefaultBackoff), each bounded by a per-attempt
//     timeout, the whole bounded by the context, Options.Timeout and
//     Options.MaxAttempts;
//   - every failure gets a FailureClass (DNS not found, DNS temporary,
//     refused, timeout, three TLS classes, HTTP status, body, other); the
//     returned *WaitError carries the last class, the attempt count and the
//     elapsed time, for errors.As;
//   - it logs through the logger in its context (and, with none, not at
//     all: a library prints nothing on its own) on the first failure, on every
//     change of class, every Options.LogEvery attempts and once on success,
//     and reports every attempt to Options.OnAttempt; credentials in the URL
//     (user info, secret query values, the fragment: the rule of package
//     redact) and header values never reach a log line, an error or a
//     result.
//   - bad targets and options are refused before any attempt with a
//     *udrain.ConfigError whose Field names the setting
//     ("bootstrap.Options.CAFile", or "bootstrap.WaitForServer(target)").
//
// It is not a health checker for a running server (use a readiness probe, or
// the readiness package for groups), and it does not retry the caller's own
// requests once the server is up: it answers "is it reachable now?" and gets
// out of the way. It does not follow redirects, and reads files (CA bundle,
// client certificate, header values) once, when the wait starts.
package bootstrap
