package app

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release, set at build time with
// -ldflags "-X github.com/udrain/udrain/cmd/udrain/app.version=v0.1.0".
// Without it, the module version from the build info is used ("(devel)"
// for a build from a checkout).
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newVersionCommand(o *options) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			v := Version{TypeMeta: typeMeta(KindVersion), Version: buildVersion(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			return out.print(o.streams.Out, v, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "udrain %s (%s, %s)\n", v.Version, v.GoVersion, v.Platform)
				return err
			})
		},
	}
	out.add(cmd)
	return cmd
}
