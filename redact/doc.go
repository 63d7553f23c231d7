// Package redact keeps the credentials a URL may carry out of everything
// udrain prints: errors, log lines, tables, JSON and HTTP answers.
//
// A URL can carry secrets in three places: its user info
// (https://user:password@host/), the values of query parameters whose names
// look like credentials (?token=..., ?pw=..., ?X-Amz-Signature=...), and its
// fragment (#access_token=..., as OAuth implicit flows return it). [URL]
// renders a URL with all three replaced by [Mask]; [Secrets] collects the
// secret parts of URLs (and any other values, such as header values) and
// scrubs them from text that was not built from the redacted URL, such as an
// error message from net/http.
//
// Both work on the text, not on a parse: a URL that net/url rejects or
// misreads (a password with an unescaped '/', '?', '#' or '@', a bad port)
// is redacted at least as much as a valid one. When the text does not tell
// where the user info ends (an '@' after a '?' or '#'), everything after the
// scheme is hidden.
//
// It is a package of its own because both waiting for a server (package
// bootstrap) and checking a group's members (package readiness) print URLs
// that users give them, and the command line echoes them back: one rule,
// written once, applies to all of them. Package readiness uses the standard
// library only, so the rule cannot live in bootstrap, which brings
// Kubernetes libraries along; this package uses the standard library only.
//
// It is not an access-control mechanism and does not find secrets in paths
// (https://hooks.example/T0/B0/secret): keep credentials in headers or
// files when you can.
package redact
