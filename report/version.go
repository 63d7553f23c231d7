package report

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"time"
)

// NewVersion returns the Version report of the running binary: version,
// commit and buildDate as a release build stamps them (-ldflags -X), each
// one left empty taken from bi, the binary's build info
// (debug.ReadBuildInfo; nil when it has none): the module version ("v0.1.0"
// after "go install ...@v0.1.0", else "(devel)"), the VCS revision (with
// "-dirty" when the checkout had changes) and time that "go build" records
// in a checkout, or the commit and time a pseudo-version names. GoVersion
// and Platform are the running binary's.
func NewVersion(version, commit, buildDate string, bi *debug.BuildInfo) Version {
	v := Version{TypeMeta: NewTypeMeta(KindVersion), Version: version, Commit: commit, BuildDate: buildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if v.Version == "" {
			v.Version = "(devel)"
		}
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	var revision, vcsTime string
	modified := false
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			revision = kv.Value
		case "vcs.time":
			vcsTime = kv.Value
		case "vcs.modified":
			modified = kv.Value == "true"
		}
	}
	// A pseudo-version (go install of an untagged commit) names the commit
	// and its time, also after a pre-release or with +incompatible or
	// +dirty; a checkout's build info has the full revision.
	pseudoVersion := regexp.MustCompile(`[-.](\d{14})-([0-9a-f]{12})(\+.*)?$`)
	if m := pseudoVersion.FindStringSubmatch(bi.Main.Version); m != nil {
		if revision == "" {
			revision = m[2]
		}
		if vcsTime == "" {
			if t, err := time.Parse("20060102150405", m[1]); err == nil {
				vcsTime = t.UTC().Format(time.RFC3339)
			}
		}
	}
	if v.Commit == "" && revision != "" {
		v.Commit = revision
		if modified {
			v.Commit += "-dirty"
		}
	}
	if v.BuildDate == "" {
		v.BuildDate = vcsTime
	}
	return v
}
