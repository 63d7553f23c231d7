package app

import (
	"runtime/debug"

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
// Each one left empty is taken from the binary's build info instead
// (report.NewVersion): the module version ("v0.1.0" after `go install
// ...@v0.1.0`), and the VCS revision and time that `go build` records in a
// checkout.
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

// thisBuild is the Version report of this binary.
func thisBuild() report.Version {
	bi, _ := debug.ReadBuildInfo()
	return report.NewVersion(version, commit, buildDate, bi)
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
