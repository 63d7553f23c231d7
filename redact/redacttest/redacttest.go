// Package redacttest builds URLs that carry a marker secret in each place
// package redact must hide it, for the fuzz tests of every package that
// prints URLs (redact, bootstrap, readiness, the command line). A test
// builds a URL with [MarkedURL] from fuzzed text, hands it to the code under test
// and checks with [Leaks] that the marker appears in none of its outputs.
package redacttest

import (
	"strings"
	"testing"
)

// Marker is the secret the tests look for. It starts with a letter that is
// not a hex digit, so that a fuzzed '%' before it cannot decode it away.
const Marker = "QzMarkerS3cret"

// Position is where a URL carries the marker.
type Position uint8

const (
	// Password: in the user info's password.
	Password Position = iota
	// User: in the user info's user name.
	User
	// Query: in the value of a query parameter whose name contains a
	// credential word.
	Query
	// Fragment: in the fragment.
	Fragment
	positions
)

// secretKeys are the parameter names the Query position uses, by the
// length of the fuzzed key. The issue that asked for package redact found
// ?pw= and ?passphrase= printed in clear.
var secretKeys = [...]string{"token", "pw", "passphrase", "password", "secret", "api_key", "X-Amz-Signature", "access_token", "Credential", "AUTH"}

// MarkedURL returns a URL of scheme to hostPort, with path (a fuzzed path loses
// '?', '#' and '@'), carrying Marker at position p (taken modulo the
// number of positions) between before and after. In the Query position,
// key prefixes a credential word to name the parameter. Characters that
// would move the marker out of its position are dropped: '&', ';' and '#'
// from a query value, and '=', '&', ';' and '#' from its key.
func MarkedURL(scheme, hostPort, path string, p Position, key, before, after string) string {
	path = drop(path, "?#@")
	switch p % positions {
	case Password:
		return scheme + "://user:" + before + Marker + after + "@" + hostPort + path
	case User:
		return scheme + "://" + before + Marker + after + ":pw@" + hostPort + path
	case Query:
		name := drop(key, "=&;#") + secretKeys[len(key)%len(secretKeys)]
		return scheme + "://" + hostPort + path + "?a=1&" + name + "=" + drop(before, "&;#") + Marker + drop(after, "&;#") + "&b=2"
	default:
		return scheme + "://" + hostPort + path + "#" + before + Marker + after
	}
}

func drop(s, chars string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(chars, r) {
			return -1
		}
		return r
	}, s)
}

// Seed is one set of arguments of [MarkedURL] after the scheme, host and path.
type Seed struct {
	Position           Position
	Key, Before, After string
}

// Seeds are the cases found printed in clear before package redact: ?pw=,
// ?passphrase=, a #access_token= fragment, and passwords with an unescaped
// '/', '#', '?' or '@', plus one of each position.
func Seeds() []Seed {
	return []Seed{
		{Password, "", "", ""},
		{User, "", "", ""},
		{Query, "", "", ""},
		{Fragment, "", "", ""},
		{Query, "x", "", ""},  // ?pw=
		{Query, "xx", "", ""}, // ?passphrase=
		{Fragment, "", "access_token=", "&token_type=bearer"},
		{Password, "", "pa/ss", ""},
		{Password, "", "pa", "/ss"},
		{Password, "", "pa#ss", ""},
		{Password, "", "pa?ss", ""},
		{Password, "", "pa@ss", ""},
		{Password, "", "1", "/x"}, // net/url reads host "user", port 1
		{User, "", "%", "%zz"},    // invalid escapes
		{Query, "%7", "%", "%2"},
		{Fragment, "", "a@b?c#", ""},
		{Password, "", " \x00", "\n"}, // control characters
	}
}

// AddSeeds adds Seeds to f, for a fuzz function taking (position uint8, key,
// before, after string).
func AddSeeds(f *testing.F) {
	for _, s := range Seeds() {
		f.Add(uint8(s.Position), s.Key, s.Before, s.After)
	}
}

// Leaks returns the texts that contain Marker.
func Leaks(texts ...string) []string {
	var out []string
	for _, t := range texts {
		if strings.Contains(t, Marker) {
			out = append(out, t)
		}
	}
	return out
}
