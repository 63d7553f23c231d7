package readiness

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/udrain/udrain"
)

// The environment variables LeaderWorkerSet sets in every container of a
// group.
const (
	// EnvLeaderAddress is the leader's DNS name,
	// <leader-name>.<subdomain>.<namespace>.
	EnvLeaderAddress = "LWS_LEADER_ADDRESS"
	// EnvGroupSize is the number of pods in the group, the leader included.
	EnvGroupSize = "LWS_GROUP_SIZE"
	// EnvWorkerIndex is the pod's index in its group; the leader's is 0.
	EnvWorkerIndex = "LWS_WORKER_INDEX"
)

// MaxGroupSize is the largest LWS_GROUP_SIZE that [MembersFromLWSEnv]
// accepts, so that a wrong value cannot make it build millions of members.
const MaxGroupSize = 4096

// LWSOptions says how to check the members of a LeaderWorkerSet group.
type LWSOptions struct {
	// Port is the port every member serves its health on. Required.
	Port int
	// Scheme is "http" (the default), "https", or "tcp" to only connect.
	Scheme string
	// Path is the HTTP path of the members' health; "" means "/health" (as
	// vLLM and SGLang serve it). Not used with Scheme "tcp".
	Path string
	// ExcludeLeader leaves the leader out, for when the leader's own health
	// is covered by another probe. By default the leader is a member too.
	ExcludeLeader bool
	// HTTPOptions are passed to every [HTTPCheck].
	HTTPOptions []HTTPOption
}

// EnvError reports a missing or malformed environment variable.
type EnvError struct {
	// Name is the variable's name.
	Name string
	// Value is its value; empty if it is missing.
	Value string
	// Problem says what is wrong and what to do.
	Problem string
}

// Error describes the problem.
func (e *EnvError) Error() string {
	return fmt.Sprintf("readiness: environment variable %s=%q: %s", e.Name, e.Value, e.Problem)
}

// MembersFromLWSEnv returns the members of the LeaderWorkerSet group this
// process runs in, from the variables LeaderWorkerSet sets (see
// [EnvLeaderAddress]), read through lookup (nil: [os.LookupEnv], the
// process's own environment, as in a real pod). The
// leader, <leader-name>.<subdomain>.<namespace>, is named <leader-name>; the
// worker i (1 <= i < LWS_GROUP_SIZE), <leader-name>-<i>.<subdomain>.<namespace>,
// is named <leader-name>-<i>. It must run in the leader (LWS_WORKER_INDEX 0):
// only the leader's readiness stands for its group.
func MembersFromLWSEnv(lookup func(string) (string, bool), opts LWSOptions) ([]Member, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	scheme := opts.Scheme
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" && scheme != "tcp" {
		return nil, &udrain.ConfigError{Field: "readiness.LWSOptions.Scheme", Problem: fmt.Sprintf("%q: want http, https or tcp", opts.Scheme)}
	}
	if opts.Port < 1 || opts.Port > 65535 {
		return nil, &udrain.ConfigError{Field: "readiness.LWSOptions.Port", Problem: fmt.Sprintf("%d: set it to the port the members serve their health on (1 to 65535)", opts.Port)}
	}
	path := opts.Path
	if path == "" {
		path = "/health"
	}
	if scheme != "tcp" && !strings.HasPrefix(path, "/") {
		return nil, &udrain.ConfigError{Field: "readiness.LWSOptions.Path", Problem: fmt.Sprintf("%q: want an absolute path such as /health", opts.Path)}
	}

	leaderName, domain, err := parseLeaderAddress(lookup)
	if err != nil {
		return nil, err
	}
	size, err := lookupInt(lookup, EnvGroupSize, 1, MaxGroupSize)
	if err != nil {
		return nil, err
	}
	index, err := lookupInt(lookup, EnvWorkerIndex, 0, size-1)
	if err != nil {
		return nil, err
	}
	if index != 0 {
		value, _ := lookup(EnvWorkerIndex)
		return nil, &EnvError{Name: EnvWorkerIndex, Value: value, Problem: "this pod is a worker; serve group readiness in the leader only (index 0), e.g. in the leaderTemplate"}
	}
	if lastName := fmt.Sprintf("%s-%d", leaderName, size-1); size > 1 && len(lastName) > 63 {
		value, _ := lookup(EnvLeaderAddress)
		return nil, &EnvError{Name: EnvLeaderAddress, Value: value, Problem: fmt.Sprintf("worker host name %q would be longer than 63 characters", lastName)}
	}

	first := 0
	if opts.ExcludeLeader {
		first = 1
	}
	members := make([]Member, 0, size-first)
	for i := first; i < size; i++ {
		name := leaderName
		if i > 0 {
			name = fmt.Sprintf("%s-%d", leaderName, i)
		}
		hostPort := net.JoinHostPort(name+"."+domain, strconv.Itoa(opts.Port))
		check := TCPCheck(hostPort)
		if scheme != "tcp" {
			check = HTTPCheck(scheme+"://"+hostPort+path, opts.HTTPOptions...)
		}
		members = append(members, Member{Name: name, Check: check})
	}
	if len(members) == 0 {
		return nil, &udrain.ConfigError{Field: "readiness.LWSOptions.ExcludeLeader", Problem: "the group has only its leader (LWS_GROUP_SIZE=1), so no member is left to check; do not exclude the leader"}
	}
	return members, nil
}

// parseLeaderAddress splits LWS_LEADER_ADDRESS into the leader's name and
// the rest of its DNS name.
func parseLeaderAddress(lookup func(string) (string, bool)) (leaderName, domain string, err error) {
	value, ok := lookup(EnvLeaderAddress)
	if !ok || value == "" {
		return "", "", &EnvError{Name: EnvLeaderAddress, Problem: "not set; LeaderWorkerSet sets it in every pod of a group: run this in a LeaderWorkerSet pod, or list the members explicitly"}
	}
	labels := strings.Split(value, ".")
	if len(labels) < 3 {
		return "", "", &EnvError{Name: EnvLeaderAddress, Value: value, Problem: "want <leader-name>.<subdomain>.<namespace>"}
	}
	for _, label := range labels {
		if !isDNSLabel(label) {
			return "", "", &EnvError{Name: EnvLeaderAddress, Value: value, Problem: fmt.Sprintf("%q is not a DNS label (lower-case letters, digits and '-', at most 63); want <leader-name>.<subdomain>.<namespace>", label)}
		}
	}
	return labels[0], strings.Join(labels[1:], "."), nil
}

func isDNSLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// lookupInt reads a whole number in [lo, hi] from the environment.
func lookupInt(lookup func(string) (string, bool), name string, lo, hi int) (int, error) {
	value, ok := lookup(name)
	if !ok || value == "" {
		problem := "not set; LeaderWorkerSet sets it in every pod of a group: run this in a LeaderWorkerSet pod, or list the members explicitly"
		if name == EnvWorkerIndex {
			problem = "not set; older LeaderWorkerSet versions do not set it: upgrade, or set it from the label leaderworkerset.sigs.k8s.io/worker-index with the downward API"
		}
		return 0, &EnvError{Name: name, Problem: problem}
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < lo || n > hi {
		return 0, &EnvError{Name: name, Value: value, Problem: fmt.Sprintf("want a whole number from %d to %d", lo, hi)}
	}
	return n, nil
}
