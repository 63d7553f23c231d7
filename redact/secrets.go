package redact

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// minSecretLen is the shortest text Secrets scrubs: shorter ones would
// garble messages if replaced everywhere (a password "ab" in every "tab").
// URL hides them in the URL itself whatever their length.
const minSecretLen = 4

// Secrets is a set of texts that must never be printed, and scrubs them from
// text. The zero value is an empty set. Add to it first, then share it:
// Scrub and Error may run concurrently, Add and AddURL may not.
type Secrets struct {
	values   []string
	replacer *strings.Replacer
}

// AddURL adds the secret parts of raw, as [URL] finds them, in every form
// an error message may quote them: as written, decoded, and escaped again
// the ways net/url renders a user info, a host, a path, a query value
// and a fragment; the user name and the password on their own; and the pieces
// between the characters that delimit the parts of a URL (":/?#@&;="),
// in case net/url read a secret as another part (a password as a port).
func (s *Secrets) AddURL(raw string) {
	var add []string
	for _, p := range split(raw) {
		if !p.secret {
			continue
		}
		parts := []string{p.text}
		if p.userInfo {
			user, password, _ := strings.Cut(p.text, ":")
			parts = append(parts, user, password)
		}
		parts = append(parts, strings.FieldsFunc(p.text, func(r rune) bool { return strings.ContainsRune(":/?#@&;=", r) })...)
		for _, part := range parts {
			add = append(add, renderings(part)...)
		}
	}
	s.Add(add...)
}

// renderings returns text as written, decoded, and encoded again as
// net/url encodes each part of a URL.
func renderings(text string) []string {
	out := []string{text}
	for _, plain := range []string{text, unescape(text), pathUnescape(text)} {
		out = append(out, plain,
			url.QueryEscape(plain), url.PathEscape(plain),
			url.User(plain).String(),
			strings.TrimPrefix((&url.URL{Host: plain}).String(), "//"),
			(&url.URL{Path: plain}).EscapedPath(),
			(&url.URL{Fragment: plain}).EscapedFragment())
	}
	return out
}

// pathUnescape decodes s as a path, user info or fragment, or returns it as
// is if it is not valid.
func pathUnescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// Add adds values, such as the values of credential headers. A value of the
// form "Bearer <token>" adds the token on its own too.
func (s *Secrets) Add(values ...string) {
	for _, v := range values {
		if _, tok, ok := strings.Cut(v, " "); ok {
			s.add(strings.TrimSpace(tok))
		}
		s.add(v)
	}
	// Longest first, so that a secret holding another is replaced whole.
	slices.SortFunc(s.values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(s.values))
	for _, v := range s.values {
		pairs = append(pairs, v, Mask)
	}
	s.replacer = strings.NewReplacer(pairs...)
}

// add adds v and v as Go quotes it (what %q prints between the quotes).
func (s *Secrets) add(v string) {
	quoted := strconv.Quote(v)
	for _, form := range []string{v, quoted[1 : len(quoted)-1]} {
		if len(form) >= minSecretLen && !slices.Contains(s.values, form) {
			s.values = append(s.values, form)
		}
	}
}

// Scrub returns text with every secret replaced by [Mask].
func (s *Secrets) Scrub(text string) string {
	if s == nil || s.replacer == nil {
		return text
	}
	return s.replacer.Replace(text)
}

// Error returns err with the secrets scrubbed from its message; nil for nil.
// It unwraps to err, except that a *url.Error at its top (what net/http
// returns, quoting the whole URL) is replaced by one with the URL
// redacted, so that errors.As callers do not find the secrets either.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	if ue, ok := err.(*url.Error); ok {
		err = &url.Error{Op: ue.Op, URL: URL(ue.URL), Err: ue.Err}
	}
	return &scrubbedError{err: err, secrets: s}
}

// scrubbedError is an error whose message has the secrets scrubbed.
type scrubbedError struct {
	err     error
	secrets *Secrets
}

func (e *scrubbedError) Error() string { return e.secrets.Scrub(e.err.Error()) }
func (e *scrubbedError) Unwrap() error { return e.err }
