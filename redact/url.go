package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Mask replaces every secret, as in net/url.URL.Redacted.
const Mask = "xxxxx"

// secretKeyWords are the substrings of a query or fragment parameter's name
// (compared in lower case) that mark its value as a credential. Keep the
// list in IsSecretKey's documentation in step.
var secretKeyWords = [...]string{
	"pass", "pw", "secret", "token", "key", "auth", "sig", "cred",
	"session", "jwt", "bearer", "code", "otp", "private", "cookie", "ticket",
}

// IsSecretKey reports whether a query parameter called key carries a
// secret: its name, in lower case, contains one of "pass", "pw", "secret",
// "token", "key", "auth", "sig", "cred", "session", "jwt", "bearer",
// "code", "otp", "private", "cookie" or "ticket". So password, passwd,
// passphrase, pw, pwd, access_token, api_key, apikey, authorization,
// X-Amz-Signature, X-Amz-Credential, sig, client_secret and code all
// count. The list errs on the side of hiding: a parameter called "monkey"
// is hidden too.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretKeyWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// URL returns raw with every secret replaced by [Mask]: the whole user info
// (a bare user name can be a token), the value of every query parameter for
// which [IsSecretKey] holds or whose value looks like a token (20 or more
// characters of a token alphabet mixing upper case, lower case and digits,
// or 32 or more hex digits), and the fragment. Everything else is kept as
// written, so the result still tells which server and path were meant. raw
// need not be a valid URL; a string without a scheme is read as one whose
// scheme is missing (user:password@host:80 becomes xxxxx@host:80).
func URL(raw string) string {
	var b strings.Builder
	for _, p := range split(raw) {
		if p.secret {
			b.WriteString(Mask)
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// piece is a run of a URL's text, secret or not.
type piece struct {
	text   string
	secret bool
	// userInfo marks the user info, whose user name and password are
	// secrets on their own too.
	userInfo bool
}

// split cuts raw into pieces whose concatenation is raw; the secret ones are
// what URL hides and Secrets.AddURL collects.
func split(raw string) []piece {
	var out []piece
	rest := raw
	if i := strings.Index(raw, "://"); i >= 0 {
		out = append(out, piece{text: raw[:i+3]})
		rest = raw[i+3:]
	}
	// The user info ends at the last '@': a password may hold an unescaped
	// '/', ':' or '@' (net/url then misreads the host). If a '?' or '#'
	// comes before it, the '@' may as well sit in a query value or the
	// fragment, so what follows it may be secret too: hide it all.
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if strings.ContainsAny(rest[:i], "?#") {
			return append(out, piece{text: rest, secret: true, userInfo: true})
		}
		out = append(out, piece{text: rest[:i], secret: true, userInfo: true}, piece{text: "@"})
		rest = rest[i+1:]
	}
	var fragment string
	hasFragment := false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, fragment, hasFragment = rest[:i], rest[i+1:], true
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		out = append(out, piece{text: rest[:i+1]})
		out = append(out, splitQuery(rest[i+1:])...)
	} else if rest != "" {
		out = append(out, piece{text: rest})
	}
	if hasFragment {
		out = append(out, piece{text: "#"})
		if fragment != "" {
			out = append(out, piece{text: fragment, secret: true})
		}
	}
	return out
}

// splitQuery cuts a raw query into parameters at '&' and at ';' (which
// some servers also take as a separator), and marks the secret values.
func splitQuery(query string) []piece {
	var out []piece
	for query != "" {
		param := query
		sep := ""
		if i := strings.IndexAny(query, "&;"); i >= 0 {
			param, sep, query = query[:i], query[i:i+1], query[i+1:]
		} else {
			query = ""
		}
		key, value, hasValue := strings.Cut(param, "=")
		switch {
		case !hasValue:
			// A lone word can be a token (?AbC...): judge it as a value.
			out = append(out, piece{text: param, secret: looksLikeToken(param) || looksLikeToken(unescape(param))})
		case value == "":
			out = append(out, piece{text: param})
		default:
			secret := IsSecretKey(key) || IsSecretKey(unescape(key)) || looksLikeToken(value) || looksLikeToken(unescape(value))
			out = append(out, piece{text: key + "="}, piece{text: value, secret: secret})
		}
		if sep != "" {
			out = append(out, piece{text: sep})
		}
	}
	return out
}

// unescape decodes s as a query component, or returns it as is if it is
// not valid.
func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// looksLikeToken reports a value of at least 20 characters from a token
// alphabet (base64, base64url, JWT) that mixes upper case, lower case and
// digits, or a hex string of at least 32 digits. Names such as
// "gpustack-worker-gpu-node-07" do not qualify.
func looksLikeToken(v string) bool {
	if len(v) < 20 {
		return false
	}
	var upper, lower, digit, nonHex bool
	for _, r := range v {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
			nonHex = nonHex || r > 'F'
		case r >= 'a' && r <= 'z':
			lower = true
			nonHex = nonHex || r > 'f'
		case r >= '0' && r <= '9':
			digit = true
		case strings.ContainsRune("-_.~+/=%", r):
			nonHex = true
		default:
			return false
		}
	}
	return (upper && lower && digit) || (!nonHex && len(v) >= 32)
}

// Parse is url.Parse, except that its error never quotes a secret of raw:
// url.Parse quotes the whole input, and its reasons can quote a piece of a
// password that it misread as a port ("invalid port \":hunter\" after
// host"). The error of Parse is a *url.Error whose URL is [URL] of raw and
// whose reason is url.Parse's reason for the redacted URL, or, if only raw
// fails, a reason naming the likely cause: a user info that is not escaped.
//
// Parse also refuses, with that reason, a URL that url.Parse reads without
// error but with an '@' after the host's end (a '/', '?' or '#'): [URL]
// takes all before that '@' for user info and hides it, while url.Parse
// takes the user name for the host and the password's start for its port
// (http://user:99999/pw@host/, https://user#pw@host/). The host and port of
// such a parse can be secrets, and callers print them (in an error, a DNS
// failure, a dial). An '@' in a path, query or fragment must be written
// %40.
func Parse(raw string) (*url.URL, error) {
	redacted := URL(raw)
	reason := errors.New("the user info is not escaped: write a '/', '?', '#' or '@' in a user name or password as %2F, %3F, %23 or %40")
	u, err := url.Parse(raw)
	if err == nil {
		if misreadUserInfo(raw) {
			return nil, &url.Error{Op: "parse", URL: redacted, Err: errors.New("the user info is not escaped, or an '@' follows the host: write a '/', '?', '#' or '@' in a user name or password as %2F, %3F, %23 or %40, and an '@' in a path, query or fragment as %40")}
		}
		return u, nil
	}
	if _, rerr := url.Parse(redacted); rerr != nil {
		var ue *url.Error
		if errors.As(rerr, &ue) {
			reason = ue.Err
		} else {
			reason = rerr
		}
	}
	return nil, &url.Error{Op: "parse", URL: redacted, Err: reason}
}

// misreadUserInfo reports whether raw has an '@' after the end of the
// host as url.Parse reads it (the first '/', '?' or '#' after the scheme):
// [URL] then hides, as user info, what url.Parse takes for the host.
func misreadUserInfo(raw string) bool {
	rest := raw
	if i := strings.Index(raw, "://"); i >= 0 {
		rest = raw[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	end := strings.IndexAny(rest, "/?#")
	return at >= 0 && end >= 0 && end < at
}
