package readiness

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/redact"
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

// validateName returns a *udrain.ConfigError if name cannot be a member
// name. The name is quoted redacted: a URL given where a name belongs may
// carry credentials.
func validateName(name string) error {
	quoted := fmt.Sprintf("%q", redact.URL(name))
	switch {
	case name == "":
		return nameError("empty; give every member a name, e.g. the pod's host name")
	case len(name) > maxNameLength:
		return nameError("%s is longer than %d characters", quoted, maxNameLength)
	case !isAlphanumeric(name[0]):
		return nameError("%s must start with a letter or a digit", quoted)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlphanumeric(c) && c != '.' && c != '_' && c != '-' {
			return nameError("%s: character %q not allowed; use letters, digits, '.', '_' and '-'", quoted, c)
		}
	}
	return nil
}

func nameError(format string, args ...any) error {
	return &udrain.ConfigError{Field: "readiness.Member.Name", Problem: fmt.Sprintf(format, args...)}
}

func isAlphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// ParseMember parses a member given as NAME=URL, as on the command line of
// "udrain serve-readiness --member". An http:// or https:// URL gets an
// [HTTPCheck] (with opts), a tcp://HOST:PORT URL a [TCPCheck]. Its errors
// are *udrain.ConfigError about "readiness.ParseMember(spec)" (or the
// member's name) and quote the URL redacted (see package redact).
func ParseMember(spec string, opts ...HTTPOption) (Member, error) {
	name, target, ok := strings.Cut(spec, "=")
	if !ok {
		return Member{}, specError("%q: want NAME=URL, e.g. worker-1=http://worker-1.group.ns:8000/health or worker-1=tcp://worker-1.group.ns:8000", redact.URL(spec))
	}
	if err := validateName(name); err != nil {
		return Member{}, err
	}
	shown := redact.URL(target)
	u, err := parseURL(target)
	if err != nil {
		return Member{}, specError("member %q: %s: %v", name, shown, err)
	}
	if u.Scheme == "tcp" {
		if u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			return Member{}, specError("member %q: %s: a tcp:// URL is only tcp://HOST:PORT", name, shown)
		}
		if err := validateHostPort(u.Host); err != nil {
			return Member{}, specError("member %q: %s: %v", name, shown, err)
		}
		return Member{Name: name, Check: TCPCheck(u.Host)}, nil
	}
	if err := checkHTTPURL(u); err != nil {
		return Member{}, specError("member %q: %s: %v; use http://, https:// or tcp://", name, shown, err)
	}
	return Member{Name: name, Check: HTTPCheck(target, opts...)}, nil
}

func specError(format string, args ...any) error {
	return &udrain.ConfigError{Field: "readiness.ParseMember(spec)", Problem: fmt.Sprintf(format, args...)}
}

// MembersOptions say where a group's members come from, as a sidecar's
// configuration gives them: a list of NAME=URL, or the variables
// LeaderWorkerSet sets in the leader pod, one or the other; and the TLS
// settings of the members checked over https. [MembersOptions.Members]
// builds the list.
type MembersOptions struct {
	// Specs are the members as NAME=URL ([ParseMember]).
	Specs []string
	// LWS, when set, takes the members from LeaderWorkerSet's variables
	// instead ([MembersFromLWSEnv]).
	LWS *LWSOptions
	// LookupEnv reads those variables; nil means [os.LookupEnv], the
	// process's own environment (a test passes a map's lookup).
	LookupEnv func(string) (string, bool)
	// TLS configures the https members ([TLSOptions.Config]); set it only
	// when some member is checked over https.
	TLS TLSOptions
}

// Members returns the members that o gives, each https member with o.TLS.
// Giving none, giving both Specs and LWS, and TLS settings without an https
// member are *udrain.ConfigError, as are the errors of ParseMember,
// MembersFromLWSEnv and TLSOptions.Config; LeaderWorkerSet's variables
// missing or wrong are an *EnvError.
func (o MembersOptions) Members() ([]Member, error) {
	switch {
	case o.LWS != nil && len(o.Specs) > 0:
		return nil, &udrain.ConfigError{Field: "readiness.MembersOptions.Specs", Problem: "set together with the LeaderWorkerSet variables: take the members from one source, not both", See: []string{"readiness.MembersOptions.LWS"}}
	case o.LWS == nil && len(o.Specs) == 0:
		return nil, &udrain.ConfigError{Field: "readiness.MembersOptions.Specs", Problem: "no members: give them as NAME=URL, or take them from LeaderWorkerSet's variables in the leader pod", See: []string{"readiness.MembersOptions.LWS"}}
	}
	var opts []HTTPOption
	if o.TLS != (TLSOptions{}) {
		if field := o.TLS.firstSet(); !o.usesHTTPS() {
			return nil, &udrain.ConfigError{Field: "readiness.TLSOptions." + field, Problem: "the TLS settings are for https members, and no member is https: leave them out, or check the members over https"}
		}
		cfg, err := o.TLS.Config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithTLSConfig(cfg))
	}
	if o.LWS != nil {
		lws := *o.LWS
		lws.HTTPOptions = append(slices.Clip(lws.HTTPOptions), opts...)
		return MembersFromLWSEnv(o.LookupEnv, lws)
	}
	members := make([]Member, 0, len(o.Specs))
	for _, spec := range o.Specs {
		m, err := ParseMember(spec, opts...)
		if err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	return members, nil
}

// usesHTTPS reports whether some member is checked over https.
func (o MembersOptions) usesHTTPS() bool {
	if o.LWS != nil {
		return o.LWS.Scheme == "https"
	}
	for _, spec := range o.Specs {
		if _, target, ok := strings.Cut(spec, "="); ok && strings.HasPrefix(strings.ToLower(target), "https://") {
			return true
		}
	}
	return false
}

// firstSet names the first field of o that is set.
func (o TLSOptions) firstSet() string {
	switch {
	case o.CAFile != "":
		return "CAFile"
	case o.ServerName != "":
		return "ServerName"
	case o.ClientCertFile != "":
		return "ClientCertFile"
	}
	return "ClientKeyFile"
}
