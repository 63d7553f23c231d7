package readiness

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// CheckFunc checks one member. It returns nil when the member is healthy. It
// must return by the context's deadline; a check that does not is abandoned
// at the deadline and not started again until it returns.
type CheckFunc func(ctx context.Context) error

// Member is one pod (or process) of a group, with the check that tells
// whether it is healthy.
type Member struct {
	// Name identifies the member in the /readyz output and in the path
	// /readyz/<Name>. It must be unique within the group, start with a
	// letter or digit and contain only letters, digits, '.', '_' and '-'
	// (at most 253 characters).
	Name string
	// Check checks the member.
	Check CheckFunc
}

// maxNameLength is the longest member name: a DNS subdomain's limit, enough
// for a pod's host name.
const maxNameLength = 253

// ConfigError reports a configuration that cannot work: a bad member, a bad
// option, a bad URL. It says which field is wrong and what to do.
type ConfigError struct {
	// Field names the setting, e.g. `member "w-1"` or "Options.TTL".
	Field string
	// Problem says what is wrong and how to fix it.
	Problem string
}

// Error describes the problem.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("readiness: invalid %s: %s", e.Field, e.Problem)
}

// validateName returns a *ConfigError if name cannot be a member name.
func validateName(name string) error {
	field := fmt.Sprintf("member name %q", name)
	switch {
	case name == "":
		return &ConfigError{Field: "member name", Problem: "empty; give every member a name, e.g. the pod's host name"}
	case len(name) > maxNameLength:
		return &ConfigError{Field: field, Problem: fmt.Sprintf("longer than %d characters", maxNameLength)}
	case !isAlphanumeric(name[0]):
		return &ConfigError{Field: field, Problem: "must start with a letter or a digit"}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlphanumeric(c) && c != '.' && c != '_' && c != '-' {
			return &ConfigError{Field: field, Problem: fmt.Sprintf("character %q not allowed; use letters, digits, '.', '_' and '-'", c)}
		}
	}
	return nil
}

func isAlphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// ParseMember parses a member given as NAME=URL, as on the command line of
// "udrain serve-readiness --member". An http:// or https:// URL gets an
// [HTTPCheck] (with opts), a tcp://HOST:PORT URL a [TCPCheck].
func ParseMember(spec string, opts ...HTTPOption) (Member, error) {
	name, target, ok := strings.Cut(spec, "=")
	if !ok {
		return Member{}, &ConfigError{Field: fmt.Sprintf("member %q", spec), Problem: "want NAME=URL, e.g. worker-1=http://worker-1.group.ns:8000/health or worker-1=tcp://worker-1.group.ns:8000"}
	}
	if err := validateName(name); err != nil {
		return Member{}, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return Member{}, &ConfigError{Field: fmt.Sprintf("URL of member %q", name), Problem: err.Error()}
	}
	if u.Scheme == "tcp" {
		if u.Path != "" || u.RawQuery != "" || u.User != nil {
			return Member{}, &ConfigError{Field: fmt.Sprintf("URL of member %q", name), Problem: "a tcp:// URL is only tcp://HOST:PORT"}
		}
		if err := validateHostPort(u.Host); err != nil {
			return Member{}, &ConfigError{Field: fmt.Sprintf("URL of member %q", name), Problem: err.Error()}
		}
		return Member{Name: name, Check: TCPCheck(u.Host)}, nil
	}
	if _, err := parseHTTPURL(target); err != nil {
		return Member{}, &ConfigError{Field: fmt.Sprintf("URL of member %q", name), Problem: err.Error() + "; use http://, https:// or tcp://"}
	}
	return Member{Name: name, Check: HTTPCheck(target, opts...)}, nil
}
