package app

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/report"
)

// The release stamps, set at build time by the release build
// (hack/release, `make image`) with
//
//	-ldflags "-X github.com/udrain/udrain/cmd/udrain/app.version=v0.1.0
//	          -X github.com/udrain/udrain/cmd/udrain/app.commit=<git commit>
//	          -X github.com/udrain/udrain/cmd/udrain/app.buildDate=<commit time, RFC 3339>"
//
// Each one left empty is taken from the binary's build info instead: the
// module version ("v0.1.0" after `go install ...@v0.1.0`), and the VCS
// revision and time that `go build` records in a checkout.
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

// stamps are the values given with -ldflags.
type stamps struct{ version, commit, buildDate string }

// pseudoVersion matches the time and commit of a Go pseudo-version
// (v0.0.0-20260101120000-abcdef123456, also after a pre-release or with
// +incompatible or +dirty).
var pseudoVersion = regexp.MustCompile(`[-.](\d{14})-([0-9a-f]{12})(\+.*)?$`)

// buildVersion is this binary's version, as "udrain version" prints it.
func buildVersion() string { return thisBuild().Version }

// thisBuild is the Version report of this binary.
func thisBuild() report.Version {
	bi, _ := debug.ReadBuildInfo()
	return versionReport(stamps{version: version, commit: commit, buildDate: buildDate}, bi)
}

// versionReport is the Version report of a binary: the stamps first, then
// the build info (nil when the binary has none).
func versionReport(s stamps, bi *debug.BuildInfo) report.Version {
	v := report.Version{TypeMeta: report.NewTypeMeta(report.KindVersion), Version: s.version, Commit: s.commit, BuildDate: s.buildDate,
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
	// and its time; a checkout's build info has the full revision.
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

func newVersionCommand(o *options) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `Print udrain's version, the commit it was built from and that commit's
time (the build date of a release), the Go version and the platform. A
release build stamps them; a binary from "go install" or "go build" takes
them from its build info ("" where it has none).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			return out.print(o.streams.Out, thisBuild())
		},
	}
	out.add(cmd)
	return cmd
}
